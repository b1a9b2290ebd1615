"""Filters (`--filter`, `filter=`): the rows a SQL predicate holds for, compared with pyarrow's
own dataset filter over the same Hive-partitioned Parquet table; `launch` under a filter,
exactly once with equal steps; a resume under another filter refused."""

from __future__ import annotations

import datetime
import decimal
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import hydrofeed

HERE = Path(__file__).resolve().parent
TRAINER = str(HERE / "launch_trainer.py")
REGIONS = {"eu": 0, "us": 3000, "ap": 6000}
PER_REGION = 3000


def region_rows(lo: int, n: int) -> pa.Table:
    ids = list(range(lo, lo + n))
    score = [None if i % 11 == 4 else (math.nan if i % 97 == 5 else float(i % 13) / 2) for i in ids]
    name = [None if i % 17 == 3 else f"n{i % 6}" for i in ids]
    day = [f"2026-01-{1 + i % 28:02d}" for i in ids]
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "score": pa.array(score, pa.float64()),
            "name": pa.array(name, pa.string()).dictionary_encode(),
            "day": pa.array(day, pa.string()).cast(pa.date32()),
            "small": pa.array([i % 120 - 60 for i in ids], pa.int8()),
            "amount": pa.array([(i % 1000) * 25 for i in ids], pa.decimal128(9, 2)),
        }
    )


@pytest.fixture(scope="module")
def table_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`region=eu|us|ap/` with 2 Parquet files each, row groups of 500 rows, ids sorted."""
    d = tmp_path_factory.mktemp("filtered")
    for region, lo in REGIONS.items():
        sub = d / f"region={region}"
        sub.mkdir()
        half = PER_REGION // 2
        for k in range(2):
            pq.write_table(
                region_rows(lo + k * half, half), sub / f"part-{k}.parquet", row_group_size=500
            )
    return d


def reference(table_dir: Path, expr: pc.Expression) -> list[int]:
    """The ids pyarrow's dataset keeps under `expr` (rows whose predicate is null are dropped)."""
    t = ds.dataset(table_dir, format="parquet", partitioning="hive").to_table(filter=expr)
    return sorted(t.column("id").to_pylist())


def ours(table_dir: Path, text: str, **kw) -> tuple[list[int], hydrofeed.Reader]:
    r = hydrofeed.read(str(table_dir), filter=text, **kw)
    ids: list[int] = []
    for b in r:
        ids.extend(b.column(b.schema.get_field_index("id")).to_pylist())
    return sorted(ids), r


F = pc.field
CASES = [
    ("id >= 150 AND id < 2600", (F("id") >= 150) & (F("id") < 2600)),
    # NaN orders above every number (as Spark and PostgreSQL order it; IEEE comparisons, which
    # pyarrow makes, say false): the reference says so explicitly.
    ("score > 2.5 OR name IS NULL", (F("score") > 2.5) | pc.is_nan(F("score")) | F("name").is_null()),
    ("region IN ('eu', 'ap') AND NOT score < 1", F("region").isin(["eu", "ap"]) & ~(F("score") < 1)),
    ("name <> 'n1' AND name <> 'n2'", (F("name") != "n1") & (F("name") != "n2")),
    ("day BETWEEN DATE '2026-01-05' AND '2026-01-07'",
     (F("day") >= pa.scalar(datetime.date(2026, 1, 5))) & (F("day") <= pa.scalar(datetime.date(2026, 1, 7)))),
    ("small < -50 OR small >= 1000", (F("small") < -50) | (F("small") >= 1000)),
    ("amount >= 240.25", F("amount") >= pa.scalar(decimal.Decimal("240.25"), pa.decimal128(9, 2))),
    ("region = 'us' AND id < 3000", (F("region") == "us") & (F("id") < 3000)),
    ("score IS NOT NULL AND score >= 6", F("score").is_valid() & ((F("score") >= 6) | pc.is_nan(F("score")))),
    ("score < 1", (F("score") < 1) & ~pc.is_nan(F("score"))),
]


@pytest.mark.parametrize("text,expr", CASES, ids=[c[0] for c in CASES])
def test_read_keeps_the_rows_pyarrow_keeps(table_dir: Path, text: str, expr: pc.Expression) -> None:
    want = reference(table_dir, expr)
    got, r = ours(table_dir, text)
    assert got == want
    assert r.num_rows == len(want), "the plan counts the rows that pass"


def test_the_projection_need_not_hold_the_filters_columns(table_dir: Path) -> None:
    r = hydrofeed.read(str(table_dir), columns=["id"], filter="region = 'us' AND score = 3")
    assert r.schema.names == ["id"]
    got = sorted(i for b in r for i in b.column(0).to_pylist())
    assert got == reference(table_dir, (F("region") == "us") & (F("score") == 3))
    assert got, "the case selects rows"


