"""Writes the Delta tables of ``test_delta_spark.py`` with Spark and Delta Lake's own writer
(``delta-spark``, fetched from Maven at the installed PySpark's version) and records Spark's
read of every version.

Run as a separate process (``python spark_delta_writer.py OUT``). Each table ``OUT/<name>/``
gets ``OUT/<name>.versions.json``: for every version, the sorted ids Spark reads at it
(``versionAsOf``). Deletion vectors are on (``delta.enableDeletionVectors``), so ``DELETE``,
``UPDATE`` and ``MERGE`` mark rows deleted in files beside the table instead of rewriting them.
"""

from __future__ import annotations

import json
import os
import sys


def main(out: str) -> None:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    import pyspark
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.jars.packages", f"io.delta:delta-spark_2.13:{pyspark.__version__}")
        # Spark ships these; their Maven copies are not needed.
        .config("spark.jars.excludes", "commons-logging:commons-logging,"
                "org.apache.hadoop:hadoop-client-runtime,org.apache.hadoop:hadoop-client-api")
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .appName("hydrofeed-delta-writer")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    done = {}

    def versions(path: str) -> dict[str, list[int]]:
        n = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").count()
        return {
            str(v): sorted(r.id for r in spark.read.format("delta").option("versionAsOf", v)
                           .load(path).select("id").collect())
            for v in range(n)
        }

    # Plain: 3 files, deletes in two of them, an append, an update (a DV and a new file).
    t = os.path.join(out, "dv_plain")
    spark.range(0, 6000, numPartitions=3).selectExpr("id", "id % 7 AS k", "cast(id AS double) / 3 AS x") \
        .write.format("delta").option("delta.enableDeletionVectors", "true").save(t)
    spark.sql(f"DELETE FROM delta.`{t}` WHERE id % 10 = 3")
    spark.sql(f"DELETE FROM delta.`{t}` WHERE id BETWEEN 2000 AND 2499")
    spark.range(6000, 7000, numPartitions=1).selectExpr("id", "id % 7 AS k", "cast(id AS double) / 3 AS x") \
        .write.format("delta").mode("append").save(t)
    spark.sql(f"UPDATE delta.`{t}` SET k = -1 WHERE id % 100 = 1")
    spark.sql(f"DELETE FROM delta.`{t}` WHERE id >= 6990")
    done["dv_plain"] = versions(t)

    # Partitioned by k, row groups of about 1,000 rows (deletes across row groups).
    t = os.path.join(out, "dv_partitioned")
    spark.conf.set("spark.hadoop.parquet.block.size", str(16 * 1024))
    spark.range(0, 20000, numPartitions=2).selectExpr("id", "id % 3 AS k", "repeat('x', 40) AS pad") \
        .write.format("delta").partitionBy("k").option("delta.enableDeletionVectors", "true").save(t)
    spark.sql(f"DELETE FROM delta.`{t}` WHERE id % 9 = 4 OR (id > 5000 AND id < 9000)")
    done["dv_partitioned"] = versions(t)

    # Types widened after files were written (delta.enableTypeWidening): int to bigint, float
    # to double, smallint to int; files of both sides, and Spark's read of every version.
    t = os.path.join(out, "widened")
    spark.range(0, 1000, numPartitions=2).selectExpr(
        "id", "cast(id * 3 AS int) AS n", "cast(id AS float) / 4 AS f", "cast(id % 100 AS smallint) AS s") \
        .write.format("delta").option("delta.enableTypeWidening", "true").save(t)
    # Widened by an append of the wider types under schema evolution (this Spark's ALTER TABLE
    # ... CHANGE COLUMN TYPE fails in delta-spark on a class Spark no longer has).
    spark.range(1000, 1500, numPartitions=1).selectExpr(
        "id", "id * 10000000000 AS n", "cast(id AS double) / 3 AS f", "cast(id AS int) * 100000 AS s") \
        .write.format("delta").mode("append").option("mergeSchema", "true").save(t)
    n = spark.sql(f"DESCRIBE HISTORY delta.`{t}`").count()
    done["widened_rows"] = {
        str(v): sorted([r.id, r.n, r.f, r.s] for r in spark.read.format("delta").option("versionAsOf", v)
                       .load(t).collect())
        for v in range(n)
    }

    with open(os.path.join(out, "done.json"), "w") as f:
        json.dump(done, f)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
