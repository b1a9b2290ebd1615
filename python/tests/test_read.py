"""hydrofeed.read: batches of an input, checked against TensorFlow's own reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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



def _avro_blocks(path: Path, first: int, fastavro: Any) -> list[int]:
    """Writes ids first..first+999 (and a string) with fastavro, a block of 100 records at a
    time; the offsets of the file's sync markers (the header's, then one after each block)."""
    schema = fastavro.parse_schema(
        {"type": "record", "name": "r", "fields": [{"name": "id", "type": "long"}, {"name": "s", "type": "string"}]}
    )
    with path.open("wb") as out:
        w = fastavro.write.Writer(out, schema, sync_interval=1 << 30)
        for i in range(1000):
            w.write({"id": first + i, "s": "x" * 20})
            if i % 100 == 99:
                w.flush()
    data = path.read_bytes()
    sync = data[-16:]
    at = [i for i in range(len(data)) if data[i : i + 16] == sync]
    assert len(at) == 11, "a header and ten blocks"
    return at


def test_skipped_rows_are_listed_and_with_the_rows_read_make_up_the_input(tmp_path: Path) -> None:
    fastavro = pytest.importorskip("fastavro")
    # part-0: the sync marker after its fifth block overwritten (the block cannot be framed:
    # the plan does not count its rows). part-1: its fourth block's first id an over-long
    # varint (the block is framed and counted, and does not decode).
    p0, p1 = tmp_path / "part-0.avro", tmp_path / "part-1.avro"
    at0, at1 = _avro_blocks(p0, 0, fastavro), _avro_blocks(p1, 1000, fastavro)
    d0 = bytearray(p0.read_bytes())
    d0[at0[5] : at0[5] + 16] = bytes(16)
    p0.write_bytes(bytes(d0))
    d1 = bytearray(p1.read_bytes())
    data = at1[3] + 16 + 4  # after the block's count (100) and size, two bytes each
    d1[data : data + 11] = b"\xff" * 11
    p1.write_bytes(bytes(d1))

    with pytest.raises(hf.DataError, match="part-0.avro"):
        list(hf.read(str(tmp_path)))
    reader = hf.read(str(tmp_path), on_error="skip")
    assert (reader.skipped, reader.skipped_records, reader.skipped_blocks) == ([], 0, 0)
    ids = np.concatenate([b.column("id").to_numpy() for b in reader]).tolist()
    skipped = reader.skipped
    assert [(s["path"], s["split"], s["start"], s["end"]) for s in skipped] == [(str(p1), 1, 300, 400)], skipped
    assert "block 3" in skipped[0]["reason"], skipped
    assert (reader.skipped_records, reader.skipped_blocks) == (100, 2)
    unframed = set(range(400, 500))
    assert sorted(ids + list(range(1300, 1400))) == sorted(set(range(2000)) - unframed)
    assert reader.num_rows == 1900
