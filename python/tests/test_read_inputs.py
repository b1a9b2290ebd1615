"""hydrofeed.read on the inputs jobs write every day: empty part files, zero-row files, files
written beside the data, damaged pages, a schema the user states, a batch size the user asks."""

from __future__ import annotations

import struct
from pathlib import Path

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pyarrow.parquet as pq
import pytest

import hydrofeed as hf


def _write_tfrecord(path: Path, values: list[list[int]]) -> None:
    tf = pytest.importorskip("tensorflow")
    with tf.io.TFRecordWriter(str(path)) as w:
        for v in values:
            f = tf.train.Feature(int64_list=tf.train.Int64List(value=v))
            w.write(tf.train.Example(features=tf.train.Features(feature={"x": f})).SerializeToString())


# ---- empty part files ----------------------------------------------------------------------


def test_empty_tfrecord_part_file_does_not_break_the_directory(tmp_path: Path) -> None:
    _write_tfrecord(tmp_path / "part-00000.tfrecord", [[i] for i in range(10)])
    (tmp_path / "part-00001.tfrecord").write_bytes(b"")
    _write_tfrecord(tmp_path / "part-00002.tfrecord", [[i] for i in range(10, 15)])
    t = pa.Table.from_batches(list(hf.read(str(tmp_path))))
    assert t.column("x").to_pylist() == list(range(15))


def test_lone_empty_tfrecord_file_needs_a_schema_and_says_so(tmp_path: Path) -> None:
    p = tmp_path / "part-00000.tfrecord"
    p.write_bytes(b"")
    with pytest.raises(hf.SchemaError, match=r"no record.*schema="):
        hf.read(str(p))
    schema = pa.schema([("x", pa.int64())])
    r = hf.read(str(p), schema=schema)
    assert list(r) == []
    assert r.schema == schema


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_zero_byte_part_files_are_skipped_as_spark_does(tmp_path: Path, fmt: str) -> None:
    t = pa.table({"x": pa.array(range(20), pa.int64())})
    data = tmp_path / f"part-00000.{fmt}"
    if fmt == "parquet":
        pq.write_table(t, data)
    elif fmt == "orc":
        po.write_table(t, data)
    else:
        with open(data, "wb") as f:
            fastavro.writer(
                f,
                {"type": "record", "name": "r", "fields": [{"name": "x", "type": "long"}]},
                [{"x": i} for i in range(20)],
            )
    (tmp_path / f"part-00001.{fmt}").write_bytes(b"")
    got = pa.Table.from_batches(list(hf.read(str(tmp_path))))
    assert got.column("x").to_pylist() == list(range(20))


def test_zero_row_files_contribute_their_schema(tmp_path: Path) -> None:
    empty = pa.table({"x": pa.array([], pa.int64()), "s": pa.array([], pa.string())})
    for name, write in {
        "a.parquet": lambda p: pq.write_table(empty, p),
        "a.orc": lambda p: po.write_table(empty, p),
    }.items():
        p = tmp_path / name
        write(p)
        r = hf.read(str(p))
        assert list(r) == []
        assert r.schema.names == ["x", "s"], name
    d = tmp_path / "dir"
    d.mkdir()
    pq.write_table(empty, d / "part-0.parquet")
    pq.write_table(pa.table({"x": pa.array([7], pa.int64()), "s": ["seven"]}), d / "part-1.parquet")
    got = pa.Table.from_batches(list(hf.read(str(d))))
    assert got.to_pydict() == {"x": [7], "s": ["seven"]}


def test_files_written_beside_the_data_are_skipped(tmp_path: Path) -> None:
    pq.write_table(pa.table({"x": [1, 2]}), tmp_path / "part-0.parquet")
    (tmp_path / "_SUCCESS").write_bytes(b"")
    (tmp_path / ".part-0.parquet.crc").write_bytes(b"crc")
    (tmp_path / "_temporary").mkdir()
    (tmp_path / "_temporary" / "part-9.parquet").write_bytes(b"half written")
    (tmp_path / ".hidden.parquet").write_bytes(b"junk")
    (tmp_path / "_common_metadata").write_bytes(b"junk")
    got = pa.Table.from_batches(list(hf.read(str(tmp_path))))
    assert got.column("x").to_pylist() == [1, 2]


# ---- batch_size ----------------------------------------------------------------------------


# ---- a schema the user states ----------------------------------------------------------------


def test_tfrecord_schema_given_reads_what_inference_cannot(tmp_path: Path) -> None:
    # One value per record for a long stretch, then two: inference (from the first records)
    # says scalar, and the read fails mid-epoch naming the record; the stated schema reads it.
    values = [[i] for i in range(3000)] + [[i, i + 1] for i in range(3000, 3010)]
    p = tmp_path / "x.tfrecord"
    _write_tfrecord(p, values)
    with pytest.raises(hf.HydrofeedError, match=r"x\.tfrecord"):
        list(hf.read(str(p)))
    schema = pa.schema([("x", pa.list_(pa.int64()))])
    got = pa.Table.from_batches(list(hf.read(str(p), schema=schema)))
    assert got.schema == schema
    assert got.column("x").to_pylist() == values


