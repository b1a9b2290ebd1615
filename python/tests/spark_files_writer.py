"""Writes the tables of ``test_spark_files_matrix.py`` with Spark itself (ORC, Parquet, and Avro
through ``spark-avro``, fetched from Maven at the installed PySpark's version) and reads them
back with Spark.

Run as a separate process (``python spark_files_writer.py OUT``), so that its JVM starts with
the zone it is given (``TZ`` and ``-Duser.timezone``) whatever JVM the test process may
already hold. Every dataset ``OUT/<name>/`` gets Spark's own read of it next to it,
``OUT/<name>.spark.arrow`` (Arrow IPC): timestamps as epoch microseconds (``unix_micros``) and
dates as epoch days (``unix_date``), so that the test compares instants, not wall clocks.
``OUT/done.json`` lists the datasets and the zones they were written under.
"""

from __future__ import annotations

import json
import os
import sys

JVM_ZONE = "Asia/Kolkata"
SESSION_ZONE = "America/Los_Angeles"
# A second JVM zone with daylight saving time, set while the session runs (the ORC writer
# takes the JVM's default zone when it opens a file).
DST_JVM_ZONE = "America/Los_Angeles"

DAY_US = 86_400_000_000


def _instants() -> list[int | None]:
    """Epoch microseconds: around the daylight-saving changes of the session zone, historical
    offsets of the JVM zone, before 1900 and before 1582, the ends of Spark's range, nulls."""
    out: list[int | None] = []
    # 2024-03-10 10:00 UTC (02:00 PST -> 03:00 PDT), 2024-11-03 09:00 UTC (02:00 PDT -> 01:00 PST)
    for change in (1_710_064_800_000_000, 1_730_624_400_000_000):
        for k in range(-8, 9):
            out.append(change + k * 15 * 60_000_000 + 123_456)
    # 1942-09-01 (Kolkata +06:30), 1945-10-15 (back to +05:30), 1900-01-01, 1883, 1850
    for t in (-862_617_600_000_000, -764_553_600_000_000, -2_208_988_800_000_000, -2_745_000_000_000_000, -3_786_825_600_000_000):
        for k in range(-3, 4):
            out.append(t + k * 3_600_000_000 - 1)
    # around the Gregorian cutover 1582-10-15 and well before it
    cut = -12_219_292_800_000_000
    for k in range(-25, 6):
        out.append(cut + k * DAY_US + 7 * 3_600_000_000 + 1)
    for year_us in (-30_610_224_000_000_000, -50_000_000_000_000_000, -62_135_596_800_000_000 + DAY_US):
        for k in range(3):
            out.append(year_us + k * 40 * DAY_US + 999_999)
    # ordinary values, epoch, the far future
    out += [0, -1, 1, 1_000_000, 253_402_214_400_000_000 - DAY_US, 946_684_800_000_000]
    out += [1_600_000_000_000_000 + k * 86_399_999_999 for k in range(40)]
    # nulls
    out += [None] * 8
    return out


