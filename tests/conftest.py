"""Fixtures for the cross-process tests under tests/: ``minidfs`` (a real MiniDFSCluster) and
``hf_bin`` (the hydrofeed binary); Spark's work directory kept clean."""

import importlib.util
import os
import shutil
from collections.abc import Iterator

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


def _spark_work_dir() -> str | None:
    """Where `local-cluster` executors write (`$SPARK_HOME/work`; a pip-installed PySpark is its
    own Spark home, inside the virtual environment)."""
    home = os.environ.get("SPARK_HOME")
    if not home:
        spec = importlib.util.find_spec("pyspark")
        if spec is None or spec.origin is None:
            return None
        home = os.path.dirname(spec.origin)
    return os.path.join(home, "work")


@pytest.fixture(autouse=True)
def spark_work_removed() -> Iterator[None]:
    """Removes what a test's `local-cluster` applications left in Spark's work directory (each
    executor's logs and fetched files, hundreds of MB over a test run, which nothing else
    removes); output a failing test needs is in its captured stderr."""
    work = _spark_work_dir()
    before = set(os.listdir(work)) if work and os.path.isdir(work) else set()
    yield
    if work and os.path.isdir(work):
        for name in set(os.listdir(work)) - before:
            shutil.rmtree(os.path.join(work, name), ignore_errors=True)
