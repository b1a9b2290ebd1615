"""hydrofeed.read: batches of an input, checked against TensorFlow's own reader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import hydrofeed as hf
from helpers import tf_read_mnist


def test_read_matches_tensorflow(mnist_dir: Path) -> None:
    want = tf_read_mnist(mnist_dir)
    batches = list(hf.read(str(mnist_dir), batch_rows=700))
    assert all(isinstance(b, pa.RecordBatch) for b in batches)
    t = pa.Table.from_batches(batches)
    assert t.num_rows == 2500
    np.testing.assert_array_equal(t.column("id").to_numpy(), want["id"].ravel())
    np.testing.assert_array_equal(t.column("label").to_numpy(), want["label"].ravel())
    img = t.column("image").combine_chunks().flatten().to_numpy().reshape(-1, 784)
    np.testing.assert_array_equal(img, want["image"])


def test_read_projection(mnist_dir: Path) -> None:
    b = next(hf.read(str(mnist_dir), columns=["label"]))
    assert b.schema.names == ["label"]
    with pytest.raises(hf.SchemaError, match="no column"):
        next(hf.read(str(mnist_dir), columns=["nope"]))


def test_read_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        hf.read(str(tmp_path / "missing.tfrecord"))
    bad = tmp_path / "bad.tfrecord"
    bad.write_bytes(b"this is not a tfrecord file at all" * 10)
    with pytest.raises(hf.DataError, match="bad.tfrecord"):
        list(hf.read(str(bad)))
    with pytest.raises(ValueError, match="on_error"):
        hf.read(str(bad), on_error="ignore")
