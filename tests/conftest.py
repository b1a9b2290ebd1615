"""Fixtures for the cross-process tests under tests/: ``minidfs`` (a real MiniDFSCluster)."""

from minidfs import minidfs  # noqa: F401  (registers the session fixture)
