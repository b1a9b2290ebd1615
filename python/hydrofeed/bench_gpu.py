"""``python -m hydrofeed.bench gpu [--json]`` (also ``hydrofeed bench gpu``): the GPU staging path.

In one run, on GPU 0:

- **H2D GB/s** from a registered shared memfd mapping (what a ring is, ``cuMemHostRegister``),
  from ``cuMemHostAlloc`` memory (the pinned ceiling) and from ``malloc`` memory (pageable),
  each ``--h2d-iters`` copies of ``--h2d-mib`` MiB timed with CUDA events; plus, with torch,
  ``torch.from_numpy(a).to("cuda")`` of a numpy array (what users do today).
- **End to end**, MNIST-shaped rows (784 float32 ``image`` + int64 ``label``) from Parquet into
  CUDA tensors, the same GPU work per batch (a sum of each column, so every batch is used),
  ``torch.cuda.synchronize()`` at the end, methods alternated ``--repeat`` times, best run:
  ``launch``: ``hydrofeed launch --workers 1`` (coordinator + feeder decoding on every core) ->
  ring -> ``DataFeed.batches(device="cuda")`` -> ``torch.from_dlpack`` in the trainer;
  ``serve``: the same from ``hydrofeed serve`` (one decode thread) in this process;
  ``dataloader_pinned_w<N>``: ``torch.utils.data.DataLoader(num_workers=N, pin_memory=True)``
  over pyarrow, each worker reading its share of the files -> ``.to("cuda", non_blocking=True)``;
  ``pyarrow_to_cuda``: pyarrow in-process -> ``torch.as_tensor(..., device="cuda")``;
  ``tfdata_prefetch_to_device``: tf.data TFRecord + ``parse_example`` + ``prefetch_to_device``
  (when TensorFlow sees a GPU). Rates are rows/s from the first batch to the end
  (``streaming_rows_per_s``: process starts left out for every method) and from the start.

Ratios (ours / baseline, > 1: ours faster): ``ring_h2d_vs_pinned``, ``ring_h2d_vs_pageable``
(against torch's pageable copy when torch is installed, else the malloc copy),
``feed_vs_dataloader_pinned`` (``launch`` against the best DataLoader),
``serve_vs_dataloader_pinned_w2``, ``launch_vs_pyarrow_to_cuda``. Without a CUDA device it
prints ``{"skipped": "no CUDA device: ...", ...}`` and exits 0.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

import hydrofeed as hf
from hydrofeed import gpu
from hydrofeed._proc import ServeProcess, gen, hydrofeed_bin

ROW_BYTES = 784 * 4 + 8


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def torch_pageable_gbps(mib: int, iters: int) -> float:
    """``torch.from_numpy(a).to("cuda")`` of a ``mib`` MiB numpy array, GB/s."""
    import torch

    a = np.ones(mib * (1 << 20) // 4, dtype=np.float32)
    t = torch.from_numpy(a)
    t.to("cuda")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        t.to("cuda")
    torch.cuda.synchronize()
    return a.nbytes * iters / (time.perf_counter() - t0) / 1e9


def _consume(batches: Iterator[tuple[Any, Any]]) -> dict[str, float]:
    """Runs the same GPU work on every batch; wall time from the start and from the first batch
    (streaming: what remains once every method has started its processes)."""
    import torch

    acc = torch.zeros((), device="cuda", dtype=torch.float64)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    n, first, t_first = 0, 0, 0.0
    for image, label in batches:
        assert image.is_cuda and label.is_cuda and image.shape[1] == 784
        acc += image.sum(dtype=torch.float64) + label.sum(dtype=torch.float64)
        n += image.shape[0]
        if not first:
            first, t_first = n, time.perf_counter()
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    return {"rows": n, "seconds": t1 - t0, "rows_per_s": n / (t1 - t0),
            "streaming_rows_per_s": (n - first) / (t1 - t_first) if t1 > t_first else 0.0,
            "gb_per_s": n * ROW_BYTES / (t1 - t0) / 1e9, "checksum": float(acc.item())}


def _run(name: str, make: Callable[[], Iterator[tuple[Any, Any]]], rows: int) -> dict[str, float]:
    r = _consume(make())
    if r.pop("rows") != rows:
        raise RuntimeError(f"{name}: wrong row count, expected {rows}")
    return r


def _launch_worker() -> int:
    """The trainer of the ``launch`` method: device batches -> torch, result to ``OUT``."""
    from torch.utils.dlpack import from_dlpack

    feed = hf.DataFeed(connect_timeout=120)
    r = _consume((from_dlpack(b["image"]), from_dlpack(b["label"]))
                 for b in feed.batches(device="cuda"))
    r["staging"] = feed.metrics()["gpu"]
    with open(os.path.join(os.environ["OUT"], "rank-0.json"), "w") as f:
        json.dump(r, f)
    return 0


def launch_cuda(data: Path, batch_size: int, rows: int, out: Path) -> dict[str, Any]:
    """``hydrofeed launch --workers 1`` (coordinator + feeder decoding on every core) into one
    trainer taking device batches."""
    import subprocess

    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    r = subprocess.run([hydrofeed_bin(), "launch", "--workers", "1", "--input", str(data),
                        "--batch-size", str(batch_size), "--columns", "image,label", "--",
                        sys.executable, "-m", "hydrofeed.bench_gpu", "_worker"],
                       env={**os.environ, "OUT": str(out)}, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"hydrofeed launch failed:\n{r.stderr[-3000:]}")
    res: dict[str, Any] = json.loads((out / "rank-0.json").read_text())
    if res.pop("rows") != rows:
        raise RuntimeError("launch: wrong row count")
    res["job_wall_s"] = wall
    return res


def feed_cuda(data: Path, batch_size: int) -> Callable[[], Iterator[tuple[Any, Any]]]:
    from torch.utils.dlpack import from_dlpack

    def run() -> Iterator[tuple[Any, Any]]:
        with ServeProcess(str(data), "--columns", "image,label") as s:
            feed = hf.DataFeed(s.socket, batch_size=batch_size, connect_timeout=120)
            for b in feed.batches(device="cuda:0"):
                yield from_dlpack(b["image"]), from_dlpack(b["label"])
            run.metrics = feed.metrics().get("gpu", {})  # type: ignore[attr-defined]

    return run


def _files(data: Path) -> list[Path]:
    return sorted(p for p in data.iterdir() if p.suffix == ".parquet")


def dataloader_pinned(data: Path, batch_size: int,
                      workers: int = 2) -> Callable[[], Iterator[tuple[Any, Any]]]:
    from hydrofeed.bench import torch_parquet_loader

    files = _files(data)

    def run() -> Iterator[tuple[Any, Any]]:
        for img, lab in torch_parquet_loader(files, batch_size, workers, pin_memory=True):
            yield img.to("cuda", non_blocking=True), lab.to("cuda", non_blocking=True)

    return run


def pyarrow_to_cuda(data: Path, batch_size: int) -> Callable[[], Iterator[tuple[Any, Any]]]:
    import torch

    from hydrofeed.bench import pyarrow_batches

    host = pyarrow_batches(data, batch_size)

    def run() -> Iterator[tuple[Any, Any]]:
        for img, label in host():
            yield torch.as_tensor(img, device="cuda"), torch.as_tensor(label, device="cuda")

    return run


def _tf_gpu() -> str | None:
    """Why tf.data's prefetch_to_device cannot run here (None: it can)."""
    try:
        import tensorflow as tf
    except ImportError:
        return "tensorflow is not installed"
    if not tf.config.list_physical_devices("GPU"):
        return "tensorflow sees no GPU (a CPU-only build)"
    return None


