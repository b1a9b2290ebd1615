"""Apache Iceberg tables read in place (docs/formats.md, "Tables"): the live data files of one
snapshot, compared with pyiceberg's own scan of the same snapshot (pyiceberg from PyPI wrote
the table through a SQL catalog): appends, a delete (copy-on-write: files rewritten), an
overwrite; every snapshot by id, a time, the current one; the table directory without
``version-hint.text`` refused (its newest metadata file may be uncommitted), with one read as a
Hadoop table does; a schema that evolved (a column renamed and widened, columns added, one
dropped and another added under its name, a nested field renamed and one added) read by field id,
every snapshot with its own schema against pyiceberg's scan; ``launch`` at the current snapshot
while another snapshot is committed, then resumed after it.

Before: a metadata file was not an input (no format), and the table directory read every Parquet
file below it, the files a delete or an overwrite replaced included. A table whose schema
changed was refused.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import shutil
import subprocess
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


def evolving_rows(a: int, b: int, cols: list[str]) -> pa.Table:
    r = range(a, b)
    st_fields = [("w" if "st.w" in cols else "u", pa.int32()), ("v", pa.string())]
    if "st.z" in cols:
        st_fields.append(("z", pa.int64()))
    data = {
        "id": pa.array(r, pa.int64()),
        "a": pa.array([i * 10 for i in r], pa.int32()),
        "b": pa.array([i * 10 for i in r], pa.int64()),
        "gone": pa.array([f"g{i}" for i in r], pa.string()),
        "c": pa.array([i * 100 if i % 4 else None for i in r], pa.int64()),
        "st": pa.array(
            [dict(zip([f for f, _ in st_fields], [i, str(i), -i])) if i % 5 else None for i in r],
            pa.struct(st_fields)),
    }
    return pa.table({k: data[k] for k in cols if not k.startswith("st.")})


@pytest.fixture(scope="module")
def evolved(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    """Snapshots over three schemas: (id, a: int, gone, st{u, v}) 0..20; then a renamed to b and
    widened to long, c added, st.u renamed to w and st.z added: 20..30; then gone dropped and a
    new gone added (another field id: the old values are not its), a delete of id < 5 (a file
    rewritten under the newest schema): 30..40. The old files keep their old names; pyiceberg finds every column by id."""
    from pyiceberg.types import LongType, StringType

    c = catalog(tmp_path_factory.mktemp("evolved"))
    t = c.create_table("db.e", schema=evolving_rows(0, 1, ["id", "a", "gone", "st"]).schema)
    t.append(evolving_rows(0, 20, ["id", "a", "gone", "st"]))
    with t.update_schema() as u:
        u.rename_column("a", "b")
        u.update_column("a", LongType())
        u.add_column("c", LongType())
        u.rename_column("st.u", "w")
        u.add_column(("st", "z"), LongType())
    t.append(evolving_rows(20, 30, ["id", "b", "gone", "st", "st.w", "st.z", "c"]))
    with t.update_schema() as u:
        u.delete_column("gone")
    with t.update_schema() as u:
        u.add_column("gone", StringType())
    t.delete("id < 5")
    t.append(evolving_rows(30, 40, ["id", "b", "st", "st.w", "st.z", "c", "gone"]))
    return c.load_table("db.e")


def test_an_evolved_schema_reads_by_field_id_as_pyiceberg_scans_it(evolved) -> None:  # noqa: ANN001
    m = metadata_file(evolved)
    snaps = [s.snapshot_id for s in evolved.snapshots()]
    assert len(snaps) >= 4
    read = 0
    for sid in [*snaps, None]:
        want = evolved.scan(snapshot_id=sid).to_arrow().sort_by("id")
        if want.num_rows == 0:
            continue
        got = pa.Table.from_batches(list(hydrofeed.read(m, snapshot=sid))).sort_by("id")
        # The snapshot's own schema: its names and columns, in its order.
        assert got.column_names == want.column_names, sid
        for col in got.column_names:
            assert got.column(col).to_pylist() == want.column(col).to_pylist(), (sid, col)
        read += 1
    assert read >= 4
    now = pa.Table.from_batches(list(hydrofeed.read(m))).sort_by("id")
    assert now.column_names == ["id", "b", "st", "c", "gone"]
    # Added columns are null in the files written before them; the new gone is not the old.
    by_id = {r["id"]: r for r in now.to_pylist()}
    assert by_id[7]["c"] is None and by_id[7]["gone"] is None and by_id[7]["b"] == 70
    assert by_id[7]["st"] == {"w": 7, "v": "7", "z": None}
    assert by_id[25]["gone"] is None and by_id[25]["c"] == 2500
    assert by_id[36]["gone"] == "g36" and by_id[36]["st"]["z"] == -36


def test_an_evolved_schema_projects_and_filters_by_the_current_names(evolved) -> None:  # noqa: ANN001
    m = metadata_file(evolved)
    want = evolved.scan(selected_fields=("c", "b", "id")).to_arrow().sort_by("id")
    got = pa.Table.from_batches(list(hydrofeed.read(m, columns=["c", "b", "id"]))).sort_by("id")
    assert got.to_pylist() == want.select(["c", "b", "id"]).to_pylist()
    # A filter on a renamed, widened column: counted through the mapping too.
    got = pa.Table.from_batches(list(hydrofeed.read(m, filter="b >= 150 AND b < 350"))).sort_by("id")
    assert got.column("id").to_pylist() == list(range(15, 35))


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


def stats_rows(k: int) -> pa.Table:
    ids = range(k * 1000, (k + 1) * 1000)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "n": pa.array([i // 10 for i in ids], pa.int32()),
        "x": pa.array([None if i % 7 == 0 else i * 0.25 for i in ids], pa.float64()),
        "s": pa.array([f"k{k}-{i % 5}" for i in ids], pa.string()),
        "day": pa.array([dt.date(2026, 1 + k, 1 + i % 28) for i in ids], pa.date32()),
        "m": pa.array([decimal.Decimal(i) / 4 for i in ids], pa.decimal128(12, 2)),
    })


def test_manifest_bounds_rule_files_out_unopened(hf_bin: str, tmp_path: Path) -> None:
    """Four appends with disjoint bounds (one file each), `n` widened from int to long after the
    first two: a filter on any column type rules out the files whose manifest bounds (lower,
    upper, null counts by field id) exclude it, before any footer is read; the rows are
    pyiceberg's own scan under the same filter."""
    from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan, NotNull
    from pyiceberg.types import LongType

    c = catalog(tmp_path / "cat")
    t = c.create_table("db.s", schema=stats_rows(0).schema)
    for k in range(4):
        if k == 2:
            with t.update_schema() as u:
                u.update_column("n", LongType())
            t = c.load_table("db.s")
        t.append(stats_rows(k).cast(t.schema().as_arrow()) if k >= 2 else stats_rows(k))
    t = c.load_table("db.s")
    path = metadata_file(t)
    cases = [
        ("id >= 1100 AND id < 1200", 3, And(GreaterThanOrEqual("id", 1100), LessThan("id", 1200))),
        ("n >= 320", 3, GreaterThanOrEqual("n", 320)),
        ("s >= 'k2' AND s < 'k3'", 3, And(GreaterThanOrEqual("s", "k2"), LessThan("s", "k3"))),
        ("day < DATE '2026-02-01'", 3, LessThan("day", "2026-02-01")),
        ("m >= 500 AND x IS NOT NULL", 2, And(GreaterThanOrEqual("m", decimal.Decimal("500.00")), NotNull("x"))),
    ]
    for text, ruled_out, expr in cases:
        r = subprocess.run([hf_bin, "inspect", path, "--json", "--filter", text],
                           capture_output=True, text=True, check=True)
        f = json.loads(r.stdout)["filter"]
        assert f["files_ruled_out"] == ruled_out, (text, f)
        want = sorted(t.scan(row_filter=expr).to_arrow().column("id").to_pylist())
        assert ours(path, filter=text) == want and want, text
    # Every file ruled out: nothing to read, the table's columns all the same.
    r = hydrofeed.read(path, filter="id < 0")
    assert r.schema.names == ["id", "n", "x", "s", "day", "m"] and not list(r)


