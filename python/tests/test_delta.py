"""Delta Lake tables read in place (docs/formats.md, "Tables"): the live files of one snapshot,
compared with delta-rs' own read of the same version (the ``deltalake`` package from PyPI wrote
the table): appends, a delete that rewrote files, a checkpoint, an overwrite of one partition, a
stray Parquet file no commit added; reading a version, a time, the newest; a table under column
mapping (``name`` mode: physical column names in the files and the log), every version against
delta-rs' query engine and the values written; and ``launch`` at a snapshot pinned while another
process commits, then resumed after more commits.

Before: a Delta table's directory was read as a plain Hive-partitioned directory, so the files
the delete and the overwrite removed and the stray file came too (rows twice, deleted rows back).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import hydrofeed

from test_launch import all_ids, dropped, interrupt_after, launch, no_leftovers

deltalake = pytest.importorskip("deltalake")


def rows(a: int, b: int) -> pa.Table:
    return pa.table({
        "id": pa.array(range(a, b), pa.int64()),
        "x": pa.array([float(i) * 0.5 for i in range(a, b)], pa.float64()),
        "p": pa.array([i % 3 for i in range(a, b)], pa.int64()),
    })


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Versions 0..5: write 0..1000, append 1000..2000, delete id < 500, checkpoint, append
    2000..2600, overwrite partition p=1 with 3000..3300 (p=1 ids only), append 4000..4100."""
    from deltalake import DeltaTable, write_deltalake

    d = tmp_path_factory.mktemp("delta") / "t"
    write_deltalake(str(d), rows(0, 1000), partition_by=["p"])
    write_deltalake(str(d), rows(1000, 2000), mode="append", partition_by=["p"])
    DeltaTable(str(d)).delete("id < 500")
    DeltaTable(str(d)).create_checkpoint()
    write_deltalake(str(d), rows(2000, 2600), mode="append", partition_by=["p"])
    p1 = rows(3000, 3900).filter(pc.equal(rows(3000, 3900)["p"], 1))
    write_deltalake(str(d), p1, mode="overwrite", partition_by=["p"], predicate="p = 1")
    write_deltalake(str(d), rows(4000, 4100), mode="append", partition_by=["p"])
    # A writer that never committed: its file is in a partition directory, not in the log.
    import pyarrow.parquet as pq

    pq.write_table(rows(9000, 9050).drop_columns(["p"]), d / "p=0" / "part-uncommitted.parquet")
    assert DeltaTable(str(d)).version() == 5
    return d


def ours(path: Path | str, **kw: object) -> pa.Table:
    return pa.Table.from_batches(list(hydrofeed.read(str(path), **kw))).sort_by("id")


def theirs(path: Path, version: int | None = None) -> pa.Table:
    from deltalake import DeltaTable

    t = DeltaTable(str(path), version=version).to_pyarrow_table()
    return t.select(["id", "x", "p"]).sort_by("id")


@pytest.mark.parametrize("version", [None, 0, 1, 2, 3, 4, 5])
def test_each_version_reads_as_delta_rs_reads_it(table: Path, version: int | None) -> None:
    got = ours(table, snapshot=version)
    want = theirs(table, version)
    assert got.num_rows == want.num_rows, (got.num_rows, want.num_rows)
    assert got.column("id").to_pylist() == want.column("id").to_pylist()
    assert got.column("x").to_pylist() == want.column("x").to_pylist()
    assert got.column("p").to_pylist() == want.column("p").to_pylist()
    assert not set(got.column("id").to_pylist()) & set(range(9000, 9050)), "an uncommitted file was read"


def test_a_time_reads_the_newest_commit_at_or_before_it(table: Path) -> None:
    import datetime as dt
    import json

    log = table / "_delta_log"
    ts = json.loads((log / "00000000000000000003.json").read_text().splitlines()[0])["commitInfo"]["timestamp"]
    at = dt.datetime.fromtimestamp(ts / 1000, dt.timezone.utc).isoformat()
    assert ours(table, snapshot=at).column("id").to_pylist() == theirs(table, 3).column("id").to_pylist()
    with pytest.raises(ValueError, match="no commit"):
        list(hydrofeed.read(str(table), snapshot="2000-01-01T00:00:00Z"))


