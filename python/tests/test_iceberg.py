"""Apache Iceberg tables read in place (docs/formats.md, "Tables"): the live data files of one
snapshot, compared with pyiceberg's own scan of the same snapshot (pyiceberg from PyPI wrote
the table through a SQL catalog): appends, a delete (copy-on-write: files rewritten), an
overwrite; every snapshot by id, a time, the current one; the table directory without
``version-hint.text`` refused (its newest metadata file may be uncommitted), with one read as a
Hadoop table does; a changed schema refused; ``launch`` at the current snapshot while another
snapshot is committed, then resumed after it.

Before: a metadata file was not an input (no format), and the table directory read every Parquet
file below it, the files a delete or an overwrite replaced included.
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

import hydrofeed

from test_launch import all_ids, dropped, interrupt_after, launch, no_leftovers

pytest.importorskip("pyiceberg")


def rows(a: int, b: int) -> pa.Table:
    return pa.table({
        "id": pa.array(range(a, b), pa.int64()),
        "x": pa.array([float(i) * 0.5 for i in range(a, b)], pa.float64()),
    })


def catalog(root: Path):  # noqa: ANN201 - pyiceberg's type
    from pyiceberg.catalog.sql import SqlCatalog

    root.mkdir(parents=True, exist_ok=True)
    c = SqlCatalog("t", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/wh")
    c.create_namespace("db")
    return c


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    """Snapshots: append 0..1000, append 1000..2000, delete id < 500, overwrite with 3000..3400,
    append 4000..4100."""
    c = catalog(tmp_path_factory.mktemp("iceberg"))
    t = c.create_table("db.t", schema=rows(0, 1).schema)
    t.append(rows(0, 1000))
    t.append(rows(1000, 2000))
    t.delete("id < 500")
    t.overwrite(rows(3000, 3400))
    t.append(rows(4000, 4100))
    return c.load_table("db.t")


def metadata_file(t) -> str:  # noqa: ANN001
    return t.metadata_location.removeprefix("file://")


def ours(path: str, **kw: object) -> list[int]:
    return sorted(pa.Table.from_batches(list(hydrofeed.read(path, **kw))).column("id").to_pylist())


def theirs(t, snapshot_id: int | None = None) -> list[int]:  # noqa: ANN001
    return sorted(t.scan(snapshot_id=snapshot_id).to_arrow().column("id").to_pylist())


def test_every_snapshot_reads_as_pyiceberg_scans_it(table) -> None:  # noqa: ANN001
    m = metadata_file(table)
    snaps = [s.snapshot_id for s in table.snapshots()]
    assert len(snaps) >= 5
    assert ours(m) == theirs(table)
    for sid in snaps:
        want = theirs(table, sid)
        if not want:
            # A snapshot without data files (an overwrite's delete half): named, no schema to
            # read it with.
            with pytest.raises(ValueError, match="holds no data file"):
                ours(m, snapshot=sid)
            continue
        assert ours(m, snapshot=sid) == want, sid
    got = pa.Table.from_batches(list(hydrofeed.read(m))).sort_by("id")
    assert got.column("x").to_pylist() == [i * 0.5 for i in got.column("id").to_pylist()]


def test_a_time_reads_the_snapshot_current_then(table) -> None:  # noqa: ANN001
    s = list(table.snapshots())[1]
    at = dt.datetime.fromtimestamp(s.timestamp_ms / 1000, dt.timezone.utc).isoformat()
    assert ours(metadata_file(table), snapshot=at) == theirs(table, s.snapshot_id)


def test_a_directory_needs_its_version_hint(table, tmp_path: Path) -> None:  # noqa: ANN001
    d = Path(table.location().removeprefix("file://"))
    with pytest.raises(ValueError, match="version-hint.text"):
        list(hydrofeed.read(str(d)))
    # A Hadoop table: the hint names the current metadata file's version.
    copy = tmp_path / "t"
    shutil.copytree(d, copy)
    name = Path(metadata_file(table)).name
    (copy / "metadata" / "version-hint.text").write_text(str(int(name.split("-")[0])))
    # The copy's manifests still name the original files: the same rows.
    assert ours(str(copy)) == theirs(table)
    with pytest.raises(ValueError, match="no snapshot 12345"):
        list(hydrofeed.read(metadata_file(table), snapshot=12345))


def test_a_changed_schema_is_refused(tmp_path: Path) -> None:
    c = catalog(tmp_path)
    t = c.create_table("db.e", schema=rows(0, 1).schema)
    t.append(rows(0, 10))
    with t.update_schema() as u:
        from pyiceberg.types import LongType

        u.add_column("y", LongType())
    t = c.load_table("db.e")
    with pytest.raises(hydrofeed.SchemaError, match="schema changed"):
        list(hydrofeed.read(metadata_file(t)))


def test_launch_and_resume_keep_the_planned_snapshot(hf_bin: str, tmp_path: Path) -> None:
    """`launch --workers 2` over the metadata file; Ctrl-C mid-epoch; a snapshot appended; the
    resume over the table's new metadata file reads the saved snapshot: its rows once over both
    runs, none of the new one."""
    c = catalog(tmp_path / "cat")
    t = c.create_table("db.j", schema=rows(0, 1).schema)
    t.append(rows(0, 3000))
    t.append(rows(3000, 6000))
    m = metadata_file(c.load_table("db.j"))
    want = set(theirs(c.load_table("db.j")))
    state = tmp_path / "state.json"
    rc, err = interrupt_after(hf_bin, Path(m), tmp_path / "a", state, 50, 15)
    assert rc == 130, err[-3000:]
    first = all_ids(tmp_path / "a", 2)
    t.append(rows(9000, 9500))
    # The resume reads the metadata file the catalog points at now: it holds the new snapshot
    # as the current one, and the saved one.
    m2 = metadata_file(c.load_table("db.j"))
    assert m2 != m
    r2 = launch(hf_bin, Path(m2), tmp_path / "b", 2, "--resume", str(state), batch=None, timeout=300)
    assert r2.returncode == 0, r2.stderr[-3000:]
    assert "at its saved version" in r2.stderr, r2.stderr[-3000:]
    both = first + all_ids(tmp_path / "b", 2)
    twice = [i for i, n in Counter(both).items() if n > 1]
    assert not twice, twice[:10]
    assert set(both) <= want, sorted(set(both) - want)[:10]
    assert len(want - set(both)) == dropped(r2.stderr)
    no_leftovers(str(tmp_path))
