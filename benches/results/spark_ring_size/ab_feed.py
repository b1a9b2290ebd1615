"""A/B in one Spark application: a feed and its ceiling alternated (after a warm-up run of
each), CPU seconds per process kind. KIND: `np` (RDD of (784 float32 ndarray, int) rows, numpy
columns via input_mapping, against iterating the RDD), `df` (the DataFrame `bench spark` makes,
against its mapInArrow count) or `lists` (spark_in_get/ab_lists.py: the list RDD as objects)."""
import os, sys, statistics
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ab_procs import B, delta, snaps, spark_context  # noqa: E402

N = int(os.environ.get("ROWS", "100000")); ROUNDS = int(os.environ.get("ROUNDS", "3"))
KIND = os.environ.get("KIND", "np")
sc = spark_context()
if KIND == "df":
    from pyspark.sql import SparkSession, functions as F
    data = (SparkSession(sc).range(N).repartition(8).select(
        F.transform(F.array_repeat(F.lit(0), 784), lambda x, i: (F.rand() + i * 0).cast("float")).alias("image"),
        (F.col("id") % 10).alias("label")).cache())
    cols, ceiling = {"image_col": "image", "label_col": "label"}, B._ceiling_df
else:
    def make(i):
        import numpy as np
        rng = np.random.default_rng(i)
        return (rng.random(784, dtype=np.float32), int(i % 10))
    data = sc.range(N, numSlices=8).map(make).cache()
    cols, ceiling = {"image_col": "a", "label_col": "b"}, B._ceiling_rdd
assert data.count() == N
res = {"hf": [], "ceil": []}


def run(k):
    snaps.clear()
    r = B._one(sc, "hf", data, B._trainer_columns, N, 1, cols) if k == "hf" else ceiling(data, N, 1)
    r["by_proc"] = delta(snaps[0], snaps[-1]) if len(snaps) > 1 else {}
    res[k].append(r); print(k, r["rows_per_s"], r.get("train_s"), r["cpu_s"], r["by_proc"], flush=True)


B._one(sc, "hf", data, B._trainer_columns, N, 1, cols); ceiling(data, N, 1)
for i in range(ROUNDS):
    for k in (("hf", "ceil") if i % 2 == 0 else ("ceil", "hf")):
        run(k)
rs = [a["rows_per_s"] / b["rows_per_s"] for a, b in zip(res["hf"], res["ceil"])]
print("ratio per round", [round(x, 2) for x in rs], "median", round(statistics.median(rs), 2))
sc.stop()