@pytest.mark.parametrize("kind", ["json", "ipc"])
def test_cli_schema_file_feeds_what_inference_cannot(tmp_path: Path, hf_bin: str, serve: object, kind: str) -> None:
    import json
    import subprocess

    values = [[i] for i in range(3000)] + [[i, i + 1] for i in range(3000, 3010)]
    p = tmp_path / "x.tfrecord"
    _write_tfrecord(p, values)
    schema = pa.schema([("x", pa.list_(pa.int64()))])
    sf = tmp_path / f"schema.{kind}"
    if kind == "json":  # what `hydrofeed inspect --json` prints, edited by hand
        sf.write_text(json.dumps([{"name": "x", "type": "List(Int64)", "nullable": True}]))
    else:
        with pa.OSFile(str(sf), "wb") as f:
            pa.ipc.new_stream(f, schema).close()
    out = subprocess.run([hf_bin, "inspect", "--json", "--schema", str(sf), str(p)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert [f["name"] for f in json.loads(out.stdout)["schema"]] == ["x"]
    srv = serve("--input", str(p), "--schema", str(sf))  # type: ignore[operator]
    feed = hf.DataFeed(address=str(srv.sock), timeout=60)
    got = [r for b in feed.batches(500) for r in b.to_arrow().column("x").to_pylist()]
    assert got == values
    assert srv.wait()[0] == 0


def test_cli_schema_file_errors_name_the_file_and_field(tmp_path: Path, hf_bin: str) -> None:
    import subprocess

    p = tmp_path / "x.tfrecord"
    _write_tfrecord(p, [[1]])
    sf = tmp_path / "schema.json"
    sf.write_text('[{"name": "x", "type": "Int65"}]')
    out = subprocess.run([hf_bin, "inspect", "--schema", str(sf), str(p)], capture_output=True, text=True)
    assert out.returncode != 0
    assert "schema.json" in out.stderr and '"x"' in out.stderr, out.stderr


# ---- Parquet page checksums ----------------------------------------------------------------


def _corrupt_value(path: Path, old: int, new: int) -> None:
    raw = bytearray(path.read_bytes())
    needle = struct.pack("<q", old)
    at = raw.find(needle)
    assert at > 0 and raw.find(needle, at + 1) == -1, "the value must occur once in the file"
    raw[at : at + 8] = struct.pack("<q", new)
    path.write_bytes(bytes(raw))


def test_parquet_page_checksum_is_verified(tmp_path: Path) -> None:
    p = tmp_path / "crc.parquet"
    t = pa.table({"x": pa.array(np.arange(1000, 2000, dtype=np.int64))})
    pq.write_table(t, p, compression="NONE", use_dictionary=False, write_page_checksum=True, write_statistics=False)
    _corrupt_value(p, 1500, 1501)
    # The reference reader with verification on refuses the file.
    with pytest.raises(OSError, match="(?i)crc|checksum"):
        pq.read_table(p, page_checksum_verification=True)
    with pytest.raises(hf.DataError, match=r"crc\.parquet.*(?i:checksum|crc)"):
        list(hf.read(str(p)))


# ---- Avro schema evolution -----------------------------------------------------------------


def _avro(path: Path, fields: list[dict[str, object]], rows: list[dict[str, object]]) -> None:
    with open(path, "wb") as f:
        fastavro.writer(f, {"type": "record", "name": "r", "fields": fields}, rows)


def test_avro_files_of_successive_schemas_read_with_the_newest(tmp_path: Path) -> None:
    v1 = [{"name": "x", "type": "long"}]
    v2 = v1 + [{"name": "tag", "type": "string", "default": "none"}]
    v3 = v2 + [{"name": "w", "type": ["null", "double"], "default": None}]
    _avro(tmp_path / "part-0.avro", v1, [{"x": i} for i in range(3)])
    _avro(tmp_path / "part-1.avro", v2, [{"x": 3, "tag": "b"}])
    _avro(tmp_path / "part-2.avro", v3, [{"x": 4, "tag": "c", "w": 0.5}])
    got = pa.Table.from_batches(list(hf.read(str(tmp_path))))
    assert got.to_pydict() == {
        "x": [0, 1, 2, 3, 4],
        "tag": ["none", "none", "none", "b", "c"],
        "w": [None, None, None, None, 0.5],
    }


def test_avro_files_that_avro_cannot_resolve_are_refused_naming_the_file(tmp_path: Path) -> None:
    _avro(tmp_path / "part-0.avro", [{"name": "x", "type": "long"}], [{"x": 1}])
    # A field added without a default: Avro's rules cannot read the old file under it.
    _avro(tmp_path / "part-1.avro", [{"name": "x", "type": "long"}, {"name": "y", "type": "long"}], [{"x": 2, "y": 3}])
    with pytest.raises(hf.SchemaError, match=r"part-0\.avro"):
        list(hf.read(str(tmp_path)))


# ---- ORC values the C++ and Java readers agree on ----------------------------------------------


