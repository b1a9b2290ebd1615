"""An Iceberg table on a real MiniDFS: written by pyiceberg with its locations on HDFS, read by
hydrofeed over ``hdfs://`` at every snapshot, compared with pyiceberg's scan of the same files.

pyiceberg reaches HDFS only through libhdfs (the Hadoop distribution's native client, not on
Maven), so its file I/O here is :class:`StagedIO`: the table's metadata and data files are
written by pyiceberg as they are, with their ``hdfs://`` locations (the metadata file, the
manifest list and the manifests name every file by its HDFS location), into a local staging
directory that mirrors the HDFS paths; Hadoop's own client then puts the tree on the cluster.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hydrofeed

pytest.importorskip("pyiceberg")

from pyiceberg.io.pyarrow import PyArrowFile, PyArrowFileIO  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from minidfs import minidfs  # noqa: E402,F401  (the session fixture)

STAGE_PROP = "hydrofeed.test.stage"


class StagedIO(PyArrowFileIO):
    """pyiceberg's own file I/O, with ``hdfs://host:port/p`` stored at ``<stage>/p``: every
    file keeps its HDFS location (what pyiceberg writes into the metadata) and is written and
    read locally until it is put on the cluster."""

    def _local(self, location: str) -> str:
        if location.startswith("hdfs://"):
            path = "/" + location.split("://", 1)[1].split("/", 1)[1]
            return "file://" + self.properties[STAGE_PROP] + path
        return location

    def _staged(self, f: PyArrowFile, location: str) -> PyArrowFile:
        f._location = location  # the name pyiceberg records stays the HDFS one
        return f

    def new_input(self, location: str) -> PyArrowFile:
        return self._staged(super().new_input(self._local(location)), location)

    def new_output(self, location: str) -> PyArrowFile:
        return self._staged(super().new_output(self._local(location)), location)

    def delete(self, location: Any) -> None:
        loc = location.location if hasattr(location, "location") else location
        super().delete(self._local(loc))


def rows(a: int, b: int) -> pa.Table:
    return pa.table({
        "id": pa.array(range(a, b), pa.int64()),
        "x": pa.array([float(i) * 0.25 for i in range(a, b)], pa.float64()),
    })


@pytest.mark.hdfs
def test_a_table_written_with_hdfs_locations_reads_at_every_snapshot(
    hf_bin: str, minidfs, tmp_path: Path  # noqa: F811
) -> None:
    """Snapshots: append 0..2000, append 2000..3000, delete id < 700 (copy-on-write), a column
    added and 5000..5200 appended with it: each read over ``hdfs://`` (the metadata file named)
    gives the rows pyiceberg's scan gives; planning over ``hdfs://`` opens no data file (the
    manifests' row counts plan them)."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.types import LongType

    stage = tmp_path / "stage"
    stage.mkdir()
    warehouse = minidfs.uri("/iceberg/wh")
    c = SqlCatalog("h", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=warehouse,
                   **{"py-io-impl": "test_iceberg_hdfs.StagedIO", STAGE_PROP: str(stage)})
    c.create_namespace("db")
    t = c.create_table("db.t", schema=rows(0, 1).schema)
    t.append(rows(0, 2000))
    t.append(rows(2000, 3000))
    t.delete("id < 700")
    with t.update_schema() as u:
        u.add_column("k", LongType())
    t = c.load_table("db.t")
    extra = rows(5000, 5200).append_column("k", pa.array([i % 7 for i in range(200)], pa.int64()))
    t.append(extra)
    t = c.load_table("db.t")
    assert t.metadata_location.startswith("hdfs://"), t.metadata_location
    # Hadoop's client puts the staged tree at the paths the metadata names.
    table_dir = t.metadata_location.split("/metadata/")[0]
    local_root = stage / table_dir.split("://", 1)[1].split("/", 1)[1]
    files = [f for f in sorted(local_root.rglob("*")) if f.is_file()]
    assert any(f.suffix == ".avro" for f in files) and any(f.suffix == ".parquet" for f in files)
    for f in files:
        minidfs.put(f, "/" + str(f.relative_to(stage)))
    conf = os.environ.get("HADOOP_CONF_DIR")
    os.environ["HADOOP_CONF_DIR"] = str(minidfs.conf_dir)
    try:
        r = subprocess.run([hf_bin, "inspect", t.metadata_location, "--json"],
                           capture_output=True, text=True, env=dict(os.environ))
        assert r.returncode == 0, r.stderr[-3000:]
        plan = json.loads(r.stdout)
        assert plan["planning"]["data_files_opened"] == 0, plan["planning"]
        assert plan["total_rows"] == t.scan().to_arrow().num_rows
        snaps = [s.snapshot_id for s in t.snapshots()]
        assert len(snaps) >= 4
        for snap in [*snaps, None]:
            want = t.scan(snapshot_id=snap).to_arrow().sort_by("id")
            got = pa.Table.from_batches(list(hydrofeed.read(t.metadata_location, snapshot=snap)))
            got = got.sort_by("id")
            assert got.column("id").to_pylist() == want.column("id").to_pylist(), snap
            assert got.column("x").to_pylist() == want.column("x").to_pylist(), snap
            if "k" in want.column_names:
                assert got.column("k").to_pylist() == want.column("k").to_pylist(), snap
    finally:
        if conf is None:
            os.environ.pop("HADOOP_CONF_DIR", None)
        else:
            os.environ["HADOOP_CONF_DIR"] = conf
