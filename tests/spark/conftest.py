"""Spark fixtures: one local[2] SparkContext for the module-level tests, a guard that every test
leaves /dev/shm and the hydrofeed run directory as it found them."""

from __future__ import annotations

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYROOT = os.path.abspath(os.path.join(HERE, "..", "..", "python"))

# Executors' Python workers inherit these from the driver's environment.
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no default route here; TFoS's UDP trick fails
os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
os.environ["PYTHONPATH"] = os.pathsep.join([PYROOT, HERE] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
if PYROOT not in sys.path:
    sys.path.insert(0, PYROOT)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

pytest.importorskip("pyspark", reason="PySpark is not installed")


def _run_root() -> str:
    from hydrofeed.spark.node import default_run_root

    return default_run_root()


def _listing(path: str) -> set[str]:
    try:
        return set(os.listdir(path))
    except FileNotFoundError:
        return set()


@pytest.fixture(scope="session")
def sc():
    try:
        import hydrofeed  # noqa: F401
    except ImportError as e:
        pytest.fail(f"the hydrofeed package does not import ({e}); build it first: make develop-debug")
    from pyspark import SparkConf, SparkContext

    conf = (
        SparkConf()
        .setMaster("local[2]")
        .setAppName("hydrofeed-spark-tests")
        .set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "false")
        .set("spark.sql.shuffle.partitions", "2")
        .set("spark.driver.host", "127.0.0.1")
    )
    ctx = SparkContext(conf=conf)
    ctx.setLogLevel("ERROR")
    yield ctx
    ctx.stop()


@pytest.fixture(scope="session")
def spark(sc):
    from pyspark.sql import SparkSession

    return SparkSession(sc)


@pytest.fixture(autouse=True)
def leaves_nothing_behind():
    """Nothing new in /dev/shm, no run directory left (sockets, specs), no throwaway model
    export left in $TMPDIR after a test."""
    import tempfile

    shm_before = _listing("/dev/shm")
    root_before = _listing(_run_root())
    tmp_before = _listing(tempfile.gettempdir())
    yield
    import time

    deadline = time.monotonic() + 15  # supervisors clean up right after their trainer exits
    while time.monotonic() < deadline:
        left = _listing(_run_root()) - root_before
        if not left:
            break
        time.sleep(0.2)
    assert _listing(_run_root()) - root_before == set(), "run directories left behind"
    assert _listing("/dev/shm") - shm_before == set(), "files left in /dev/shm"
    models = {p for p in _listing(tempfile.gettempdir()) - tmp_before if p.startswith("hydrofeed-worker-model-")}
    assert models == set(), f"model exports left in {tempfile.gettempdir()}: {models}"