def every_snapshot_as_pyiceberg_scans_it(t) -> pa.Table:  # noqa: ANN001
    """Reads every snapshot of ``t`` and compares it, row by row, with pyiceberg's scan of it;
    returns the current snapshot's rows, by ``id``."""
    path = metadata_file(t)
    got = pa.table({})
    for s in t.snapshots():
        want = t.scan(snapshot_id=s.snapshot_id).to_arrow().sort_by("id")
        got = pa.Table.from_batches(list(hydrofeed.read(path, snapshot=s.snapshot_id))).sort_by("id")
        assert got.to_pylist() == want.to_pylist(), s.snapshot_id
    return got


def test_imported_files_without_field_ids_read_by_the_name_mapping(tmp_path: Path) -> None:
    """A file written without field ids (pyarrow) added to the table as it is (`add_files`,
    which records the table's name mapping), then the column renamed and widened and a file
    appended: every snapshot reads as pyiceberg scans it, the imported file's columns found by
    the names the mapping keeps."""
    import pyarrow.parquet as pq
    from pyiceberg.types import LongType

    c = catalog(tmp_path / "cat")
    t = c.create_table("db.imp", schema=pa.schema([("id", pa.int64()), ("x", pa.int32())]))
    pq.write_table(pa.table({"id": pa.array(range(100), pa.int64()),
                             "x": pa.array([i * 7 for i in range(100)], pa.int32())}), tmp_path / "imp.parquet")
    t.add_files([str(tmp_path / "imp.parquet")])
    t = c.load_table("db.imp")
    with t.update_schema() as u:
        u.update_column("x", LongType())
        u.rename_column("x", "x2")
    t = c.load_table("db.imp")
    t.append(pa.table({"id": pa.array(range(100, 150), pa.int64()),
                       "x2": pa.array([i * 10**10 for i in range(100, 150)], pa.int64())}))
    t = c.load_table("db.imp")
    got = every_snapshot_as_pyiceberg_scans_it(t)
    assert got.schema.field("x2").type == pa.int64() and got.num_rows == 150