def tfdata_prefetch(data: Path, batch_size: int) -> Callable[[], Iterator[tuple[Any, Any]]]:
    import tensorflow as tf
    from torch.utils.dlpack import from_dlpack

    files = sorted(str(p) for p in data.iterdir() if p.suffix == ".tfrecord")
    spec = {"image": tf.io.FixedLenFeature([784], tf.float32),
            "label": tf.io.FixedLenFeature([], tf.int64)}

    def run() -> Iterator[tuple[Any, Any]]:
        ds = (tf.data.TFRecordDataset(files).batch(batch_size)
              .map(lambda r: tf.io.parse_example(r, spec), num_parallel_calls=tf.data.AUTOTUNE)
              .apply(tf.data.experimental.prefetch_to_device("/gpu:0")))
        for x in ds:
            yield (from_dlpack(tf.experimental.dlpack.to_dlpack(x["image"])),
                   from_dlpack(tf.experimental.dlpack.to_dlpack(x["label"])))

    return run


def bench_gpu(rows: int, batch_size: int, repeat: int, mib: int, iters: int, work: Path,
              dl_workers: tuple[int, ...] = (2, 8)) -> dict[str, Any]:
    ok, why = gpu.available()
    base: dict[str, Any] = {"benchmark": "gpu", "hydrofeed_bin": hydrofeed_bin(),
                            "cpus": os.cpu_count()}
    if not ok:
        return {"skipped": why or "no CUDA device", **base}
    h = dict(gpu.h2d_bandwidth(mib << 20, iters, 0))
    torch = _torch()
    out: dict[str, Any] = {**base, "device": h.pop("device_name"), "rows": rows,
                           "batch_size": batch_size, "repeat": repeat,
                           "h2d_gb_per_s": {k: round(v, 3) for k, v in h.items()
                                            if k in ("ring", "pinned", "pageable")},
                           "h2d_bytes": mib << 20, "h2d_iters": iters,
                           "ring_register_s": round(h["register_s"], 4)}
    if torch is not None:
        out["h2d_gb_per_s"]["torch_pageable"] = round(torch_pageable_gbps(mib, iters), 3)
    g = out["h2d_gb_per_s"]
    ratios: dict[str, float] = {
        "ring_h2d_vs_pinned": round(g["ring"] / g["pinned"], 3),
        "ring_h2d_vs_pageable": round(g["ring"] / g.get("torch_pageable", g["pageable"]), 3),
    }
    results: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    if torch is None:
        skipped["end_to_end"] = "torch with CUDA is not installed"
    else:
        pq_dir = work / "parquet"
        files = max(4, dl_workers[-1])
        gen(pq_dir, "parquet", rows, files=files)
        methods: dict[str, Callable[[], Callable[[], Iterator[tuple[Any, Any]]]]] = {
            "serve": lambda: feed_cuda(pq_dir, batch_size),
            **{f"dataloader_pinned_w{w}": functools.partial(dataloader_pinned, pq_dir,
                                                             batch_size, w)
               for w in dl_workers},
            "pyarrow_to_cuda": lambda: pyarrow_to_cuda(pq_dir, batch_size),
        }
        tf_why = _tf_gpu()
        if tf_why is None:
            gen(work / "tfrecord", "tfrecord", rows, files=files)
            methods["tfdata_prefetch_to_device"] = lambda: tfdata_prefetch(work / "tfrecord",
                                                                           batch_size)
        else:
            skipped["tfdata_prefetch_to_device"] = tf_why
        runs_of: dict[str, list[dict[str, Any]]] = {}
        for i in range(repeat):  # alternated, so drift hits every method alike
            runs_of.setdefault("launch", []).append(
                launch_cuda(pq_dir, batch_size, rows, work / f"launch-{i}"))
            for name, make in methods.items():
                f = make()
                runs_of.setdefault(name, []).append(_run(name, f, rows))
                if hasattr(f, "metrics"):
                    results["serve_staging"] = f.metrics
        for name, runs in runs_of.items():
            results[name] = max(runs, key=lambda r: r["streaming_rows_per_s"])
        results["launch_staging"] = results["launch"].pop("staging")
        sums = {round(r["checksum"], 0) for k, r in results.items() if "checksum" in r}
        out["same_checksum"] = len(sums) == 1
        best_dl = max((k for k in results if k.startswith("dataloader_pinned_w")),
                      key=lambda k: results[k]["streaming_rows_per_s"])
        out["best_dataloader"] = best_dl

        def ratio(a: str, b: str) -> float:
            return round(float(results[a]["streaming_rows_per_s"])
                         / float(results[b]["streaming_rows_per_s"]), 3)

        ratios["feed_vs_dataloader_pinned"] = ratio("launch", best_dl)
        ratios["serve_vs_dataloader_pinned_w2"] = ratio("serve", "dataloader_pinned_w2")
        ratios["launch_vs_pyarrow_to_cuda"] = ratio("launch", "pyarrow_to_cuda")
    out["results"] = {k: ({m: round(v, 4) if isinstance(v, float) else v for m, v in r.items()}
                          if isinstance(r, dict) else r) for k, r in results.items()}
    out["skipped_methods"] = skipped
    out["ratios"] = ratios
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["_worker"]:
        return _launch_worker()
    p = argparse.ArgumentParser(prog="python -m hydrofeed.bench gpu", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--batch-size", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--h2d-mib", type=int, default=64)
    p.add_argument("--h2d-iters", type=int, default=20)
    p.add_argument("--dataloader-workers", default="2,8",
                   help="num_workers of the DataLoader baselines (the best is the ratio's)")
    p.add_argument("--json", action="store_true", help="print JSON only")
    a = p.parse_args(argv)
    dl_workers = tuple(sorted({2, *(int(w) for w in a.dataloader_workers.split(","))}))
    with tempfile.TemporaryDirectory(prefix="hydrofeed-bench-gpu-") as d:
        out = bench_gpu(a.rows, a.batch_size, a.repeat, a.h2d_mib, a.h2d_iters, Path(d),
                        dl_workers)
    if a.json or "skipped" in out:
        print(json.dumps(out, indent=2))
        return 0
    print(f"{out['device']}: H2D GB/s " + ", ".join(f"{k} {v}" for k, v in
                                                    out["h2d_gb_per_s"].items()))
    for k, r in out["results"].items():
        if "rows_per_s" in r:
            print(f"  {k:26s} {r['streaming_rows_per_s']:>12,.0f} rows/s streaming "
                  f"({r['rows_per_s']:,.0f} from the start)")
    for k, v in out["ratios"].items():
        print(f"  {k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
