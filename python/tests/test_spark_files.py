"""Files written by Spark itself, read value by value against Spark's own read.

One local Spark session, as many clusters run: the session time zone America/Los_Angeles, the
JVMs' default zone Asia/Kolkata (ORC's Java writer records the JVM's zone in every stripe,
Spark converts with it before and after the ORC layer). Timestamps are compared as instants
(epoch microseconds: Spark's ``unix_micros``), dates as days (``unix_date``), never as wall
strings, so that neither side's display zone takes part.

The values reach over Los Angeles' DST changes, before 1900 (local mean time), before the
Gregorian reform of 1582-10-15 (the Julian/Gregorian hybrid calendar Spark's writers declare or
rebase to), and hold nulls.
"""

from __future__ import annotations

import os
import random

import pyarrow as pa
import pytest

import hydrofeed as hf

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]

pyspark = pytest.importorskip("pyspark", reason="PySpark is not installed")

JVM_ZONE = "Asia/Kolkata"
SESSION_ZONE = "America/Los_Angeles"
ROWS = 300


def _micros(y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0, us: int = 0) -> int:
    """Epoch microseconds of a proleptic Gregorian UTC wall clock."""
    import datetime as dt

    t = dt.datetime(y, mo, d, h, mi, s, us, tzinfo=dt.timezone.utc)
    delta = t - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def _days(y: int, mo: int, d: int) -> int:
    import datetime as dt

    return (dt.date(y, mo, d) - dt.date(1970, 1, 1)).days


def _instants() -> list[int | None]:
    """ROWS instants (epoch micros) that matter to zone and calendar handling, with nulls."""
    rng = random.Random(1582)
    fixed = [
        _micros(1, 1, 1, 12),
        _micros(1000, 3, 1, 8, 30),
        _micros(1500, 3, 1, 20, 0, 0, 123_456),
        _micros(1582, 10, 4, 23, 59, 59),
        _micros(1582, 10, 10, 12),  # no such day in the hybrid calendar
        _micros(1582, 10, 15),
        _micros(1582, 10, 15, 7, 59, 59),
        _micros(1700, 2, 28, 23),
        _micros(1850, 6, 1, 1, 2, 3, 4),
        _micros(1883, 11, 18, 19, 59, 59),  # Los Angeles leaves local mean time
        _micros(1883, 11, 18, 20, 0, 1),
        _micros(1899, 12, 31, 18, 29, 59),
        _micros(1941, 9, 30, 18, 29, 59),  # Kolkata's war time
        _micros(1945, 10, 14, 17, 59, 59),
        _micros(1969, 12, 31, 23, 59, 59, 999_999),
        0,
        _micros(2262, 4, 11, 23, 47, 16, 854_775),
        _micros(2300, 1, 1),
        _micros(9999, 12, 31, 23, 59, 59, 999_999),
    ]
    # Every 7.5 minutes across Los Angeles' DST changes of 2024 (10:00 and 09:00 UTC).
    for start in (_micros(2024, 3, 10, 8), _micros(2024, 11, 3, 7)):
        fixed += [start + k * 450_000_000 for k in range(40)]
    out: list[int | None] = list(fixed)
    while len(out) < ROWS:
        out.append(rng.randrange(_micros(1, 1, 1), _micros(9999, 12, 31)))
    for k in range(3, ROWS, 13):
        out[k] = None
    return out[:ROWS]


def _dates() -> list[int | None]:
    rng = random.Random(1970)
    fixed = [
        _days(1, 1, 1), _days(4, 2, 29), _days(200, 3, 1), _days(1000, 3, 1), _days(1500, 2, 28),
        _days(1500, 3, 1), _days(1582, 10, 4), _days(1582, 10, 10), _days(1582, 10, 15),
        _days(1600, 2, 29), _days(1899, 12, 31), -1, 0, _days(9999, 12, 31),
    ]
    out: list[int | None] = list(fixed)
    while len(out) < ROWS:
        out.append(rng.randrange(_days(1, 1, 1), _days(9999, 12, 31)))
    for k in range(5, ROWS, 11):
        out[k] = None
    return out[:ROWS]


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    if pyspark.SparkContext._active_spark_context is not None:
        pytest.skip("another SparkContext is running in this process; these tests need their own JVM zone")
    java_opts = f"-Duser.timezone={JVM_ZONE}"
    saved = {k: os.environ.get(k) for k in ("TZ", "SPARK_LOCAL_IP")}
    os.environ["TZ"] = JVM_ZONE  # the driver JVM is started from this process
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    try:
        session = (
            SparkSession.builder.master("local[2]")
            .appName("hydrofeed-spark-files")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.sql.session.timeZone", SESSION_ZONE)
            .config("spark.driver.extraJavaOptions", java_opts)
            .config("spark.executor.extraJavaOptions", java_opts)
            .getOrCreate()
        )
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    session.sparkContext.setLogLevel("ERROR")
    jvm = session.sparkContext._jvm
    assert jvm.java.util.TimeZone.getDefault().getID() == JVM_ZONE
    yield session
    session.stop()


