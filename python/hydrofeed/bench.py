"""``python -m hydrofeed.bench feed [--json]``: rows/s and MB/s delivered as numpy into a trainer.

MNIST-shaped rows (784 float32 ``image`` + int64 ``label``; ``id`` is not read) at batch sizes
100 and 1000, measured in one run for:

- ``feed``: ``hydrofeed serve`` in another process -> ring -> ``DataFeed.batches()`` here
  (numpy views, no copy). Input: Parquet when this build reads it, else TFRecord (``feed_input``
  in the JSON says which).
- ``pyarrow``: ``pyarrow.parquet`` reading the same rows from Parquet into numpy, in-process.
- ``tfdata``: ``tf.data.TFRecordDataset`` + ``tf.io.parse_example`` on the same rows as
  TFRecord, to numpy, in-process.

Every method ends with the same per-batch work: a numpy ``image`` array ``(n, 784)`` and a
``label`` array ``(n,)``. Each measurement is the best of ``--repeat`` passes; the trainer
process's CPU time (``resource.getrusage``, user + system, all its threads) per row is reported
too. Ratios are ours / baseline (> 1: the feed is faster).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

import hydrofeed as hf
from hydrofeed._proc import ServeProcess, gen, hydrofeed_bin

ROW_BYTES = 784 * 4 + 8


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _measure(batches: Callable[[], Iterator[tuple[Any, Any]]], rows: int) -> dict[str, float]:
    c0, t0 = _cpu(), time.perf_counter()
    n = 0
    for image, label in batches():
        assert image.shape[1] == 784 and image.dtype == np.float32
        assert label.shape[0] == image.shape[0]
        n += image.shape[0]
    dt, cpu = time.perf_counter() - t0, _cpu() - c0
    if n != rows:
        raise RuntimeError(f"read {n} rows, expected {rows}")
    return {
        "seconds": dt,
        "rows_per_s": n / dt,
        "mb_per_s": n * ROW_BYTES / dt / 1e6,
        "cpu_us_per_row": cpu / n * 1e6,
    }


def _best(runs: list[dict[str, float]]) -> dict[str, float]:
    return max(runs, key=lambda r: r["rows_per_s"])


def feed_batches(data: Path, bs: int, fmt: str) -> Callable[[], Iterator[tuple[Any, Any]]]:
    def run() -> Iterator[tuple[Any, Any]]:
        with ServeProcess(str(data), "--columns", "image,label", "--format", fmt) as s:
            feed = hf.DataFeed(s.socket, batch_size=bs, connect_timeout=120)
            feed._feed.wait_schema()
            for b in feed.batches():
                yield b["image"], b["label"]

    return run


def pyarrow_batches(data: Path, bs: int) -> Callable[[], Iterator[tuple[Any, Any]]]:
    import pyarrow.parquet as pq

    files = sorted(p for p in data.iterdir() if p.suffix == ".parquet")

    def run() -> Iterator[tuple[Any, Any]]:
        for f in files:
            pf = pq.ParquetFile(f)
            for rb in pf.iter_batches(batch_size=bs, columns=["image", "label"]):
                img = rb.column(0).flatten().to_numpy().reshape(-1, 784)
                yield img, rb.column(1).to_numpy()

    return run


def tfdata_batches(data: Path, bs: int) -> Callable[[], Iterator[tuple[Any, Any]]]:
    import tensorflow as tf

    files = sorted(str(p) for p in data.iterdir() if p.suffix == ".tfrecord")
    spec = {
        "image": tf.io.FixedLenFeature([784], tf.float32),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }

    def run() -> Iterator[tuple[Any, Any]]:
        ds = (
            tf.data.TFRecordDataset(files)
            .batch(bs)
            .map(lambda r: tf.io.parse_example(r, spec), num_parallel_calls=tf.data.AUTOTUNE)
            .prefetch(tf.data.AUTOTUNE)
        )
        for x in ds:
            yield x["image"].numpy(), x["label"].numpy()

    return run


def _parquet_readable(d: Path) -> bool:
    try:
        next(hf.read(str(d), columns=["label"]))
        return True
    except (hf.HydrofeedError, ValueError, RuntimeError):
        return False


def bench_feed(rows: int, repeat: int, work: Path) -> dict[str, Any]:
    pq_dir, tf_dir = work / "parquet", work / "tfrecord"
    gen(pq_dir, "parquet", rows, files=2)
    gen(tf_dir, "tfrecord", rows, files=2)
    feed_fmt = "parquet" if _parquet_readable(pq_dir) else "tfrecord"
    feed_dir = pq_dir if feed_fmt == "parquet" else tf_dir
    results: dict[str, dict[str, float]] = {}
    for bs in (100, 1000):
        results[f"feed_b{bs}"] = _best(
            [_measure(feed_batches(feed_dir, bs, feed_fmt), rows) for _ in range(repeat)]
        )
        results[f"pyarrow_b{bs}"] = _best(
            [_measure(pyarrow_batches(pq_dir, bs), rows) for _ in range(repeat)]
        )
    results["tfdata_b100"] = _best([_measure(tfdata_batches(tf_dir, 100), rows) for _ in range(repeat)])

    def ratio(a: str, b: str) -> float:
        return round(results[a]["rows_per_s"] / results[b]["rows_per_s"], 3)

    binary = hydrofeed_bin()
    return {
        "benchmark": "feed",
        "rows": rows,
        "row_bytes": ROW_BYTES,
        "repeat": repeat,
        "feed_input": feed_fmt,
        "feed_input_note": (
            "" if feed_fmt == "parquet"
            else "this build has no Parquet reader: the feed side reads the same rows as TFRecord"
        ),
        "feed_timing_note": (
            "feed times include starting hydrofeed serve, its plan (TFRecord index pass) and "
            "the attach; feeder and trainer share this machine's CPUs"
        ),
        "hydrofeed_bin": binary,
        "build": "release" if "/release/" in binary else "debug" if "/debug/" in binary else "?",
        "cpus": os.cpu_count(),
        "results": {k: {m: round(v, 3) for m, v in r.items()} for k, r in results.items()},
        "ratios": {
            "feed_vs_pyarrow_b100": ratio("feed_b100", "pyarrow_b100"),
            "feed_vs_pyarrow_b1000": ratio("feed_b1000", "pyarrow_b1000"),
            "feed_vs_tfdata_b100": ratio("feed_b100", "tfdata_b100"),
        },
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m hydrofeed.bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    f = sub.add_parser("feed", help="feed vs pyarrow vs tf.data into numpy")
    f.add_argument("--rows", type=int, default=60000)
    f.add_argument("--repeat", type=int, default=3)
    f.add_argument("--json", action="store_true", help="print JSON only")
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hydrofeed-bench-") as d:
        out = bench_feed(a.rows, a.repeat, Path(d))
    if a.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{a.rows} MNIST-shaped rows; feed input: {out['feed_input']}; build {out['build']}")
        for k, r in out["results"].items():
            print(f"  {k:14s} {r['rows_per_s']:>12,.0f} rows/s {r['mb_per_s']:>9,.1f} MB/s "
                  f"{r['cpu_us_per_row']:>8.2f} us CPU/row")
        for k, v in out["ratios"].items():
            print(f"  {k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