def test_refusals_name_what_is_wrong(table: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no version 99"):
        list(hydrofeed.read(str(table), snapshot=99))
    with pytest.raises(ValueError, match="not a table"):
        list(hydrofeed.read(str(table / "p=0"), snapshot=1))
    with pytest.raises(ValueError, match="neither a version"):
        list(hydrofeed.read(str(table), snapshot="yesterday"))


def mapped_rows(a: int, b: int) -> pa.Table:
    r = range(a, b)
    return pa.table({
        "id": pa.array(r, pa.int64()),
        "x": pa.array([i * 0.5 for i in r], pa.float64()),
        "name": pa.array([f"n{i}" if i % 7 else None for i in r], pa.string()),
        "st": pa.array([{"u": i, "v": str(i)} if i % 5 else None for i in r],
                       pa.struct([("u", pa.int32()), ("v", pa.string())])),
        "l": pa.array([[i, i + 1] for i in r], pa.list_(pa.int64())),
        "p": pa.array([i % 3 for i in r], pa.int64()),
    })


@pytest.fixture(scope="module")
def mapped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A table under column mapping (``name`` mode: the Parquet files name every column, nested
    ones too, ``col-<uuid>``; the log keys partition values and statistics by those names).
    Versions 0..3: write 0..300, append 300..600, delete id < 100, append 600..700."""
    from deltalake import DeltaTable, write_deltalake

    d = tmp_path_factory.mktemp("mapped") / "t"
    write_deltalake(str(d), mapped_rows(0, 300), partition_by=["p"], configuration={
        "delta.columnMapping.mode": "name", "delta.minReaderVersion": "2", "delta.minWriterVersion": "5"})
    write_deltalake(str(d), mapped_rows(300, 600), mode="append", partition_by=["p"])
    DeltaTable(str(d)).delete("id < 100")
    write_deltalake(str(d), mapped_rows(600, 700), mode="append", partition_by=["p"])
    assert DeltaTable(str(d)).version() == 3
    return d


def theirs_mapped(path: Path, version: int) -> list[dict]:
    """delta-rs' read through its query engine (delta-kernel), rows by id. Not
    ``to_pyarrow_table()``: that reads a column-mapped table's data columns as all nulls
    (deltalake 1.6.6)."""
    from deltalake import DeltaTable, QueryBuilder

    t = QueryBuilder().register("t", DeltaTable(str(path), version=version)).execute("select * from t")
    # (Sorted here: its strings are string_view, which this pyarrow cannot take.)
    return sorted(pa.table(t.read_all()).to_pylist(), key=lambda r: r["id"])


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_a_column_mapped_table_reads_as_delta_rs_reads_it(mapped: Path, version: int) -> None:
    got = ours(mapped, snapshot=version)
    want = theirs_mapped(mapped, version)
    assert got.column_names == ["id", "x", "name", "st", "l", "p"]
    assert got.num_rows == len(want) > 0
    assert got.to_pylist() == want
    # The values written, by the table's names: the partition column from the log's values
    # keyed by its physical name.
    ids = got.column("id").to_pylist()
    assert got.to_pylist() == mapped_rows(0, 700).take(ids).to_pylist()


def test_a_column_mapped_table_projects_and_filters_by_the_tables_names(mapped: Path) -> None:
    want = mapped_rows(0, 700).to_pylist()
    want = [r for r in want if r["id"] >= 100]
    got = ours(mapped, columns=["p", "st", "id"])
    assert got.column_names == ["p", "st", "id"]
    assert got.to_pylist() == [{k: r[k] for k in ("p", "st", "id")} for r in want]
    # A filter on a data column and the partition column: counted and read through the mapping
    # (the files' statistics, keyed by physical names, are read by the table's).
    got = ours(mapped, filter="x < 150 AND p = 1")
    assert got.to_pylist() == [r for r in want if r["x"] < 150 and r["p"] == 1]


@pytest.fixture
def live(tmp_path: Path) -> Path:
    """A table of its own, for jobs that commit to it."""
    from deltalake import write_deltalake

    d = tmp_path / "live"
    write_deltalake(str(d), rows(0, 3000), partition_by=["p"])
    write_deltalake(str(d), rows(3000, 6000), mode="append", partition_by=["p"])
    return d


COMMITTER = """
import sys, time
import pyarrow as pa
from deltalake import write_deltalake
path, start = sys.argv[1], int(sys.argv[2])
for k in range(int(sys.argv[3])):
    a = start + k * 100
    write_deltalake(path, pa.table({"id": pa.array(range(a, a + 100), pa.int64()),
        "x": pa.array([0.0] * 100), "p": pa.array([i % 3 for i in range(a, a + 100)], pa.int64())}),
        mode="append", partition_by=["p"])
    time.sleep(0.05)
"""


def version_of(stderr: str) -> int:
    m = re.search(r"the delta table \S+ at version (\d+)", stderr)
    assert m, stderr[-3000:]
    return int(m.group(1))


def test_launch_reads_its_snapshot_while_another_process_commits(
    hf_bin: str, live: Path, tmp_path: Path
) -> None:
    """A writer appends 100 rows every 50 ms while `launch --workers 2` trains: every row of the
    version launch planned comes exactly once, none committed after it."""
    w = subprocess.Popen([sys.executable, "-c", COMMITTER, str(live), "100000", "40"])
    try:
        time.sleep(0.3)
        r = launch(hf_bin, live, tmp_path / "a", 2, env={"SLOW": "0.02"}, timeout=300)
    finally:
        w.wait(timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    v = version_of(r.stderr)
    want = set(theirs(live, v).column("id").to_pylist())
    got = all_ids(tmp_path / "a", 2)
    twice = [i for i, n in Counter(got).items() if n > 1]
    assert not twice, twice[:10]
    assert set(got) <= want, sorted(set(got) - want)[:10]
    assert len(want - set(got)) == dropped(r.stderr)
    no_leftovers(str(tmp_path))


def test_resume_after_more_commits_reads_the_saved_snapshot(
    hf_bin: str, live: Path, tmp_path: Path
) -> None:
    """Ctrl-C mid-epoch with --state-out; 500 more rows committed; --resume feeds the rest of
    the saved version: both runs together deliver its rows exactly once, none of the new."""
    out = tmp_path / "a"
    state = tmp_path / "state.json"
    rc, err = interrupt_after(hf_bin, live, out, state, 50, 15)
    assert rc == 130, err[-3000:]
    v = version_of(err)
    first = all_ids(out, 2)
    subprocess.run([sys.executable, "-c", COMMITTER, str(live), "200000", "5"], check=True)
    r2 = launch(hf_bin, live, tmp_path / "b", 2, "--resume", str(state), batch=None, timeout=300)
    assert r2.returncode == 0, r2.stderr[-3000:]
    assert f"at its saved version {v}" in r2.stderr, r2.stderr[-3000:]
    both = first + all_ids(tmp_path / "b", 2)
    want = set(theirs(live, v).column("id").to_pylist())
    assert len(both) == len(set(both)), "a row was delivered in both runs"
    assert set(both) <= want, sorted(set(both) - want)[:10]
    assert len(want - set(both)) == dropped(r2.stderr)
    no_leftovers(str(tmp_path))


sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from minidfs import minidfs  # noqa: E402,F401  (the session fixture)


@pytest.mark.hdfs
def test_a_table_on_minidfs_reads_as_on_local_disk(table: Path, minidfs) -> None:  # noqa: F811
    """The same table put on a real MiniDFS with Hadoop's own client (log, checkpoint, data
    files, the stray file): every version reads as delta-rs reads the local copy."""
    import os

    for f in sorted(table.rglob("*")):
        if f.is_file():
            minidfs.put(f, "/delta/t/" + str(f.relative_to(table)))
    conf = os.environ.get("HADOOP_CONF_DIR")
    os.environ["HADOOP_CONF_DIR"] = str(minidfs.conf_dir)
    try:
        for version in (1, 3, None):
            got = ours(minidfs.uri("/delta/t"), snapshot=version)
            assert got.column("id").to_pylist() == theirs(table, version).column("id").to_pylist(), version
    finally:
        if conf is None:
            os.environ.pop("HADOOP_CONF_DIR", None)
        else:
            os.environ["HADOOP_CONF_DIR"] = conf


def test_a_journaled_coordinator_comes_back_to_its_snapshot(
    hf_bin: str, live: Path, tmp_path: Path
) -> None:
    """`hydrofeed coordinator --journal D` over a Delta table, `kill -9`ed mid-epoch; a commit
    lands while it is down; started again on its journal it plans the snapshot the journal
    names (not the newest, which its feeders do not read) and the job ends exactly once.
    Before, the journal's first state held no input at all: the restarted coordinator planned
    the newest version and dealt splits the feeders did not have."""
    from test_coordinator_lost import BATCH as CBATCH, WORKERS, Job, _steps

    from deltalake import DeltaTable

    journal = tmp_path / "journal"
    version = str(DeltaTable(str(live)).version())
    job = Job(hf_bin, live, tmp_path, "--journal", str(journal), coordinator_timeout=60, epochs=1,
              feeder_args=("--snapshot", version))
    v = theirs(live, None)
    job.restart_on_journal(10, lambda: subprocess.run(
        [sys.executable, "-c", COMMITTER, str(live), "300000", "3"], check=True))
    got = [i for k in range(WORKERS) for s in _steps(job.out, k) for i in s["ids"]]
    want = set(v.column("id").to_pylist())
    assert len(got) == len(set(got)), "a row came twice"
    assert set(got) <= want, sorted(set(got) - want)[:10]
    assert len(want) - len(got) < WORKERS * CBATCH


def test_inspect_names_the_snapshot(hf_bin: str, table: Path) -> None:
    """`hydrofeed inspect` says which table and version it planned, in text and JSON."""
    import json

    r = subprocess.run([hf_bin, "inspect", "--json", "--snapshot", "2", str(table)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    v = json.loads(r.stdout)
    assert v["table"]["kind"] == "delta" and v["table"]["version"] == 2, v["table"]
    assert v["total_rows"] == theirs(table, 2).num_rows
    r = subprocess.run([hf_bin, "inspect", str(table)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "at version 5" in r.stdout, r.stdout[:2000]


def test_a_feeder_over_a_table_needs_the_coordinators_snapshot(hf_bin: str, table: Path, tmp_path: Path) -> None:
    """`hydrofeed feeder` started by hand over a table without `--snapshot` is refused, saying
    what to pass: the newest version may not be the coordinator's, whose splits would then
    name other files."""
    r = subprocess.run([hf_bin, "feeder", "--input", str(table), "--coordinator", "127.0.0.1:1",
                        "--socket-dir", str(tmp_path / "s")],
                       capture_output=True, text=True, timeout=60, env={**os.environ, "HYDROFEED_TOKEN": "x" * 32})
    assert r.returncode != 0
    assert "pass --snapshot" in r.stderr, r.stderr[-2000:]
