"""Test helpers: expected values read by TensorFlow (an independent reader), /dev/shm listing, subprocess and polling helpers."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import hydrofeed as hf


def tf_read_mnist(d: Path) -> dict[str, np.ndarray]:
    import tensorflow as tf

    files = sorted(str(p) for p in d.iterdir() if p.suffix == ".tfrecord")
    spec = {
        "id": tf.io.FixedLenFeature([1], tf.int64),
        "image": tf.io.FixedLenFeature([784], tf.float32),
        "label": tf.io.FixedLenFeature([1], tf.int64),
    }
    cols: dict[str, list[np.ndarray]] = {"id": [], "image": [], "label": []}
    for rec in tf.data.TFRecordDataset(files).batch(1000):
        parsed = tf.io.parse_example(rec, spec)
        for k in cols:
            cols[k].append(parsed[k].numpy())
    return {k: np.concatenate(v) for k, v in cols.items()}


def shm_listing() -> set[str]:
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


def run_python(code: str, timeout: float = 60, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, **kw  # type: ignore[call-overload]
    )


def wait_for(pred: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():  # type: ignore[operator]
            return
        time.sleep(0.02)
    raise AssertionError("condition not met in time")


class DLPackCapsule:
    """Wraps a bare DLPack capsule so that ``np.from_dlpack`` takes it."""

    def __init__(self, cap: object) -> None:
        self.cap = cap

    def __dlpack__(self, **_: object) -> object:
        return self.cap

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


#: Rows of the adapter tests' dataset (conftest's `adapter_mnist`): 20 MB of float32 images,
#: about 5x a 4 MiB ring.
ADAPTER_ROWS = 6500

# Rows of the session fixture big_mnist (conftest.py).
BIG_ROWS = 10000


def gen_tfrecord_mnist(hf_bin: str, out: Path, rows: int) -> Path:
    """`hydrofeed gen` of `rows` MNIST-shaped TFRecord rows in 3 files under `out`."""
    subprocess.run(
        [hf_bin, "gen", "--format", "tfrecord", "--rows", str(rows), "--files", "3", "--out", str(out)],
        check=True,
        capture_output=True,
    )
    return out


def check_mnist_epoch(batches: list[Any], want: dict[str, np.ndarray], rows: int) -> None:
    """Every row of `rows` exactly once, with the reference's image (and label, if fed)."""
    ids = np.concatenate([np.asarray(b["id"]).ravel() for b in batches])
    assert len(ids) == rows, len(ids)
    np.testing.assert_array_equal(np.sort(ids), np.arange(rows))
    order = np.argsort(ids)
    img = np.concatenate([np.asarray(b["image"]) for b in batches])[order]
    np.testing.assert_array_equal(img, want["image"])
    if batches and "label" in batches[0]:  # (a feed of some columns only has no label)
        lab = np.concatenate([np.asarray(b["label"]).ravel() for b in batches])[order]
        np.testing.assert_array_equal(lab, want["label"].ravel())


def read_table(path: Path, **kw: object) -> pa.Table:
    batches = list(hf.read(str(path), **kw))  # type: ignore[arg-type]
    reader = hf.read(str(path), **kw)  # type: ignore[arg-type]
    return pa.Table.from_batches(batches, schema=reader.schema if hasattr(reader, "schema") else None)


def orc_via_pyorc(path: Path, schema: str, rows: list[tuple[object, ...]]) -> None:
    pyorc = pytest.importorskip("pyorc")
    from zoneinfo import ZoneInfo

    with open(path, "wb") as f:
        w = pyorc.Writer(f, schema, timezone=ZoneInfo("UTC"), stripe_size=4096)
        for r in rows:
            w.write(r)
        w.close()


def spark_written(writer: Path, out: Path, what: str) -> tuple[Path, dict[str, Any]]:
    """Runs a writer script that drives Spark's JVM (``python WRITER OUT``, its own process) and
    returns ``OUT`` and the ``done.json`` it leaves there (what the writer's own reader read).
    Without PySpark the caller's tests skip, except on CI (``CI=true``), where they fail."""
    import json

    try:
        import pyspark  # noqa: F401
    except ImportError as e:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"{what} cannot run on CI: {e}")
        pytest.skip(str(e))
    r = subprocess.run([sys.executable, str(writer), str(out)], capture_output=True, text=True, timeout=800)
    assert r.returncode == 0, r.stderr[-4000:]
    return out, json.loads((out / "done.json").read_text())