def test_what_a_filter_cannot_mean_is_a_value_error(table_dir: Path) -> None:
    with pytest.raises(ValueError, match='no column "nope"'):
        hydrofeed.read(str(table_dir), filter="nope = 1")
    with pytest.raises(ValueError, match="compared with 'x'"):
        hydrofeed.read(str(table_dir), filter="id = 'x'")
    with pytest.raises(ValueError, match="filter"):
        hydrofeed.read(str(table_dir), filter="id >")


def inspect(hf_bin: str, table_dir: Path, text: str) -> dict:
    r = subprocess.run([hf_bin, "inspect", str(table_dir), "--json", "--filter", text],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def test_partitions_and_statistics_rule_out_what_they_can(hf_bin: str, table_dir: Path) -> None:
    # 3 regions x 2 files x 3 row groups of 500 = 18 units; ids 3100..3399 are in one.
    f = inspect(hf_bin, table_dir, "region = 'us' AND id >= 3100 AND id < 3400")["filter"]
    assert f["units"] == 18
    assert f["units_none_by_stats"] == 17
    assert f["units_counted"] + f["units_all_by_stats"] == 1
    assert f["rows_after"] == 300
    # A predicate no statistic decides is counted on its columns alone.
    f = inspect(hf_bin, table_dir, "name = 'n3'")["filter"]
    assert f["units_counted"] == 18
    assert 0 < f["count_bytes"] < sum(p.stat().st_size for p in table_dir.rglob("*.parquet"))


def launch(hf_bin: str, data: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    out.mkdir(parents=True, exist_ok=True)
    e = dict(os.environ, OUT=str(out))
    return subprocess.run(
        [hf_bin, "launch", "--workers", "2", "--input", str(data), "--batch-size", "32", *extra,
         "--", sys.executable, TRAINER],
        env=e, capture_output=True, text=True, timeout=180,
    )


def test_launch_under_a_filter_feeds_each_passing_row_once_with_equal_steps(
    hf_bin: str, table_dir: Path, tmp_path: Path
) -> None:
    text = "region <> 'eu' AND (score > 3 OR id < 3300)"
    want = set(reference(table_dir, (F("region") != "eu")
                         & ((F("score") > 3) | pc.is_nan(F("score")) | (F("id") < 3300))))
    state = tmp_path / "state.json"
    r = launch(hf_bin, table_dir, tmp_path / "out", "--epochs", "2", "--state-out", str(state))
    assert r.returncode == 0, r.stderr[-3000:]  # without a filter, as a control
    r = launch(hf_bin, table_dir, tmp_path / "f", "--epochs", "2", "--filter", text,
               "--state-out", str(state))
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"filter {text!r}".replace("'", '"') in r.stderr.replace("'", '"'), r.stderr[-2000:]
    steps: dict[int, list[int]] = {}
    seen: dict[int, list[int]] = {0: [], 1: []}
    for k in range(2):
        recs = [json.loads(x) for x in (tmp_path / "f" / f"rank-{k}.jsonl").read_text().splitlines()]
        st = [x for x in recs if "ids" in x]
        steps[k] = [sum(1 for s in st if s["epoch"] == e) for e in (0, 1)]
        for s in st:
            assert len(s["ids"]) == 32
            seen[s["epoch"]].extend(s["ids"])
    assert steps[0] == steps[1], steps
    per_epoch = len(want) // 64 * 64
    for e in (0, 1):
        assert len(seen[e]) == len(set(seen[e])) == per_epoch, "each row at most once, all steps full"
        assert set(seen[e]) <= want, "only rows that pass"
    # The state records the filter: a resume under another one is refused, naming both.
    saved = json.loads(state.read_text())
    assert saved["input"]["filter"] == text
    r = launch(hf_bin, table_dir, tmp_path / "g", "--resume", str(state), "--filter", "id < 5")
    assert r.returncode != 0
    assert "resume with the same filter" in r.stderr and "id < 5" in r.stderr, r.stderr[-2000:]


def test_orc_stripe_statistics_rule_out_stripes(hf_bin: str, tmp_path: Path) -> None:
    """ORC written by pyarrow (stripe statistics in its metadata): stripes whose bounds rule the
    predicate out are not read; the rows kept are those pyarrow's dataset filter keeps."""
    import pyarrow.orc as po

    for k in range(3):
        ids = list(range(k * 4000, (k + 1) * 4000))
        t = pa.table({"id": pa.array(ids, pa.int64()),
                      "name": pa.array([None if i % 9 == 0 else f"n{i % 5}" for i in ids]),
                      "day": pa.array([datetime.date(2026, 1, 1 + i % 28) for i in ids])})
        po.write_table(t, tmp_path / f"part-{k}.orc")
    text = "id >= 4100 AND id < 4300 AND name IS NOT NULL AND day > DATE '2026-01-03'"
    f = inspect(hf_bin, tmp_path, text)["filter"]
    assert f["units"] == 3 and f["units_none_by_stats"] == 2, f
    r = hydrofeed.read(str(tmp_path), filter=text)
    got = sorted(i for b in r for i in b.column(0).to_pylist())
    expr = ((F("id") >= 4100) & (F("id") < 4300) & F("name").is_valid()
            & (F("day") > pa.scalar(datetime.date(2026, 1, 3))))
    want = sorted(ds.dataset(tmp_path, format="orc").to_table(filter=expr).column("id").to_pylist())
    assert got == want and got


def test_a_delta_tables_file_statistics_rule_files_out_unopened(hf_bin: str, tmp_path: Path) -> None:
    """A Delta table written by delta-rs (statistics in every `add`): files whose `minValues` /
    `maxValues` rule the predicate out are not opened; the rows are delta-rs' own, filtered."""
    deltalake = pytest.importorskip("deltalake")
    table = tmp_path / "t"
    for k in range(4):
        ids = pa.array(range(k * 1000, (k + 1) * 1000), pa.int64())
        t = pa.table({"id": ids, "name": pa.array([f"n{i % 3}" for i in range(1000)])})
        deltalake.write_deltalake(str(table), t, mode="append")
    text = "id >= 2100 AND id < 2200 AND name <> 'n0'"
    f = inspect(hf_bin, table, text)["filter"]
    assert f["files_ruled_out"] == 3, f
    want = sorted(
        deltalake.DeltaTable(str(table)).to_pyarrow_table()
        .filter((F("id") >= 2100) & (F("id") < 2200) & (F("name") != "n0")).column("id").to_pylist()
    )
    got, r = ours(table, text)
    assert got == want and len(got) > 50


def _sorted_one_group(path: Path, rows: int, page_index: bool) -> None:
    """One row group of `rows` rows sorted by id, pages of about 8 KiB (as Spark writes: one
    large row group, many pages), with or without the page index. Plain encoding: a dictionary
    page (read whole wherever any page of its chunk is) would hold every id here."""
    ids = list(range(rows))
    t = pa.table({
        "id": pa.array(ids, pa.int64()),
        "score": pa.array([None if i % 7 == 0 else float(i % 50) for i in ids], pa.float64()),
        "x": pa.array([[float(i)] * 16 for i in ids], pa.list_(pa.float32(), 16)),
    })
    pq.write_table(t, path, row_group_size=rows, data_page_size=8 << 10, write_page_index=page_index,
                   compression="snappy", use_dictionary=False)


@pytest.mark.parametrize("text,expr,cols", [
    ("id >= 50000 AND id < 50500", (F("id") >= 50000) & (F("id") < 50500), ["id"]),
    ("id < 300 OR id >= 79900", (F("id") < 300) | (F("id") >= 79900), ["id"]),
    ("id BETWEEN 20000 AND 20999 AND score IS NOT NULL AND score < 10",
     (F("id") >= 20000) & (F("id") <= 20999) & F("score").is_valid() & (F("score") < 10), ["id", "score"]),
    # No page of `score` (unsorted) rules it out, nor its row group: NaN, left out of a float
    # column's maxima, would pass `> 100`. Counted whole either way.
    ("score > 100", F("score") > 100, ["score"]),
])
def test_page_statistics_leave_pages_unread(
    hf_bin: str, tmp_path: Path, text: str, expr: pc.Expression, cols: list[str]
) -> None:
    """Inside one row group, the pages whose column-index statistics rule the predicate out are
    neither counted nor read: the counting pass reads a small part of the filter's column chunk
    where the data is sorted on it, and the rows kept are pyarrow's, with and without a page
    index (a file without one is counted whole, as before)."""
    rows = 80_000
    for page_index in (True, False):
        f = tmp_path / f"sorted-{page_index}.parquet"
        _sorted_one_group(f, rows, page_index)
        want = sorted(pq.read_table(f).filter(expr).column("id").to_pylist())
        got: list[int] = []
        x_ok = True
        for b in hydrofeed.read(str(f), filter=text):
            ids = b.column(b.schema.get_field_index("id")).to_pylist()
            got.extend(ids)
            xs = b.column(b.schema.get_field_index("x")).to_pylist()
            x_ok = x_ok and all(x == [float(i)] * 16 for i, x in zip(ids, xs))
        assert sorted(got) == want and x_ok
        cost = inspect(hf_bin, f, text)["filter"]
        assert cost["rows_after"] == len(want)
        md = pq.ParquetFile(f).metadata.row_group(0)
        chunks = sum(md.column(j).total_compressed_size for j in range(md.num_columns)
                     if md.column(j).path_in_schema in cols)
        assert cost["units_counted"] == 1, cost
        if page_index and "id" in cols:
            # The counting pass fetched the page index and the few pages that may pass.
            assert cost["count_bytes"] < 0.2 * chunks, (cost, chunks)
        else:
            assert cost["count_bytes"] >= chunks, (cost, chunks)
