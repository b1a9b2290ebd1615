"""``python -m hydrofeed.bench feed [--json]``: rows/s and MB/s delivered as numpy into a trainer.

MNIST-shaped rows (784 float32 ``image`` + int64 ``label``; ``id`` is not read) at batch sizes
100 and 1000, measured in one run (each method's passes for at least 2 s, the methods
alternated ``--repeat`` times; best and median pass) for:

- ``feed``: ``hydrofeed serve`` in another process -> ring -> ``DataFeed.batches()`` here
  (numpy views, no copy). Input: Parquet when this build reads it, else TFRecord (``feed_input``
  in the JSON says which).
- ``pyarrow``: ``pyarrow.parquet`` reading the same rows from Parquet into numpy, in-process.
- ``tfdata``: ``tf.data.TFRecordDataset`` + ``tf.io.parse_example`` on the same rows as
  TFRecord, to numpy, in-process.

With ``--workers 1,2``: end to end through ``hydrofeed launch`` (in-process coordinator, one
``hydrofeed feeder`` daemon, W trainer processes each iterating ``DataFeed.batches()`` into
numpy) from the same Parquet files on disk, batch 1000, one epoch, against ``pyarrow`` reading
them in one process (the baseline, same command); each job in the fixed order, the dynamic
order and (``--shuffle-buffer N``) with a shuffle buffer, alternated, best and median.
Reported per W: the job's wall time (process starts included), the trainers' rows/s from
their first to their last batch, and the feeder's CPU seconds and max RSS (``getrusage`` of the
feeder, printed by it at exit).

Every method ends with the same per-batch work: a numpy ``image`` array ``(n, 784)`` and a
``label`` array ``(n,)``. Each result is the best pass, with the median and the shortest side;
the trainer process's CPU time (``resource.getrusage``, user + system, all its threads) per row
is reported too. Ratios are ours / baseline (> 1: the feed is faster).
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
from hydrofeed._deprecated import renamed_keyword
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


MIN_SECS = 2.0


def _passes_for(one_pass: Callable[[], dict[str, float]],
                min_secs: float = MIN_SECS) -> list[dict[str, float]]:
    """Results of ``one_pass()`` (each with its ``seconds``) until ``min_secs`` of them went by
    (at least one): one side of a measurement."""
    out: list[dict[str, float]] = []
    while not out or sum(r["seconds"] for r in out) < min_secs:
        out.append(one_pass())
    return out


def _measure_for(batches: Callable[[], Iterator[tuple[Any, Any]]], rows: int,
                 min_secs: float = MIN_SECS) -> list[dict[str, float]]:
    """Passes of ``_measure`` until ``min_secs`` went by (at least one)."""
    return _passes_for(lambda: _measure(batches, rows), min_secs)


def _best(runs: list[dict[str, float]]) -> dict[str, float]:
    return max(runs, key=lambda r: r["rows_per_s"])


def _median(runs: list[dict[str, float]]) -> float:
    """The median rows/s of ``runs``."""
    return float(np.median([r["rows_per_s"] for r in runs]))


def _summary(runs: list[dict[str, float]], sides: list[float]) -> dict[str, float]:
    """The best pass of ``runs``, with the median rows/s, the number of passes and the
    shortest side (``sides``: the seconds each measurement of this method ran)."""
    return {**_best(runs), "median_rows_per_s": _median(runs), "passes": len(runs),
            "shortest_side_s": min(sides)}


@renamed_keyword("bs", "batch_size")
def feed_batches(data: Path, batch_size: int, fmt: str) -> Callable[[], Iterator[tuple[Any, Any]]]:
    def run() -> Iterator[tuple[Any, Any]]:
        with ServeProcess(str(data), "--columns", "image,label", "--format", fmt) as s:
            feed = hf.DataFeed(s.socket, batch_size=batch_size, connect_timeout=120)
            feed._feed.wait_schema()
            for b in feed.batches():
                yield b["image"], b["label"]

    return run


@renamed_keyword("bs", "batch_size")
def pyarrow_batches(data: Path, batch_size: int) -> Callable[[], Iterator[tuple[Any, Any]]]:
    import pyarrow.parquet as pq

    files = sorted(p for p in data.iterdir() if p.suffix == ".parquet")

    def run() -> Iterator[tuple[Any, Any]]:
        for f in files:
            pf = pq.ParquetFile(f)
            for rb in pf.iter_batches(batch_size=batch_size, columns=["image", "label"]):
                img = rb.column(0).flatten().to_numpy().reshape(-1, 784)
                yield img, rb.column(1).to_numpy()

    return run


@renamed_keyword("bs", "batch_size")
def tfdata_batches(data: Path, batch_size: int) -> Callable[[], Iterator[tuple[Any, Any]]]:
    import tensorflow as tf

    files = sorted(str(p) for p in data.iterdir() if p.suffix == ".tfrecord")
    spec = {
        "image": tf.io.FixedLenFeature([784], tf.float32),
        "label": tf.io.FixedLenFeature([], tf.int64),
    }

    def run() -> Iterator[tuple[Any, Any]]:
        ds = (
            tf.data.TFRecordDataset(files)
            .batch(batch_size)
            .map(lambda r: tf.io.parse_example(r, spec), num_parallel_calls=tf.data.AUTOTUNE)
            .prefetch(tf.data.AUTOTUNE)
        )
        for x in ds:
            yield x["image"].numpy(), x["label"].numpy()

    return run


def torch_parquet_loader(files: list[Path], batch_size: int, workers: int, pin_memory: bool = False) -> Any:
    """A torch ``DataLoader`` over Parquet files read with pyarrow (``iter_batches``), the files
    shared among ``workers`` worker processes: what PyTorch users run without hydrofeed."""
    import torch
    import torch.utils.data

    class Parquet(torch.utils.data.IterableDataset):  # type: ignore[type-arg, misc, unused-ignore]
        def __iter__(self) -> Iterator[tuple[Any, Any]]:
            import pyarrow.parquet as pq

            w = torch.utils.data.get_worker_info()
            mine = files if w is None else files[w.id :: w.num_workers]
            for f in mine:
                for rb in pq.ParquetFile(f).iter_batches(batch_size=batch_size,
                                                         columns=["image", "label"]):
                    img = rb.column(0).flatten().to_numpy().reshape(-1, 784)
                    # writable copies: torch refuses read-only arrays (what users do)
                    yield (torch.from_numpy(img.copy()),
                           torch.from_numpy(rb.column(1).to_numpy().copy()))

    return torch.utils.data.DataLoader(Parquet(), batch_size=None, num_workers=workers,
                                       pin_memory=pin_memory)


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
    # Each method's passes run for at least MIN_SECS; methods alternate, `repeat` rounds.
    methods: dict[str, Callable[[], Iterator[tuple[Any, Any]]]] = {}
    for batch_size in (100, 1000):
        methods[f"feed_b{batch_size}"] = feed_batches(feed_dir, batch_size, feed_fmt)
        methods[f"pyarrow_b{batch_size}"] = pyarrow_batches(pq_dir, batch_size)
        methods[f"tfdata_b{batch_size}"] = tfdata_batches(tf_dir, batch_size)
    runs: dict[str, list[dict[str, float]]] = {k: [] for k in methods}
    sides: dict[str, list[float]] = {k: [] for k in methods}
    for _ in range(repeat):
        for k, m in methods.items():
            passes = _measure_for(m, rows)
            runs[k].extend(passes)
            sides[k].append(sum(r["seconds"] for r in passes))
    results = {k: _summary(v, sides[k]) for k, v in runs.items()}

    def ratio(a: str, b: str, key: str = "rows_per_s") -> float:
        return round(results[a][key] / results[b][key], 3)

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
            f"feed_vs_{peer}_b{b}{tag}": ratio(f"feed_b{b}", f"{peer}_b{b}", key)
            for peer in ("pyarrow", "tfdata") for b in (100, 1000)
            for tag, key in (("", "rows_per_s"), ("_median", "median_rows_per_s"))
        },
    }


def _launch_worker() -> int:
    """A trainer of the ``--workers`` bench: iterate, then write rows and times to ``OUT``."""
    feed = hf.DataFeed(connect_timeout=120)
    n, t_first, t_last = 0, None, None
    for b in feed.batches():
        image, label = b["image"], b["label"]
        assert image.shape[1] == 784 and label.shape[0] == image.shape[0]
        if t_first is None:
            t_first = time.perf_counter()
        n += image.shape[0]
        t_last = time.perf_counter()
    rank = os.environ["HYDROFEED_RANK"]
    with open(os.path.join(os.environ["OUT"], f"rank-{rank}.json"), "w") as f:
        json.dump({"rows": n, "seconds": (t_last or 0) - (t_first or 0), "cpu": _cpu()}, f)
    return 0


def bench_launch(rows: int, workers: list[int], repeat: int, work: Path,
                 shuffle_buffer: int = 0) -> dict[str, Any]:
    import re
    import subprocess

    pq_dir = work / "parquet"
    gen(pq_dir, "parquet", rows, files=4)
    binary = hydrofeed_bin()
    results: dict[str, dict[str, float]] = {}
    results["pyarrow_b1000"] = _best(
        [_measure(pyarrow_batches(pq_dir, 1000), rows) for _ in range(repeat)]
    )
    # The same job in the fixed order (the default), the dynamic one, and with a shuffle
    # buffer, alternated, in the same run.
    variants: list[tuple[str, list[str]]] = [("", []), ("_dynamic", ["--order", "dynamic"])]
    if shuffle_buffer:
        variants.append((f"_shuffle{shuffle_buffer}", ["--shuffle-buffer", str(shuffle_buffer)]))
    runs_of: dict[str, list[dict[str, float]]] = {}
    for w, (tag, flags), i in [(w, v, i) for w in workers for i in range(repeat) for v in variants]:
        runs = runs_of.setdefault(f"launch_w{w}{tag}", [])
        out = work / f"w{w}{tag}-{i}"
        out.mkdir()
        t0 = time.perf_counter()
        r = subprocess.run(
            [binary, "launch", "--workers", str(w), "--input", str(pq_dir),
             "--batch-size", "1000", "--columns", "image,label", *flags,
             "--", sys.executable, "-m", "hydrofeed.bench", "_worker"],
            env={**os.environ, "OUT": str(out)}, capture_output=True, text=True,
        )
        wall = time.perf_counter() - t0
        if r.returncode != 0:
            raise RuntimeError(f"hydrofeed launch failed:\n{r.stderr[-3000:]}")
        ranks = [json.loads((out / f"rank-{k}.json").read_text()) for k in range(w)]
        n = sum(x["rows"] for x in ranks)
        m = re.search(r"cpu ([0-9.]+) s, max RSS ([0-9.]+) MiB", r.stderr)
        span = max(x["seconds"] for x in ranks)
        runs.append({
            "seconds": span,
            "rows_per_s": n / span,
            "mb_per_s": n * ROW_BYTES / span / 1e6,
            "job_wall_s": wall,
            "job_rows_per_s": n / wall,
            "feeder_cpu_s": float(m.group(1)) if m else float("nan"),
            "feeder_cpu_us_per_row": float(m.group(1)) / n * 1e6 if m else float("nan"),
            "feeder_max_rss_mib": float(m.group(2)) if m else float("nan"),
            "trainer_cpu_us_per_row": sum(x["cpu"] for x in ranks) / n * 1e6,
        })
    for k, runs in runs_of.items():
        # Each job is one side: its trainers' span.
        results[k] = _summary(runs, [r["seconds"] for r in runs])
    ratios = {
        f"launch_w{w}_vs_pyarrow_b1000": round(
            results[f"launch_w{w}"]["rows_per_s"] / results["pyarrow_b1000"]["rows_per_s"], 3
        )
        for w in workers
    }
    for w in workers:
        for stat, key in (("best", "rows_per_s"), ("median", "median_rows_per_s")):
            ratios[f"launch_w{w}_fixed_vs_dynamic_{stat}"] = round(
                results[f"launch_w{w}"][key] / results[f"launch_w{w}_dynamic"][key], 3
            )
    if shuffle_buffer:
        for w in workers:
            ratios[f"launch_w{w}_shuffle_vs_no_buffer_median"] = round(
                results[f"launch_w{w}_shuffle{shuffle_buffer}"]["median_rows_per_s"]
                / results[f"launch_w{w}"]["median_rows_per_s"], 3
            )
            ratios[f"launch_w{w}_shuffle_vs_no_buffer"] = round(
                results[f"launch_w{w}_shuffle{shuffle_buffer}"]["rows_per_s"]
                / results[f"launch_w{w}"]["rows_per_s"], 3
            )
    return {
        "benchmark": "feed-launch",
        "rows": rows,
        "row_bytes": ROW_BYTES,
        "repeat": repeat,
        "input": "parquet (4 files, hydrofeed gen), columns image,label, batch 1000, fixed order",
        "hydrofeed_bin": binary,
        "build": "release" if "/release/" in binary else "debug" if "/debug/" in binary else "?",
        "cpus": os.cpu_count(),
        "shuffle_buffer": shuffle_buffer,
        "results": {k: {m: round(v, 3) for m, v in r.items()} for k, r in results.items()},
        "ratios": ratios,
    }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["spark"]:
        # TFoS vs hydrofeed on Spark (RDD, DataFrame, file mode): hydrofeed.spark.bench
        from hydrofeed.spark.bench import main as spark_main

        return spark_main(args[1:])
    if args[:1] == ["peers"]:
        # pyarrow, tf.data, Petastorm, DataLoader, Ray Data, Streaming, Grain vs serve and launch
        from hydrofeed.bench_peers import main as peers_main

        return peers_main(args[1:])
    if args[:1] == ["images"]:
        # JPEGs into 224x224 uint8 batches: serve --images vs tf.data, DataLoader+Pillow, DALI
        from hydrofeed.bench_images import main as images_main

        return images_main(args[1:])
    if args[:1] == ["gpu"]:
        # The GPU staging path: H2D from the ring, end to end into CUDA tensors
        from hydrofeed.bench_gpu import main as gpu_main

        return gpu_main(args[1:])
    p = argparse.ArgumentParser(prog="python -m hydrofeed.bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    f = sub.add_parser("feed", help="feed vs pyarrow vs tf.data into numpy")
    f.add_argument("--rows", type=int, default=60000)
    f.add_argument("--repeat", type=int, default=3)
    f.add_argument("--json", action="store_true", help="print JSON only")
    f.add_argument("--workers", help="comma-separated worker counts: bench through hydrofeed launch")
    f.add_argument("--shuffle-buffer", type=int, default=0,
                   help="with --workers: also run every job with this shuffle buffer (ratio "
                   "launch_w<N>_shuffle_vs_no_buffer)")
    sub.add_parser("gpu", help="GPU staging: H2D GB/s from the ring, rows/s into CUDA tensors vs "
                   "DataLoader(pin_memory=True) (python -m hydrofeed.bench gpu --help)")
    sub.add_parser("peers", help="hydrofeed serve and launch vs the installed peers (pyarrow, "
                   "tf.data, Petastorm, DataLoader, Ray Data, Streaming, Grain) on the same data "
                   "(python -m hydrofeed.bench peers --help; make bench-peers)")
    sub.add_parser("images", help="JPEGs decoded into 224x224 uint8 batches: hydrofeed serve "
                   "--images vs tf.data, torch DataLoader over Pillow and DALI's CPU pipeline, "
                   "per core (python -m hydrofeed.bench images --help)")
    sub.add_parser("spark", help="TFoS vs hydrofeed on Spark: RDD, DataFrame and file mode "
                   "(python -m hydrofeed.bench spark --help)")
    sub.add_parser("_worker", help=argparse.SUPPRESS)
    a = p.parse_args(args)
    if a.what == "_worker":
        return _launch_worker()
    with tempfile.TemporaryDirectory(prefix="hydrofeed-bench-") as d:
        if a.workers:
            ws = [int(x) for x in a.workers.split(",")]
            out = bench_launch(a.rows, ws, a.repeat, Path(d), a.shuffle_buffer)
        else:
            out = bench_feed(a.rows, a.repeat, Path(d))
    if a.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{a.rows} MNIST-shaped rows; input: {out.get('feed_input', 'parquet')}; "
              f"build {out['build']}")
        for k, r in out["results"].items():
            extra = " ".join(f"{m}={v}" for m, v in r.items() if m not in ("rows_per_s", "mb_per_s"))
            if r.get("shortest_side_s", 2.0) < 2.0:
                extra += "  (under 2 s: raise --rows)"
            print(f"  {k:14s} {r['rows_per_s']:>12,.0f} rows/s {r['mb_per_s']:>9,.1f} MB/s {extra}")
        for k, v in out["ratios"].items():
            print(f"  {k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
