"""Fixtures for the cross-process tests under tests/: ``minidfs`` (a real MiniDFSCluster) and
``hf_bin`` (the hydrofeed binary)."""

import pytest

from minidfs import minidfs  # noqa: F401  (registers the session fixture)


@pytest.fixture(scope="session")
def hf_bin() -> str:
    """The binary the package itself runs: ``HYDROFEED_BIN``, else the environment's, else the
    checkout's build (``hydrofeed._proc.hydrofeed_bin``)."""
    from hydrofeed._proc import hydrofeed_bin

    try:
        return hydrofeed_bin()
    except FileNotFoundError as e:
        pytest.fail(str(e))
