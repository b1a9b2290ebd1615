"""Fixtures for the cross-process tests under tests/: ``minidfs`` (a real MiniDFSCluster) and
``hf_bin`` (the hydrofeed binary)."""

import os
from pathlib import Path

import pytest

from minidfs import minidfs  # noqa: F401  (registers the session fixture)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def hf_bin() -> str:
    """``HYDROFEED_BIN``, else the release build (``make build``)."""
    path = os.environ.get("HYDROFEED_BIN") or str(ROOT / "target/release/hydrofeed")
    if not Path(path).exists():
        pytest.fail(f"no hydrofeed binary at {path}: run `make build` or set HYDROFEED_BIN")
    return path