@pytest.fixture(scope="module")
def table(spark):
    """The test table: instants, dates, nested forms of both, nulls; written over 2 files."""
    rows = list(zip(range(ROWS), _instants(), _dates()))
    df = spark.createDataFrame(rows, "id long, us long, days int").repartition(2, "id")
    return df.selectExpr(
        "id",
        "timestamp_micros(us) AS t",
        "date_from_unix_date(days) AS d",
        "named_struct('t', timestamp_micros(us), 'd', date_from_unix_date(days)) AS s",
        "array(timestamp_micros(us), CAST(NULL AS timestamp)) AS a",
    )


def _spark_values(spark, path: str, fmt: str) -> dict[int, tuple]:
    df = spark.read.format(fmt).load(path)
    got = df.selectExpr(
        "id", "unix_micros(t)", "unix_date(d)", "unix_micros(s.t)", "unix_date(s.d)",
        "transform(a, x -> unix_micros(x))",
    ).collect()
    return {r[0]: (r[1], r[2], r[3], r[4], list(r[5])) for r in got}


def _as_micros(arr: pa.Array) -> list[int | None]:
    assert pa.types.is_timestamp(arr.type), arr.type
    per = {"s": 1_000_000, "ms": 1000, "us": 1, "ns": None}[arr.type.unit]
    ints = arr.cast(pa.int64()).to_pylist()
    if per is None:
        return [None if v is None else v // 1000 for v in ints]
    return [None if v is None else v * per for v in ints]


def _as_days(arr: pa.Array) -> list[int | None]:
    assert arr.type == pa.date32(), arr.type
    return arr.cast(pa.int32()).to_pylist()


def _hydrofeed_values(path: str, **kw) -> dict[int, tuple]:
    t = pa.Table.from_batches(list(hf.read(path, **kw))).combine_chunks()
    s = t.column("s").chunk(0)
    a = t.column("a").chunk(0)
    ids = t.column("id").to_pylist()
    cols = [
        _as_micros(t.column("t").chunk(0)),
        _as_days(t.column("d").chunk(0)),
        _as_micros(s.field("t")),
        _as_days(s.field("d")),
    ]
    flat = _as_micros(a.flatten())
    offs = a.offsets.to_pylist()
    lists = [flat[offs[i]:offs[i + 1]] for i in range(len(a))]
    return {i: (c0, c1, c2, c3, l) for i, c0, c1, c2, c3, l in zip(ids, *cols, lists)}


def _assert_same(expected: dict[int, tuple], got: dict[int, tuple], what: str) -> None:
    assert sorted(got) == sorted(expected), f"{what}: ids differ"
    names = ("t", "d", "s.t", "s.d", "a")
    bad = [
        (i, names[c], expected[i][c], got[i][c])
        for i in sorted(expected)
        for c in range(len(names))
        if expected[i][c] != got[i][c]
    ]
    assert not bad, f"{what}: {len(bad)} values differ from Spark's read, first {bad[:8]}"


@pytest.mark.parametrize("codec", ["zlib", "snappy", "zstd"])
def test_orc_written_by_spark_reads_as_spark_reads_it(spark, table, tmp_path, codec):
    out = str(tmp_path / f"orc-{codec}")
    table.write.option("compression", codec).orc(out)
    expected = _spark_values(spark, out, "orc")
    # Spark's own read returns the instants the table holds (the rebase round-trips them),
    # except the days the hybrid calendar lacks (1582-10-05 .. 14).
    assert sum(1 for v in expected.values() if v[0] is not None) > ROWS * 0.9
    _assert_same(expected, _hydrofeed_values(out), f"ORC {codec}")


def test_orc_written_by_spark_in_a_zone_east_of_utc(spark, tmp_path):
    """Only instants of 1900..2262 (within every reader's range): each comes back as the
    instant Spark wrote, not the writer zone's wall clock read as UTC (5 h 30 min off)."""
    rows = [(i, v) for i, v in enumerate(_instants()) if v is None or _micros(1900, 1, 1) <= v < _micros(2262, 1, 1)]
    df = spark.createDataFrame(rows, "id long, us long").selectExpr("id", "timestamp_micros(us) AS t")
    out = str(tmp_path / "orc-modern")
    df.write.orc(out)
    expected = {r[0]: r[1] for r in spark.read.orc(out).selectExpr("id", "unix_micros(t)").collect()}
    t = pa.Table.from_batches(list(hf.read(out))).combine_chunks()
    got = dict(zip(t.column("id").to_pylist(), _as_micros(t.column("t").chunk(0))))
    assert got == expected, [(i, expected[i], got.get(i)) for i in sorted(expected) if got.get(i) != expected[i]][:5]
    # Hive's reading: the writer's wall clocks (Kolkata), read as UTC.
    walls = spark.read.orc(out).selectExpr("id", f"unix_micros(from_utc_timestamp(t, '{JVM_ZONE}'))").collect()
    t = pa.Table.from_batches(list(hf.read(out, orc_timestamps="wall"))).combine_chunks()
    got = dict(zip(t.column("id").to_pylist(), _as_micros(t.column("t").chunk(0))))
    assert got == {r[0]: r[1] for r in walls}
    assert any(got[i] != expected[i] for i in expected)
