"""Spark-mode feeding benchmark: TensorFlowOnSpark vs hydrofeed, in one run.

    python -m hydrofeed.bench spark --json [--rows 20000] [--epochs 1]   (or: python -m hydrofeed.spark.bench)

Same MNIST-shaped data (784 float32 + int64 label) cached in Spark first, ``local[2]``, one
node, batch 100. Each contender's trainer takes every batch as numpy (TFoS: ``next_batch`` rows
stacked with ``np.stack``; hydrofeed: the same loop over rows, and ``input_mapping`` columns
that arrive as numpy already). rows/s = rows fed / seconds of ``cluster.train()`` (it returns
once the trainer took every row); startup = ``TFCluster.run()``, shutdown = ``shutdown()``.
Ratios > 1 mean hydrofeed is faster.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from typing import Any

BATCH = 100


def _trainer_rows(args: Any, ctx: Any) -> None:
    """TFoS-style consumer: rows -> np.stack (works with TFoS and hydrofeed)."""
    import numpy as np

    if args["impl"] == "tfos":
        from tensorflowonspark import TFNode

        feed = TFNode.DataFeed(ctx.mgr)
    else:
        feed = ctx.get_data_feed()
    n, t0 = 0, None
    while not feed.should_stop():
        batch = feed.next_batch(BATCH)
        if len(batch) == 0:
            continue
        t0 = t0 or time.perf_counter()
        x = np.stack([r[0] for r in batch]).astype(np.float32, copy=False)
        y = np.asarray([r[1] for r in batch], dtype=np.int64)
        assert x.shape == (len(batch), 784) and y.shape == (len(batch),)
        n += len(batch)
    _report(args, n, t0)


def _trainer_columns(args: Any, ctx: Any) -> None:
    """hydrofeed consumer with input_mapping: dict of numpy columns per batch."""
    import numpy as np

    feed = ctx.get_data_feed(input_mapping={args["image_col"]: "x", args["label_col"]: "y"})
    n, t0 = 0, None
    while not feed.should_stop():
        cols = feed.next_batch(BATCH)
        k = len(cols["y"])
        if k == 0:
            continue
        t0 = t0 or time.perf_counter()
        x, y = np.asarray(cols["x"], dtype=np.float32), np.asarray(cols["y"], dtype=np.int64)
        assert x.shape == (k, 784) and y.shape == (k,)
        n += k
    _report(args, n, t0)


def _report(args: Any, n: int, t0: float | None) -> None:
    with open(args["out"], "w") as f:
        json.dump({"rows": n, "trainer_s": (time.perf_counter() - t0) if t0 else 0.0}, f)


def _one(sc: Any, impl: str, data: Any, fn: Any, rows: int, epochs: int, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    out = tempfile.mktemp(prefix=f"hf-bench-{impl}-", suffix=".json")
    args = {"impl": impl, "out": out, **(extra or {})}
    t = time.perf_counter()
    if impl == "tfos":
        from tensorflowonspark import TFCluster as T

        cluster = T.run(sc, fn, args, 1, 0, input_mode=T.InputMode.SPARK)
    else:
        from hydrofeed.spark import InputMode, TFCluster

        cluster = TFCluster.run(sc, fn, args, 1, input_mode=InputMode.SPARK)
    startup = time.perf_counter() - t
    t = time.perf_counter()
    if isinstance(data, str):  # file mode: the node's feeder reads the Parquet files
        cluster.train_files(data, num_epochs=epochs, batch_size=BATCH, shuffle=False)
    else:
        cluster.train(data, epochs)
    train_s = time.perf_counter() - t
    t = time.perf_counter()
    cluster.shutdown()
    shutdown = time.perf_counter() - t
    deadline = time.monotonic() + 30
    while not os.path.exists(out) and time.monotonic() < deadline:
        time.sleep(0.1)
    with open(out) as f:
        rep = json.load(f)
    os.unlink(out)
    if rep["rows"] != rows * epochs:
        raise RuntimeError(f"{impl}: trainer got {rep['rows']} rows, expected {rows * epochs}")
    return {
        "rows": rep["rows"],
        "train_s": round(train_s, 3),
        "rows_per_s": round(rep["rows"] / train_s, 1),
        "trainer_rows_per_s": round(rep["rows"] / rep["trainer_s"], 1) if rep["trainer_s"] else None,
        "startup_s": round(startup, 3),
        "shutdown_s": round(shutdown, 3),
    }


def _write_parquet(root: str, n: int, parts: int) -> str:
    """The benchmark's rows (784 float32 image + int64 label) as Parquet files written by pyarrow."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(0)
    per = -(-n // parts)
    for k in range(parts):
        lo, hi = k * per, min(n, (k + 1) * per)
        if lo >= hi:
            break
        img = rng.random((hi - lo) * 784, dtype=np.float32)
        table = pa.table({
            "image": pa.FixedSizeListArray.from_arrays(pa.array(img), 784),
            "label": pa.array(np.arange(lo, hi, dtype=np.int64) % 10),
        })
        pq.write_table(table, os.path.join(root, f"part-{k:05d}.parquet"), row_group_size=2048)
    return root


def _write_orc(parquet_dir: str, root: str) -> str:
    """The same rows as ORC files (pyarrow.orc; ORC has no fixed-size list: list<float>)."""
    import pyarrow as pa
    import pyarrow.orc as orc
    import pyarrow.parquet as pq

    os.makedirs(root, exist_ok=True)
    for name in sorted(os.listdir(parquet_dir)):
        t = pq.read_table(os.path.join(parquet_dir, name))
        t = t.set_column(0, "image", t.column("image").cast(pa.list_(pa.float32())))
        orc.write_table(t, os.path.join(root, name.replace(".parquet", ".orc")))
    return root


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=20000)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--skip-tfos", action="store_true")
    a = p.parse_args(argv)

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("TFOS_SERVER_HOST", os.environ["SPARK_LOCAL_IP"])
    os.environ["PYSPARK_PYTHON"] = sys.executable
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    os.environ["PYTHONPATH"] = os.pathsep.join([here] + [x for x in os.environ.get("PYTHONPATH", "").split(os.pathsep) if x])
    cwd = os.getcwd()
    workdir = tempfile.mkdtemp(prefix="hf-spark-bench-")
    os.chdir(workdir)  # TFoS writes an executor_id file into the working directory

    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    conf = (
        SparkConf()
        .setMaster("local[2]")
        .setAppName("hydrofeed-spark-bench")
        .set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "false")
        .set("spark.driver.host", os.environ["SPARK_LOCAL_IP"])
        .set("spark.driver.memory", "4g")
    )
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    spark = SparkSession(sc)
    n = a.rows

    def make(i: int) -> tuple[Any, int]:
        import numpy as np

        rng = np.random.default_rng(i)
        return (rng.random(784, dtype=np.float32), int(i % 10))

    rdd = sc.range(n, numSlices=a.partitions).map(make).cache()
    assert rdd.count() == n
    df = (
        spark.range(n)
        .repartition(a.partitions)
        .select(
            F.transform(F.array_repeat(F.lit(0), 784), lambda x, i: (F.rand() + i * 0).cast("float")).alias("image"),
            (F.col("id") % 10).alias("label"),
        )
        .cache()
    )
    assert df.count() == n

    results: dict[str, Any] = {}
    if not a.skip_tfos:
        results["tfos_spark"] = _one(sc, "tfos", rdd, _trainer_rows, n, a.epochs)
    results["hydrofeed_spark_rdd_rows"] = _one(sc, "hf", rdd, _trainer_rows, n, a.epochs)
    results["hydrofeed_spark_rdd"] = _one(sc, "hf", rdd, _trainer_columns, n, a.epochs, {"image_col": "a", "label_col": "b"})
    results["hydrofeed_spark_df"] = _one(sc, "hf", df, _trainer_columns, n, a.epochs, {"image_col": "image", "label_col": "label"})
    files = _write_parquet(os.path.join(workdir, "mnist"), n, a.partitions)
    results["hydrofeed_files"] = _one(sc, "hf", files, _trainer_columns, n, a.epochs, {"image_col": "image", "label_col": "label"})
    orc = _write_orc(files, os.path.join(workdir, "mnist_orc"))
    results["hydrofeed_files_orc"] = _one(sc, "hf", orc, _trainer_columns, n, a.epochs, {"image_col": "image", "label_col": "label"})
    sc.stop()
    os.chdir(cwd)
    shutil.rmtree(workdir, ignore_errors=True)  # ~130 MB of Parquet and ORC

    def ratio(k: str) -> float | None:
        if "tfos_spark" not in results:
            return None
        r: float = round(results[k]["rows_per_s"] / results["tfos_spark"]["rows_per_s"], 2)
        return r

    report = {
        "bench": "spark_feed",
        "master": "local[2]",
        "executors": 1,
        "batch": BATCH,
        "rows": n,
        "epochs": a.epochs,
        "row": "784 x float32 + int64 label",
        "results": results,
        "ratios": {
            "spark_rdd_vs_tfos": ratio("hydrofeed_spark_rdd"),
            "spark_rdd_rows_vs_tfos": ratio("hydrofeed_spark_rdd_rows"),
            "spark_df_vs_tfos": ratio("hydrofeed_spark_df"),
            "file_mode_vs_tfos": ratio("hydrofeed_files"),
            "file_mode_orc_vs_tfos": ratio("hydrofeed_files_orc"),
        },
        "notes": {
            "file_mode_vs_tfos": "TFCluster.train_files of the same rows written as Parquet (one file per "
            "partition, pyarrow): coordinator in the driver, feeder on the node, ring into the trainer, "
            "which takes input_mapping numpy columns",
            "file_mode_orc_vs_tfos": "same, the rows written as ORC (pyarrow.orc)",
            "spark_rdd": "RDD of (ndarray, int) rows, trainer takes input_mapping numpy columns",
            "spark_rdd_rows": "same RDD, trainer runs TFoS's row loop (next_batch rows + np.stack)",
        },
    }
    if a.json:
        print(json.dumps(report, indent=2))
    else:
        for k, v in results.items():
            print(f"{k:28s} {v['rows_per_s']:>10.0f} rows/s  startup {v['startup_s']:.2f}s  shutdown {v['shutdown_s']:.2f}s")
        print("ratios:", report["ratios"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