def test_imported_nested_columns_read_by_the_name_mapping(tmp_path: Path) -> None:
    """A file without field ids holding a struct, a list of structs and a map, added as it is
    (the name mapping then names every nested field too); a nested field renamed, another added,
    and a file appended with field ids: every snapshot reads as pyiceberg scans it, the imported
    file's nested fields found by the names the mapping keeps. Before, a nested column of such
    a file was refused ("the name mapping of nested fields is not read yet")."""
    import pyarrow.parquet as pq
    from pyiceberg.types import LongType

    st = pa.struct([("a", pa.int32()), ("b", pa.string())])
    ls = pa.list_(pa.struct([("u", pa.int64()), ("v", pa.float64())]))
    mp = pa.map_(pa.string(), pa.int32())

    def nested(lo: int, hi: int, a: str = "a") -> pa.Table:
        r = range(lo, hi)
        return pa.table({
            "id": pa.array(r, pa.int64()),
            "st": pa.array([{a: i, "b": f"b{i}"} if i % 5 else None for i in r],
                           pa.struct([(a, pa.int32()), ("b", pa.string())])),
            "ls": pa.array([[{"u": i, "v": i / 4}, {"u": -i, "v": None}] if i % 3 else [] for i in r], ls),
            "m": pa.array([[(f"k{i}", i), ("z", None)] if i % 4 else None for i in r], mp),
        })

    c = catalog(tmp_path / "cat")
    t = c.create_table("db.nest", schema=pa.schema([("id", pa.int64()), ("st", st), ("ls", ls), ("m", mp)]))
    pq.write_table(nested(0, 60), tmp_path / "imp.parquet")
    t.add_files([str(tmp_path / "imp.parquet")])
    t = c.load_table("db.nest")
    with t.update_schema() as u:
        u.rename_column("st.a", "a2")
        u.add_column(("st", "c"), LongType())
    t = c.load_table("db.nest")
    more = nested(60, 90, a="a2")
    more = more.set_column(1, "st", pa.array(
        [{"a2": i, "b": f"b{i}", "c": i * 10} for i in range(60, 90)], t.schema().as_arrow().field("st").type))
    t.append(more.cast(t.schema().as_arrow()))
    t = c.load_table("db.nest")
    got = every_snapshot_as_pyiceberg_scans_it(t)
    by_id = {r["id"]: r for r in got.to_pylist()}
    assert by_id[7]["st"] == {"a2": 7, "b": "b7", "c": None}
    assert by_id[7]["ls"] == [{"u": 7, "v": 1.75}, {"u": -7, "v": None}]
    assert by_id[61]["st"] == {"a2": 61, "b": "b61", "c": 610}


def test_columns_added_with_a_default_read_it_in_older_files(tmp_path: Path) -> None:
    """Columns added with a default (``initial-default``: the value of every row of the files
    written before): long, string, date, double, boolean, then a file appended with values of
    its own; every snapshot reads as pyiceberg scans it, the old rows holding the defaults.
    Before, such a column was refused ("an initial default ... not filled in yet")."""
    from pyiceberg.types import BooleanType, DateType, DoubleType, LongType, StringType

    c = catalog(tmp_path / "cat")
    t = c.create_table("db.dflt", schema=rows(0, 1).schema)
    t.append(rows(0, 50))
    with t.update_schema() as u:
        u.add_column("k", LongType(), default_value=42)
        u.add_column("s", StringType(), default_value="dflt")
        u.add_column("d", DateType(), default_value="2026-01-02")
        u.add_column("f", DoubleType(), default_value=1.5)
        u.add_column("b", BooleanType(), default_value=True)
    t = c.load_table("db.dflt")
    new = pa.table({
        "id": pa.array(range(50, 60), pa.int64()),
        "x": pa.array([i * 0.5 for i in range(50, 60)], pa.float64()),
        "k": pa.array(range(10), pa.int64()),
        "s": pa.array([f"s{i}" for i in range(10)], pa.string()),
        "d": pa.array([dt.date(2025, 1, 1 + i) for i in range(10)], pa.date32()),
        "f": pa.array([None] * 10, pa.float64()),
        "b": pa.array([False] * 10, pa.bool_()),
    }).cast(t.schema().as_arrow())
    t.append(new)
    t = c.load_table("db.dflt")
    path = metadata_file(t)
    got = every_snapshot_as_pyiceberg_scans_it(t)
    old = got.to_pylist()[0]
    assert (old["k"], old["s"], old["d"], old["f"], old["b"]) == (42, "dflt", dt.date(2026, 1, 2), 1.5, True)
    assert got.to_pylist()[55]["k"] == 5 and got.to_pylist()[55]["f"] is None
    # Projected alone, the default still fills the old files' rows.
    only = pa.Table.from_batches(list(hydrofeed.read(path, columns=["s", "id"]))).sort_by("id")
    assert only.column("s").to_pylist()[:50] == ["dflt"] * 50


