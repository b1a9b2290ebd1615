"""Files written by Spark itself read as Spark reads them, value by value: the writer x format x
option matrix (``test_spark_files.py`` holds the first ORC cases).

One Spark process (``spark_files_writer.py``) writes every dataset under a JVM zone
(Asia/Kolkata) and a session zone (America/Los_Angeles) that are neither UTC nor each other,
and reads each back with Spark; the tests read the same directories with ``hydrofeed.read`` and
compare instants (epoch microseconds) and days, never wall-clock strings: ORC with zlib, snappy
and zstd, and once with a JVM zone that has daylight saving time; Parquet with INT96,
TIMESTAMP_MICROS and TIMESTAMP_MILLIS, each under the LEGACY and the CORRECTED rebase mode;
Avro through ``spark-avro`` under both rebase modes.
The values reach across daylight-saving changes, historical offsets, 1900, the Gregorian
cutover of 1582 and year 1, with nulls; the Parquet and Avro tables hold decimals 9/18/38, a
map, a struct and a Hive partition directory with a null value.

Without PySpark (or Java) the tests are skipped, except on CI (``CI=true``), where they fail.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import hydrofeed

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

HERE = Path(__file__).resolve().parent
WRITER = HERE / "spark_files_writer.py"
ORC = ["orc_zlib", "orc_snappy", "orc_zstd", "orc_dst_jvm", "orc_modern"]
PARQUET = [
    f"parquet_{t}_{m}" for t in ("int96", "timestamp_micros", "timestamp_millis") for m in ("legacy", "corrected")
]
AVRO = ["avro_legacy", "avro_corrected"]


def _unavailable(why: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"the Spark writer cannot run on CI: {why}")
    pytest.skip(why)


@pytest.fixture(scope="module")
def spark_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """Runs the Spark writer once for the module: the output directory and its ``done.json``."""
    try:
        import pyspark  # noqa: F401
    except ImportError as e:
        _unavailable(f"PySpark is not installed ({e})")
    again = os.environ.get("HYDROFEED_TEST_SPARK_FILES")
    if again and (Path(again) / "done.json").exists():
        # A directory an earlier run wrote (while working on the readers: Spark takes a while).
        with open(Path(again) / "done.json") as f:
            return Path(again), json.load(f)
    out = tmp_path_factory.mktemp("spark_files")
    env = dict(os.environ, TZ="Asia/Kolkata", SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    try:
        p = subprocess.run([sys.executable, str(WRITER), str(out)], env=env, capture_output=True, text=True, timeout=540)
    except FileNotFoundError as e:
        _unavailable(str(e))
    if p.returncode != 0:
        if "JAVA_HOME" in p.stderr or "java: not found" in p.stderr:
            _unavailable("no Java for Spark: " + p.stderr[-500:])
        pytest.fail(f"the Spark writer failed (exit {p.returncode}):\n{p.stderr[-6000:]}")
    with open(out / "done.json") as f:
        return out, json.load(f)


def _micros(arr: pa.Array) -> list[int | None]:
    """A timestamp array as epoch microseconds (floor), whatever its unit and zone."""
    mul, div = {"s": (1_000_000, 1), "ms": (1000, 1), "us": (1, 1), "ns": (1, 1000)}[arr.type.unit]
    raw = arr.cast(pa.int64()).to_pylist()
    return [None if v is None else v * mul // div for v in raw]


def _plain(arr: pa.Array) -> list[Any]:
    """An Arrow array as comparable Python values: timestamps as epoch microseconds, dates as
    epoch days, decimals as plain strings, structs as dicts, lists as lists, maps as lists of
    pairs."""
    t = arr.type
    if pa.types.is_timestamp(t):
        return _micros(arr)
    if pa.types.is_date32(t):
        return arr.cast(pa.int32()).to_pylist()
    if pa.types.is_decimal(t):
        return [None if v is None else format(v, "f") for v in arr.to_pylist()]
    if pa.types.is_struct(t):
        fields = {t.field(i).name: _plain(arr.field(i)) for i in range(t.num_fields)}
        valid = arr.is_valid().to_pylist()
        return [{k: v[i] for k, v in fields.items()} if valid[i] else None for i in range(len(arr))]
    if pa.types.is_map(t):
        keys, items = _plain(arr.keys), _plain(arr.items)
        offs = arr.offsets.to_pylist()
        valid = arr.is_valid().to_pylist()
        return [
            list(zip(keys[offs[i] : offs[i + 1]], items[offs[i] : offs[i + 1]])) if valid[i] else None
            for i in range(len(arr))
        ]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        values = _plain(arr.values)
        offs = arr.offsets.to_pylist()
        valid = arr.is_valid().to_pylist()
        return [values[offs[i] : offs[i + 1]] if valid[i] else None for i in range(len(arr))]
    return arr.to_pylist()


def _hydrofeed_rows(path: Path, **opts: Any) -> dict[int, dict[str, Any]]:
    """Every row ``hydrofeed.read`` yields, by id, columns as ``_plain`` makes them."""
    batches = list(hydrofeed.read(str(path), **opts))
    table = pa.Table.from_batches(batches).combine_chunks()
    cols = {name: _plain(table.column(name).combine_chunks()) for name in table.column_names}
    return {cols["id"][i]: {k: v[i] for k, v in cols.items()} for i in range(table.num_rows)}


def _spark_rows(out: Path, name: str) -> dict[int, dict[str, Any]]:
    with ipc.open_file(out / f"{name}.spark.arrow") as r:
        table = r.read_all()
    cols = {n: _plain(table.column(n).combine_chunks()) for n in table.column_names}
    return {cols["id"][i]: {k: v[i] for k, v in cols.items()} for i in range(table.num_rows)}


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    """hydrofeed's row in the shape of the Spark side's (``s.t`` -> ``s_t``)."""
    out = dict(row)
    s = out.pop("s", None)
    out["s_t"] = None if s is None else s["t"]
    out["s_d"] = None if s is None else s["d"]
    if out.get("part") is not None:
        out["part"] = str(out["part"])
    return out


def _show(v: Any, col: str) -> str:
    """A value for a failure message: instants and days also as dates."""
    try:
        if col in ("ts", "s_t") and v is not None:
            return f"{v} ({dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=v)} UTC)"
        if col in ("d", "s_d") and v is not None:
            return f"{v} ({dt.date(1970, 1, 1) + dt.timedelta(days=v)})"
    except OverflowError:
        pass
    return repr(v)


def _compare(spark: dict[int, dict[str, Any]], ours: dict[int, dict[str, Any]]) -> None:
    assert sorted(ours) == sorted(spark), "hydrofeed and Spark read different ids"
    wrong: list[str] = []
    for i, want in sorted(spark.items()):
        got = _flat(ours[i])
        for col, w in want.items():
            g = got.get(col, "<missing>")
            if col == "part" and w is not None:
                w = str(w)
            if g != w:
                wrong.append(f"id {i} {col}: hydrofeed {_show(g, col)}, Spark {_show(w, col)}")
    assert not wrong, f"{len(wrong)} values differ from Spark's read:\n" + "\n".join(wrong[:25])


@pytest.mark.parametrize("name", ORC)
def test_orc_written_by_spark_reads_as_spark_reads_it(spark_files: tuple[Path, dict[str, Any]], name: str) -> None:
    out, done = spark_files
    assert done["datasets"][name]["format"] == "orc"
    _compare(_spark_rows(out, name), _hydrofeed_rows(out / name))


def test_orc_wall_reading_is_the_writer_zones_wall_clock(spark_files: tuple[Path, dict[str, Any]]) -> None:
    """``orc_timestamps="wall"`` (Hive's reading): Spark's instants as wall clocks of the
    writer's zone (the JVM zone, Asia/Kolkata: +05:30, +06:30 in 1942-45, +05:21:10 before
    1906), without a zone; dates as Spark reads them."""
    from zoneinfo import ZoneInfo

    out, done = spark_files
    zone = ZoneInfo(done["datasets"]["orc_modern"]["jvm_zone"])
    r = hydrofeed.read(str(out / "orc_modern"), orc_timestamps="wall")
    assert r.schema.field("ts").type.tz is None

    def wall(us: int | None) -> int | None:
        if us is None:
            return None
        at = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=us)
        off = at.astimezone(zone).utcoffset()
        assert off is not None
        return us + int(off.total_seconds()) * 1_000_000

    spark = _spark_rows(out, "orc_modern")
    assert len(spark) > 50
    want = {
        i: {"id": i, "ts": wall(w["ts"]), "d": w["d"], "s_t": wall(w["s_t"]), "s_d": w["s_d"], "a": [wall(x) for x in w["a"]]}
        for i, w in spark.items()
    }
    _compare(want, _hydrofeed_rows(out / "orc_modern", orc_timestamps="wall"))


@pytest.mark.parametrize("name", PARQUET)
def test_parquet_written_by_spark_reads_as_spark_reads_it(spark_files: tuple[Path, dict[str, Any]], name: str) -> None:
    out, done = spark_files
    assert done["datasets"][name]["format"] == "parquet"
    _compare(_spark_rows(out, name), _hydrofeed_rows(out / name))


@pytest.mark.parametrize("name", AVRO)
def test_avro_written_by_spark_reads_as_spark_reads_it(spark_files: tuple[Path, dict[str, Any]], name: str) -> None:
    out, done = spark_files
    assert done["datasets"][name]["format"] == "avro"
    spark, ours = _spark_rows(out, name), _hydrofeed_rows(out / name)
    # An Avro map is unordered: hydrofeed keeps the file's order, Spark's reader a Java
    # HashMap's. Compared as sets of entries.
    for rows in (spark, ours):
        for r in rows.values():
            if r.get("mp") is not None:
                r["mp"] = sorted(r["mp"])
    _compare(spark, ours)
