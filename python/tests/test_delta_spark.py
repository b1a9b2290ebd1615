"""Delta tables written by Spark with Delta Lake's own writer (``delta-spark`` from Maven at
PySpark's version) read as Spark reads them: deletion vectors (``DELETE``/``UPDATE`` with
``delta.enableDeletionVectors``) leave out exactly the rows Spark leaves out, at every version,
partitioned and not, through ``hydrofeed.read`` and through ``launch`` with equal steps.

Without PySpark (or Java) the tests are skipped, except on CI (``CI=true``), where they fail.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import hydrofeed
from helpers import spark_written
from test_launch import all_ids, launch

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

HERE = Path(__file__).resolve().parent
WRITER = HERE / "spark_delta_writer.py"


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    return spark_written(WRITER, tmp_path_factory.mktemp("spark_delta"), "the Spark writer")


def ids(path: Path, **kw) -> list[int]:
    r = hydrofeed.read(str(path), columns=["id"], **kw)
    got = sorted(i for b in r for i in b.column(0).to_pylist())
    assert r.num_rows == len(got), "the plan counts the rows left"
    return got


@pytest.mark.parametrize("name", ["dv_plain", "dv_partitioned"])
def test_every_version_reads_the_rows_spark_reads(tables: tuple[Path, dict], name: str) -> None:
    out, done = tables
    table = out / name
    assert any(p.name.startswith("deletion_vector_") for p in table.rglob("*.bin")), \
        "the writer made deletion vectors"
    for version, want in done[name].items():
        assert ids(table, snapshot=int(version)) == want, f"version {version}"


def test_a_filter_over_deleted_rows(tables: tuple[Path, dict]) -> None:
    out, done = tables
    newest = done["dv_partitioned"][str(max(map(int, done["dv_partitioned"])))]
    got = ids(out / "dv_partitioned", filter="k = 1 AND id < 12000")
    assert got == [i for i in newest if i % 3 == 1 and i < 12000]


def test_launch_feeds_each_row_left_once(hf_bin: str, tables: tuple[Path, dict], tmp_path: Path) -> None:
    out, done = tables
    newest = done["dv_plain"][str(max(map(int, done["dv_plain"])))]
    r = launch(hf_bin, out / "dv_plain", tmp_path, 2, "--remainder", "pad", batch=50, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    seen = all_ids(tmp_path, 2)
    assert set(seen) == set(newest)
    assert len(seen) - len(newest) < 100, "only the last step of each rank is padded"


def test_widened_types_read_as_spark_reads_them(tables: tuple[Path, dict]) -> None:
    """A table whose column types were widened after files were written (Delta's type
    widening): every version reads the values Spark reads, older files cast to the table's
    types."""
    out, done = tables
    for version, want in done["widened_rows"].items():
        t = pa.Table.from_batches(list(hydrofeed.read(str(out / "widened"), snapshot=int(version))))
        got = sorted(list(r) for r in zip(*(t.column(c).to_pylist() for c in ("id", "n", "f", "s"))))
        assert got == want, f"version {version}"
    assert [t.schema.field(c).type for c in ("n", "f", "s")] == [pa.int64(), pa.float64(), pa.int32()]