def _days(instants: list[int | None]) -> list[int | None]:
    return [None if t is None else t // DAY_US for t in instants]


def main(out: str) -> None:
    os.environ["TZ"] = JVM_ZONE
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import pyspark

    jopt = f"-Duser.timezone={JVM_ZONE}"
    spark = (
        SparkSession.builder.master("local[2]")
        # Spark's Avro data source, from Maven at Spark's own version.
        .config("spark.jars.packages", f"org.apache.spark:spark-avro_2.13:{pyspark.__version__}")
        .appName("hydrofeed-spark-files")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.extraJavaOptions", jopt)
        .config("spark.executor.extraJavaOptions", jopt)
        .config("spark.sql.session.timeZone", SESSION_ZONE)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark._jvm
    assert jvm.java.util.TimeZone.getDefault().getID() == JVM_ZONE

    import pyarrow.ipc as ipc

    ts = _instants()
    n = len(ts)
    days = _days(ts)
    ts2 = [None if t is None else -t // 3 for t in ts]  # a second, unrelated column
    rows = [(i, ts[i], days[i], ts2[(i * 7) % n], days[(i * 5) % n]) for i in range(n)]
    base = spark.createDataFrame(rows, "id long, m long, dd int, m2 long, dd2 int").select(
        "id",
        F.timestamp_micros("m").alias("ts"),
        F.date_from_unix_date("dd").alias("d"),
        F.struct(F.timestamp_micros("m2").alias("t"), F.date_from_unix_date("dd2").alias("d")).alias("s"),
        F.array(F.timestamp_micros("m"), F.timestamp_micros("m2")).alias("a"),
    )
    flat = [
        "id",
        "unix_micros(ts) as ts",
        "unix_date(d) as d",
        "unix_micros(s.t) as s_t",
        "unix_date(s.d) as s_d",
        "transform(a, x -> unix_micros(x)) as a",
    ]
    written: dict[str, dict] = {}

    def keep(name: str, df, exprs, fmt: str, **info) -> None:
        table = df.selectExpr(*exprs).orderBy("id").toArrow()
        with ipc.new_file(os.path.join(out, name + ".spark.arrow"), table.schema) as w:
            w.write_table(table)
        written[name] = {"format": fmt, "rows": table.num_rows, **info}

    # ORC (the Java ORC writer), one file per codec; the JVM zone is the writer's zone.
    for codec in ("zlib", "snappy", "zstd"):
        name = f"orc_{codec}"
        path = os.path.join(out, name)
        base.coalesce(1).write.option("compression", codec).orc(path)
        keep(name, spark.read.orc(path), flat, "orc", codec=codec, jvm_zone=JVM_ZONE)

    # ORC whose instants all fit Hive's reading (nanoseconds: 1677 to 2262), from 1900 on.
    name = "orc_modern"
    path = os.path.join(out, name)
    fits = "(m is null or m between -2208988800000000 and 7000000000000000)"
    modern = base.where(fits.replace("m", "unix_micros(ts)") + " and " + fits.replace("m", "unix_micros(s.t)"))
    modern.coalesce(1).write.option("compression", "zlib").orc(path)
    keep(name, spark.read.orc(path), flat, "orc", codec="zlib", jvm_zone=JVM_ZONE)

    # ORC written and read with a JVM zone that has daylight saving time.
    tz = jvm.java.util.TimeZone
    tz.setDefault(tz.getTimeZone(DST_JVM_ZONE))
    try:
        name = "orc_dst_jvm"
        path = os.path.join(out, name)
        base.coalesce(1).write.option("compression", "zlib").orc(path)
        keep(name, spark.read.orc(path), flat, "orc", codec="zlib", jvm_zone=DST_JVM_ZONE)
    finally:
        tz.setDefault(tz.getTimeZone(JVM_ZONE))

    # Parquet: timestamp encodings x rebase modes, decimals, a map, a struct, and a
    # Hive-partitioned directory with a null partition value.
    pq = base.select(
        "id",
        "ts",
        "d",
        "s",
        (F.col("id") * 12345 - 77).cast("decimal(9,2)").alias("dec9"),
        (F.col("id") * 1234567891 - 5).cast("decimal(18,4)").alias("dec18"),
        (F.lit("-1234567890123456789012345.6789012345").cast("decimal(38,10)") + F.col("id").cast("decimal(20,0)"))
        .cast("decimal(38,10)")
        .alias("dec38"),
        F.when(F.col("id") % 4 == 0, None)
        .otherwise(F.create_map(F.lit("k"), F.col("id"), F.concat(F.lit("x"), F.col("id").cast("string")), -F.col("id")))
        .alias("mp"),
        F.when(F.col("id") % 3 == 0, None).otherwise((F.col("id") % 3).cast("string")).alias("part"),
    )
    pq_flat = flat[:5] + [
        "cast(dec9 as string) as dec9",
        "cast(dec18 as string) as dec18",
        "cast(dec38 as string) as dec38",
        "mp",
        "part",
    ]
    for ts_type in ("INT96", "TIMESTAMP_MICROS", "TIMESTAMP_MILLIS"):
        for mode in ("LEGACY", "CORRECTED"):
            name = f"parquet_{ts_type.lower()}_{mode.lower()}"
            path = os.path.join(out, name)
            spark.conf.set("spark.sql.parquet.outputTimestampType", ts_type)
            spark.conf.set("spark.sql.parquet.datetimeRebaseModeInWrite", mode)
            spark.conf.set("spark.sql.parquet.int96RebaseModeInWrite", mode)
            pq.repartition(2).write.partitionBy("part").parquet(path)
            keep(name, spark.read.parquet(path), pq_flat, "parquet", ts_type=ts_type, rebase=mode)

    # Avro through spark-avro, under both rebase modes (LEGACY writes dates and timestamps in
    # the hybrid calendar and says so in the header's metadata), with the same columns.
    for mode in ("LEGACY", "CORRECTED"):
        name = f"avro_{mode.lower()}"
        path = os.path.join(out, name)
        spark.conf.set("spark.sql.avro.datetimeRebaseModeInWrite", mode)
        pq.repartition(2).write.partitionBy("part").format("avro").save(path)
        keep(name, spark.read.format("avro").load(path), pq_flat, "avro", rebase=mode)

    with open(os.path.join(out, "done.json"), "w") as f:
        json.dump({"jvm_zone": JVM_ZONE, "session_zone": SESSION_ZONE, "spark": spark.version, "datasets": written}, f)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