def region_rows(region: str | None, day: int, lo: int) -> pa.Table:
    ids = range(lo, lo + 500)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "region": pa.array([region] * 500, pa.string()),
        "day": pa.array([dt.date(2026, 1, day)] * 500, pa.date32()),
        "x": pa.array([i * 0.5 for i in ids], pa.float64()),
    })


def test_partition_summaries_rule_manifests_out_unread(hf_bin: str, tmp_path: Path) -> None:
    """A table partitioned by `region` and `day` (identity), five appends (one manifest each:
    eu, us, ap, a null region, us again): a filter on them leaves out the manifests whose
    summaries in the manifest list (bounds, contains_null) exclude it, before they are read;
    those manifests then removed, the filtered read and `launch` still give pyiceberg's scan
    under the same filter, while the read without it fails on a missing manifest."""
    from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, IsNull, LessThan, Or
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform

    c = catalog(tmp_path / "cat")
    schema = region_rows("eu", 1, 0).schema
    t = c.create_table("db.p", schema=schema)
    with t.update_spec() as u:
        u.add_field("region", IdentityTransform(), "region")
        u.add_field("day", IdentityTransform(), "day")
    t = c.load_table("db.p")
    assert [f.name for f in t.spec().fields] == ["region", "day"]
    added: dict[str, list[str]] = {}
    seen: set[str] = set()
    for n, (region, day) in enumerate([("eu", 1), ("us", 2), ("ap", 3), (None, 4), ("us", 5)]):
        t.append(region_rows(region, day, n * 1000))
        t = c.load_table("db.p")
        paths = {m.manifest_path for m in t.current_snapshot().manifests(t.io)}
        added.setdefault(str(region), []).extend(sorted(paths - seen))
        seen = paths
    assert len(seen) == 5 and all(len(v) >= 1 for v in added.values()), added
    path = metadata_file(t)
    cases = [
        ("region = 'us'", ["eu", "ap", "None"], EqualTo("region", "us")),
        ("region IS NULL", ["eu", "us", "ap"], IsNull("region")),
        # The null region's manifest holds no other value: its comparisons are never true.
        ("day >= DATE '2026-01-03' AND region <> 'us'", ["eu", "us", "None"],
         And(GreaterThanOrEqual("day", "2026-01-03"), Or(LessThan("region", "us"),
                                                         GreaterThanOrEqual("region", "us0")))),
        # x is no partition column: every manifest is read.
        ("x < 100", [], LessThan("x", 100)),
    ]
    env = dict(os.environ, HYDROFEED_LOG="info")
    for text, out, expr in cases:
        r = subprocess.run([hf_bin, "inspect", path, "--json", "--filter", text],
                           capture_output=True, text=True, check=True, env=env)
        ruled = sum(len(added[k]) for k in out)
        assert f"{ruled} of 5 manifests ruled out" in r.stderr, (text, r.stderr[-2000:])
        assert json.loads(r.stdout)["filter"]["manifests_ruled_out"] == ruled, (text, r.stdout)
        want = sorted(t.scan(row_filter=expr).to_arrow().column("id").to_pylist())
        assert ours(path, filter=text) == want and want, text
    # The manifests of other regions removed: `region = 'us'` never opens them.
    want = sorted(t.scan(row_filter=EqualTo("region", "us")).to_arrow().column("id").to_pylist())
    for k in ("eu", "ap", "None"):
        for m in added[k]:
            Path(m.removeprefix("file://")).unlink()
    assert ours(path, filter="region = 'us'") == want
    with pytest.raises(FileNotFoundError, match=r"-m0\.avro"):
        ours(path)
    # The coordinator and the feeders plan alike: each passing row once, none read elsewhere.
    r = launch(hf_bin, Path(path), tmp_path / "l", 2, "--filter", "region = 'us'",
               "--remainder", "pad", batch=50, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    seen = all_ids(tmp_path / "l", 2)
    assert set(seen) == set(want) and len(seen) - len(want) < 100
