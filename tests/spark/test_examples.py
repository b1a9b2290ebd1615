"""The MNIST examples, run as their README says (``spark-submit``), on ``local-cluster``: two
executor JVMs, synchronous MultiWorkerMirroredStrategy training, a SavedModel exported."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.timeout(420)]

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _spark_submit(script: str, *args: str, tmp_path) -> subprocess.CompletedProcess:
    submit = shutil.which("spark-submit", path=os.path.dirname(sys.executable))
    assert submit, "spark-submit is not installed next to this Python (pyspark provides it)"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    cmd = [
        submit,
        "--master", "local-cluster[2,1,1024]",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.ui.showConsoleProgress=false",
        "--conf", "spark.driver.host=127.0.0.1",
        "--conf", f"spark.executorEnv.PYTHONPATH={env['PYTHONPATH']}",
        os.path.join(ROOT, "examples", script),
        *args,
    ]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=400, env=env, cwd=str(tmp_path))


def _check(proc: subprocess.CompletedProcess, export: str) -> None:
    # (the trainers' "epoch N: loss" lines go to the executors' logs, not to spark-submit's)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert os.path.exists(os.path.join(export, "saved_model.pb")), os.listdir(export) if os.path.exists(export) else export


def test_mnist_keras_spark_mode_example(tmp_path):
    export = str(tmp_path / "export")
    proc = _spark_submit(
        "mnist_keras_spark.py", "--cluster_size", "2", "--synthetic", "2000", "--epochs", "1",
        "--batch_size", "50", "--export_dir", export, tmp_path=tmp_path,
    )  # fmt: skip
    _check(proc, export)


def test_mnist_keras_file_mode_example(tmp_path):
    export = str(tmp_path / "export")
    data = str(tmp_path / "mnist_parquet")
    proc = _spark_submit(
        "mnist_keras_files.py", "--cluster_size", "2", "--images_labels", data, "--synthetic", "2000",
        "--epochs", "2", "--batch_size", "50", "--export_dir", export, tmp_path=tmp_path,
    )  # fmt: skip
    _check(proc, export)
    assert len(os.listdir(data)) == 4  # the synthetic Parquet files the feeders read
