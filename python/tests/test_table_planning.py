"""A table's data files planned from the table's metadata, unread (docs/formats.md, "Tables"):
an Iceberg table (pyiceberg: appends, a copy-on-write delete, files of several row groups) and
a Delta table under column mapping (deltalake) record every data file's row count, so their
plans open no data file: ``hydrofeed inspect --json`` reports what planning read, no more than
the table's metadata files. The rows read are those pyiceberg's and delta-rs's reads give, and
``launch --workers 2`` feeds each once. A file larger than a split is still planned from its
footer (its row groups cut into splits). A data file rewritten in place with other rows than the
table committed is refused by name when it is opened, never read with other counts.

Before: every data file's footer was read at planning, by the coordinator and again by every
feeder (each plans the input itself); and a file rewritten in place was read with its new rows.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hydrofeed

from test_launch import all_ids, launch, no_leftovers

pytest.importorskip("pyiceberg")
pytest.importorskip("deltalake")


def rows(a: int, b: int) -> pa.Table:
    return pa.table({
        "id": pa.array(range(a, b), pa.int64()),
        "x": pa.array([float(i) * 0.5 for i in range(a, b)], pa.float64()),
        "s": pa.array([f"s{i % 13}" for i in range(a, b)], pa.string()),
    })


@pytest.fixture(scope="module")
def iceberg(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    """Appends of 1,000 rows in row groups of 300 (files of 4 row groups), a delete of id < 500
    (copy-on-write: a file rewritten), one more append."""
    from pyiceberg.catalog.sql import SqlCatalog

    root = tmp_path_factory.mktemp("iceberg")
    c = SqlCatalog("t", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/wh")
    c.create_namespace("db")
    t = c.create_table("db.t", schema=rows(0, 1).schema,
                       properties={"write.parquet.row-group-limit": "300"})
    for k in range(4):
        t.append(rows(k * 1000, (k + 1) * 1000))
    t.delete("id < 500")
    t.append(rows(9000, 9700))
    return c.load_table("db.t")


def metadata_file(t) -> str:  # noqa: ANN001
    return t.metadata_location.removeprefix("file://")


def inspect(hf_bin: str, path: str, *flags: str) -> dict:
    r = subprocess.run([hf_bin, "inspect", path, "--json", *flags], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def files_under(d: Path, suffix: str = "") -> list[Path]:
    return [p for p in d.rglob("*") if p.is_file() and p.name.endswith(suffix)]


def ids(path: str | Path, **kw: object) -> list[int]:
    return sorted(pa.Table.from_batches(list(hydrofeed.read(str(path), **kw))).column("id").to_pylist())


def test_an_iceberg_plan_reads_only_the_tables_metadata(hf_bin: str, iceberg) -> None:  # noqa: ANN001
    m = metadata_file(iceberg)
    table_dir = Path(m).parent.parent
    meta = files_under(table_dir / "metadata")
    data = files_under(table_dir / "data", ".parquet")
    live = iceberg.inspect.data_files()
    assert live.num_rows >= 4
    # The live files hold several row groups each: what a footer would have told.
    assert all(pq.ParquetFile(p.removeprefix("file://")).num_row_groups > 1
               for p in live.column("file_path").to_pylist()[:3])
    plan = inspect(hf_bin, m)
    p = plan["planning"]
    assert p["data_files_opened"] == 0 and p["files_opened"] <= len(meta), p
    assert p["bytes_read"] <= sum(f.stat().st_size for f in meta), p
    assert p["bytes_read"] < sum(f.stat().st_size for f in data), p
    assert all(s["unit"] == "file" for s in plan["splits"]), plan["splits"][:3]
    want = sorted(iceberg.scan().to_arrow().column("id").to_pylist())
    assert plan["total_rows"] == len(want)
    # Read: each file's columns found by field id when its split is opened.
    assert ids(m) == want
    assert ids(m, columns=["s", "id"]) == want


def test_a_file_larger_than_a_split_is_planned_from_its_footer(hf_bin: str, iceberg) -> None:  # noqa: ANN001
    m = metadata_file(iceberg)
    plan = inspect(hf_bin, m, "--split-bytes", "2000")
    units = [s["unit"] for s in plan["splits"]]
    assert all(isinstance(u, dict) and "row_groups" in u for u in units), units[:3]
    p = plan["planning"]
    assert p["data_files_opened"] == iceberg.inspect.data_files().num_rows, p
    want = sorted(iceberg.scan().to_arrow().column("id").to_pylist())
    assert plan["total_rows"] == len(want)


def test_launch_feeds_each_row_of_an_unread_plan_once(hf_bin: str, iceberg, tmp_path: Path) -> None:  # noqa: ANN001
    m = metadata_file(iceberg)
    want = sorted(iceberg.scan().to_arrow().column("id").to_pylist())
    for order in ("fixed", "dynamic"):
        out = tmp_path / order
        r = launch(hf_bin, Path(m), out, 2, "--order", order, batch=100, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        got = all_ids(out, 2)
        assert not [i for i, n in Counter(got).items() if n > 1], order
        assert sorted(got) == want, order
    no_leftovers(str(tmp_path))


def test_a_column_mapped_delta_table_plans_from_its_log(hf_bin: str, tmp_path: Path) -> None:
    from deltalake import DeltaTable, QueryBuilder, write_deltalake

    d = tmp_path / "t"
    write_deltalake(str(d), rows(0, 700), configuration={
        "delta.columnMapping.mode": "name", "delta.minReaderVersion": "2", "delta.minWriterVersion": "5"})
    write_deltalake(str(d), rows(700, 1000), mode="append")
    DeltaTable(str(d)).delete("id < 100")
    plan = inspect(hf_bin, str(d))
    log = files_under(d / "_delta_log")
    p = plan["planning"]
    assert p["data_files_opened"] == 0 and p["files_opened"] <= len(log), p
    assert all(s["unit"] == "file" for s in plan["splits"]), plan["splits"][:3]
    t = QueryBuilder().register("t", DeltaTable(str(d))).execute("select id from t")
    want = sorted(pa.table(t.read_all()).column("id").to_pylist())
    assert plan["total_rows"] == len(want) == 900
    assert ids(d) == want


def test_a_delta_table_without_column_mapping_plans_from_its_log(hf_bin: str, tmp_path: Path) -> None:
    """Its files are read through the table's schema (by their columns' own names), so its plan
    opens none of them: delta-rs 1.x writes the first files' strings as ``string`` and a delete's
    rewrite as ``string_view``, both read as the table's ``string``; a column added by a merged
    schema is null in the files written before, as delta-rs reads them. Before, the plan read
    every footer and refused the table ("column "s" is Utf8View here but Utf8 in ...")."""
    from deltalake import DeltaTable, write_deltalake

    d = tmp_path / "t"
    write_deltalake(str(d), rows(0, 400))
    for k in range(1, 4):
        write_deltalake(str(d), rows(k * 400, (k + 1) * 400), mode="append")
    DeltaTable(str(d)).delete("id >= 100 AND id < 150")
    plan = inspect(hf_bin, str(d))
    assert plan["planning"]["data_files_opened"] == 0, plan["planning"]
    assert all(s["unit"] == "file" for s in plan["splits"]), plan["splits"][:3]
    want = DeltaTable(str(d)).to_pyarrow_table().sort_by("id")
    assert plan["total_rows"] == want.num_rows == 1550
    got = pa.Table.from_batches(list(hydrofeed.read(str(d)))).sort_by("id")
    assert got.schema.field("s").type == pa.string()
    assert got.to_pylist() == want.cast(got.schema).to_pylist()
    # A filter the log's statistics decide for every file: none opened either.
    plan = inspect(hf_bin, str(d), "--filter", "id >= 400")
    assert plan["planning"]["data_files_opened"] == 0, plan["planning"]
    assert ids(d, filter="id >= 400") == [i for i in want.column("id").to_pylist() if i >= 400]
    extra = rows(1600, 1700).append_column("k", pa.array(range(100), pa.int64()))
    write_deltalake(str(d), extra, mode="append", schema_mode="merge")
    want = DeltaTable(str(d)).to_pyarrow_table().sort_by("id")
    got = pa.Table.from_batches(list(hydrofeed.read(str(d)))).sort_by("id")
    assert got.column_names == ["id", "x", "s", "k"]
    assert got.to_pylist() == want.cast(got.schema).to_pylist()
    assert got.column("k").null_count == 1550


def test_a_file_rewritten_with_other_rows_is_refused_by_name(tmp_path: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    c = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/wh")
    c.create_namespace("db")
    t = c.create_table("db.r", schema=rows(0, 1).schema)
    t.append(rows(0, 300))
    t.append(rows(300, 600))
    t = c.load_table("db.r")
    files = sorted(t.inspect.data_files().column("file_path").to_pylist())
    victim = files[0].removeprefix("file://")
    # The same columns, with their field ids, one row more than the manifest records.
    old = pq.read_table(victim)
    pq.write_table(pa.concat_tables([old, old.slice(0, 1)]), victim)
    with pytest.raises(hydrofeed.DataError) as e:
        list(hydrofeed.read(metadata_file(t)))
    msg = str(e.value)
    assert victim in msg and "says the file holds 300 rows" in msg and "hold 301" in msg, msg


def test_a_filter_the_tables_statistics_decide_reads_no_file(hf_bin: str, tmp_path: Path) -> None:
    """A table partitioned by ``r``, three appends (a file per partition each): ``r = 'b'``
    passes every row of b's files by their statistics and rules the others out, so planning
    opens no data file; ``id < 1500`` cuts inside the second append's ids (1000-1999), so
    that one file of b is counted by reading it, and only that one."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import And, EqualTo, LessThan
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import DoubleType, LongType, NestedField, StringType

    c = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/wh")
    c.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "x", DoubleType()),
                    NestedField(3, "r", StringType()))
    spec = PartitionSpec(PartitionField(source_id=3, field_id=1000, transform=IdentityTransform(), name="r"))
    t = c.create_table("db.p", schema=schema, partition_spec=spec)
    arrow_schema = t.schema().as_arrow()
    for k in range(3):
        part = pa.table({
            "id": pa.array(range(k * 1000, k * 1000 + 1000), pa.int64()),
            "x": pa.array([i * 0.5 for i in range(k * 1000, k * 1000 + 1000)], pa.float64()),
            "r": pa.array(["abc"[j % 3] for j in range(1000)], pa.string()),
        }).cast(arrow_schema)
        t.append(part)
    t = c.load_table("db.p")
    m = metadata_file(t)
    files = t.inspect.data_files()
    assert files.num_rows == 9
    cases = [
        ("r = 'b'", EqualTo("r", "b"), 0),
        ("r = 'b' AND id < 1500", And(EqualTo("r", "b"), LessThan("id", 1500)), 1),
    ]
    for text, expr, opened in cases:
        plan = inspect(hf_bin, m, "--filter", text)
        assert plan["planning"]["data_files_opened"] == opened, (text, plan["planning"])
        want = sorted(t.scan(row_filter=expr).to_arrow().column("id").to_pylist())
        assert plan["total_rows"] == len(want) and want, text
        assert ids(m, filter=text) == want, text
