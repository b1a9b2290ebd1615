"""Iceberg tables with row-level deletes, written by Iceberg's own Java library
(``spark_iceberg_writer.py``: ``iceberg-spark-runtime`` from Maven in a PySpark JVM), read as
Iceberg's generic reader reads them, value by value, at every snapshot (before and after each
delete): position delete files (format v2, partitioned and not, a data file named by two delete
files, a delete file naming several data files, row groups of about 1,000 rows), deletion
vectors in Puffin files (format v3, a second vector replacing the first), equality delete files
(on one column and on two, an append after one: its rows are newer and stay; of a partitioned
spec, within their partition, null and transformed partition values, and of the unpartitioned
spec after the table's spec changed, everywhere), a filter over deleted rows, ``launch``
feeding each row left once, and resumed after another delete at the saved snapshot.

Before: a live delete file was refused (``a delete file ... is live in this snapshot``); later,
an equality delete file of a partitioned spec (``an equality delete file of a partitioned
spec``).

Without PySpark (or Java) the tests are skipped, except on CI (``CI=true``), where they fail.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

import hydrofeed
from helpers import spark_written
from test_launch import all_ids, dropped, interrupt_after, launch, no_leftovers

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

HERE = Path(__file__).resolve().parent
WRITER = HERE / "spark_iceberg_writer.py"


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    return spark_written(WRITER, tmp_path_factory.mktemp("spark_iceberg"), "the Iceberg writer")


def rows(path: Path, **kw: object) -> list[list]:
    r = hydrofeed.read(str(path), columns=["id", "k", "x"], **kw)
    t = pa.Table.from_batches(list(r))
    got = sorted([list(v) for v in zip(*(t.column(c).to_pylist() for c in ("id", "k", "x")))])
    assert r.num_rows == len(got), "the plan counts the rows left"
    return got


@pytest.mark.parametrize("name", ["pos", "pos_part", "dv", "eq"])
def test_every_snapshot_reads_the_rows_iceberg_reads(tables: tuple[Path, dict], name: str) -> None:
    out, done = tables
    snaps = done[name]["order"]
    assert len(set(len(done[name][s]) for s in snaps)) == len(snaps), "every commit changed the rows"
    for s in snaps:
        assert rows(out / name, snapshot=int(s)) == done[name][s], f"snapshot {s}"
    # The current snapshot (version-hint.text) is the last one.
    assert rows(out / name) == done[name][snaps[-1]]


def test_the_writer_made_delete_files(tables: tuple[Path, dict]) -> None:
    out, _ = tables
    assert list((out / "dv" / "data").glob("*.puffin")), "deletion vectors (Puffin files)"
    # Data files and position delete files are both Parquet: the deletes are the files beyond
    # the data files the appends wrote (4 appended files; 3 delete files).
    assert len(list((out / "pos" / "data").glob("*.parquet"))) == 4 + 3


def test_a_filter_over_deleted_rows(tables: tuple[Path, dict]) -> None:
    out, done = tables
    newest = done["pos_part"][done["pos_part"]["order"][-1]]
    got = rows(out / "pos_part", filter="k = 1 AND id < 6000")
    assert got == [r for r in newest if r[1] == 1 and r[0] < 6000]


def test_equality_deletes_of_a_partitioned_spec_apply_within_their_partition(
    tables: tuple[Path, dict],
) -> None:
    out, done = tables
    d = done["eq_part"]
    snaps = d["order"]
    for s in snaps:
        assert rows(out / "eq_part", snapshot=int(s)) == d[s], f"snapshot {s}"
    assert rows(out / "eq_part") == d[snaps[-1]]
    newest = d[snaps[-1]]
    # Deleted by k = 1 and k = 2 in the partition of row 0 only: other partitions keep both.
    assert {r[1] for r in newest if r[0] % 5 != 0} == {0, 1, 2}
    # The unpartitioned spec's delete (ids % 7 = 0) applies in every partition and to its own
    # spec's older file.
    assert not [r for r in newest if r[0] % 7 == 0]
    # Spec 1's file is in no partition of spec 0: the last delete (k = 2, spec 0) leaves it.
    assert {r[1] for r in newest if r[0] >= 300} == {0, 1, 2}
    # Row 101's partition lost 100..199; rows of those ids elsewhere stay.
    assert [r for r in newest if 100 <= r[0] < 200]
    f = rows(out / "eq_part", filter="k = 1 AND id < 150")
    assert f == [r for r in newest if r[1] == 1 and r[0] < 150]


def test_launch_feeds_each_row_left_once(hf_bin: str, tables: tuple[Path, dict], tmp_path: Path) -> None:
    out, done = tables
    newest = {r[0] for r in done["pos"][done["pos"]["order"][-1]]}
    r = launch(hf_bin, out / "pos", tmp_path, 2, "--remainder", "pad", batch=50, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    seen = all_ids(tmp_path, 2)
    assert set(seen) == newest
    assert len(seen) - len(newest) < 100, "only the last step of each rank is padded"


def test_resume_reads_the_saved_snapshot_with_its_deletes(
    hf_bin: str, tables: tuple[Path, dict], tmp_path: Path,
) -> None:
    """`launch --workers 2` over the metadata file of the snapshot after the first position
    delete, Ctrl-C mid-epoch; the resume over the table's newest metadata file (another delete
    committed since): the saved snapshot's rows, with its deletes, once over both runs; the
    rows the later delete removed are among them."""
    out, done = tables
    d = done["pos_resume"]
    _, first_delete, later = d["order"]
    want = {r[0] for r in d[first_delete]}
    gone_later = want - {r[0] for r in d[later]}
    assert gone_later and len(want) == 12_000 - 1_200
    state = tmp_path / "state.json"
    rc, err = interrupt_after(hf_bin, Path(d["metadata"][first_delete]), tmp_path / "a", state, 50, 15)
    assert rc == 130, err[-3000:]
    first = all_ids(tmp_path / "a", 2)
    newest = Path(d["metadata"][later])
    r = launch(hf_bin, newest, tmp_path / "b", 2, "--resume", str(state), batch=None, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "at its saved version" in r.stderr, r.stderr[-3000:]
    both = first + all_ids(tmp_path / "b", 2)
    twice = [i for i, n in Counter(both).items() if n > 1]
    assert not twice, twice[:10]
    assert set(both) <= want, sorted(set(both) - want)[:10]
    assert len(want - set(both)) == dropped(r.stderr)
    assert set(both) & gone_later, "the saved snapshot's rows, not the newest's"
    no_leftovers(str(tmp_path))
