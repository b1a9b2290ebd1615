"""``python -m hydrofeed.bench peers [--json]``: hydrofeed and other input pipelines, side by side.

One generated MNIST-shaped dataset (784 float32 ``image`` + int64 ``label``; ``hydrofeed gen``,
4 Parquet files), with a TFRecord copy (``hydrofeed gen``, same rows) and, when MosaicML
Streaming is installed, an MDS copy (``streaming.MDSWriter`` from the Parquet rows). Every
method delivers the same thing into the same Python loop (``bench._measure``): a numpy ``image``
array ``(n, 784)`` float32 and a ``label`` array ``(n,)`` per batch of ``--batch-size`` rows.

Methods (the peers: whichever are installed):

- ``pyarrow``: ``ParquetFile.iter_batches`` in-process (``bench.pyarrow_batches``);
- ``tfdata``: ``tf.data.TFRecordDataset`` + ``parse_example`` + ``prefetch`` on the TFRecord copy
  (``bench.tfdata_batches``);
- ``petastorm``: ``make_batch_reader`` (2 reader threads) on the Parquet files;
- ``torch_dataloader_w2``: ``torch.utils.data.DataLoader(num_workers=2)`` over an
  ``IterableDataset`` reading its share of the files with pyarrow;
- ``ray_data``: ``ray.data.read_parquet(...).iter_batches`` on a local Ray instance (started, and
  its workers warmed up, before the clock starts: a running cluster, as a trainer would have);
- ``streaming``: ``streaming.StreamingDataset`` over the MDS copy, through a
  ``DataLoader(num_workers=2)`` (workers from a forkserver: see ``_streaming``);
- ``grain``: ``grain.experimental.ParquetIterDataset(...).batch``, in the trainer process (on 2
  cores faster than with ``mp_prefetch`` workers);

and hydrofeed: ``serve`` (``bench.feed_batches``: ``hydrofeed serve`` in another process, its
decode pool -> ring -> ``DataFeed.batches()``) and ``launch`` (``hydrofeed launch --workers 1``:
coordinator + feeder decoding on every core -> ring -> one trainer process running ``bench``'s
``_worker`` loop, ``_trainer`` here).

Each method runs in a fresh Python process of its own (its imports, and one-time setup: Ray's
start, the MDS copy, are not timed; nothing of one method's runtime is left in another's
process, one per round), its passes repeated until they ran >= 2 s together (one epoch a pass;
for ``launch`` a whole job a pass), the methods alternated over ``--repeat`` rounds; the best pass
and the median (``median_rows_per_s``). Reported per method:

- ``rows_per_s``: rows into the loop per second from the method's first call to its last batch
  (one epoch as the trainer waits for it: DataLoader's worker starts, ``serve``'s start, Ray
  Data's planning and tasks count); for ``launch``, from the trainer's first call (its
  ``DataFeed``) to its last batch, the job's coordinator and feeder starting meanwhile
  (``job_rows_per_s``: the whole job, every process start included);
- ``streaming_rows_per_s``: from the first batch to the last (``first_batch_s``: the wait for
  the first);
- ``trainer_cpu_s_per_100k_rows``: CPU seconds (user + system, all threads) of the process that
  runs the loop, over the same span as ``rows_per_s`` (``launch`` also reports its trainer's
  whole process, interpreter start and imports included). Worker processes of a peer
  (DataLoader's, Ray's, Streaming's) and hydrofeed's feeder are not the trainer: their CPU is
  not in it (``launch`` reports its feeder's, ``feeder_cpu_s_per_100k_rows``).

A peer that is installed but fails is reported as ``failed`` with its reason (exception type and
message), one not installed as ``not installed``. ``ratios`` are rows/s, ours / theirs
(``serve_vs_pyarrow``, ``launch_vs_pyarrow``, ``launch_vs_<peer>`` for each peer that ran; > 1:
hydrofeed faster); ``cpu_ratios``, the same names, trainer CPU, theirs / ours (> 1: hydrofeed's
trainer spends less); ``streaming_ratios`` the same on ``streaming_rows_per_s``;
``peers_ahead_of_launch`` names a peer ahead of ``launch`` and on which of these;
``fraction_of_memcpy``: the method's rows/s times the row's bytes over this machine's
single-thread copy bandwidth (``memcpy_bytes_per_s``, numpy ``copyto`` of 256 MiB), the physical
ceiling of delivering those bytes once. The peers'
venv: ``make bench-peers`` (benches/peers/requirements.txt).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

import hydrofeed as hf
from hydrofeed._proc import gen, hydrofeed_bin
from hydrofeed.bench import (
    MIN_SECS,
    ROW_BYTES,
    _cpu,
    _measure,
    _passes_for,
    _summary,
    feed_batches,
    pyarrow_batches,
    tfdata_batches,
)

Batches = Callable[[], Iterator[tuple[Any, Any]]]

#: what a method started that must stop once its result is written (Ray's local instance)
_AT_END: list[Callable[[], None]] = []

#: peer name -> (the module that says it is installed, what runs)
PEERS: dict[str, tuple[str, str]] = {
    "pyarrow": ("pyarrow", "pyarrow.parquet ParquetFile.iter_batches, in-process (Parquet)"),
    "tfdata": ("tensorflow", "tf.data TFRecordDataset + parse_example + prefetch, in-process "
               "(TFRecord copy)"),
    "petastorm": ("petastorm", "petastorm make_batch_reader, 2 reader threads (Parquet)"),
    "torch_dataloader_w2": ("torch", "torch DataLoader(num_workers=2) over pyarrow, each worker "
                            "reading its share of the files (Parquet)"),
    "ray_data": ("ray", "ray.data.read_parquet(...).iter_batches(batch_format='pyarrow'), local "
                 "Ray instance started and warmed up before the clock (Parquet)"),
    "streaming": ("streaming", "streaming.StreamingDataset through DataLoader(num_workers=2, "
                  "forkserver workers) (MDS copy, written by MDSWriter from the Parquet rows)"),
    "grain": ("grain", "grain.experimental.ParquetIterDataset(...).batch(), in-process (Parquet)"),
}
OURS: dict[str, str] = {
    "serve": "hydrofeed serve (its decode pool, one thread per CPU) -> ring -> "
             "DataFeed.batches() (Parquet)",
    "launch": "hydrofeed launch --workers 1 (coordinator + feeder on every core) -> ring -> one "
              "trainer process (Parquet)",
}
REQUIRED = ("pyarrow", "serve", "launch")


def _parquet_files(work: Path) -> list[Path]:
    return sorted(p for p in (work / "parquet").iterdir() if p.suffix == ".parquet")


def _petastorm(work: Path, batch_size: int) -> Batches:
    petastorm = importlib.import_module("petastorm")
    url = (work / "parquet").resolve().as_uri()

    def run() -> Iterator[tuple[Any, Any]]:
        # Batches are Parquet row groups (make_batch_reader has no batch size).
        with petastorm.make_batch_reader(url, schema_fields=["image", "label"], num_epochs=1,
                                         workers_count=2, shuffle_row_groups=False) as reader:
            for b in reader:
                fields = b._asdict()
                if "image" not in fields:
                    raise RuntimeError("make_batch_reader returned no image column (its "
                                       f"fields: {sorted(fields)})")
                img = fields["image"]
                if img.dtype == object:
                    img = np.stack(img)
                yield img.reshape(-1, 784), np.asarray(fields["label"])

    return run


def _torch_dataloader(work: Path, batch_size: int, workers: int = 2) -> Batches:
    from hydrofeed.bench import torch_parquet_loader

    files = _parquet_files(work)

    def run() -> Iterator[tuple[Any, Any]]:
        for img, lab in torch_parquet_loader(files, batch_size, workers):
            yield img.numpy(), lab.numpy()

    return run


def _ray_data(work: Path, batch_size: int) -> Batches:
    ray = importlib.import_module("ray")
    rd = importlib.import_module("ray.data")
    files = [str(f) for f in _parquet_files(work)]
    ray.init(include_dashboard=False, log_to_driver=False)
    _AT_END.append(ray.shutdown)
    ctx = rd.DataContext.get_current()
    ctx.enable_progress_bars = False
    # Warm up: Ray's worker processes start, and its Parquet read path is imported there.
    rd.read_parquet(files[0]).select_columns(["label"]).materialize()

    def run() -> Iterator[tuple[Any, Any]]:
        ds = rd.read_parquet(files).select_columns(["image", "label"])
        # pyarrow batches, converted as the pyarrow method does: Ray's numpy batches carry the
        # fixed_size_list column as an object array of rows (np.stack per batch, slower).
        for rb in ds.iter_batches(batch_size=batch_size, batch_format="pyarrow"):
            img = rb.column("image").combine_chunks().flatten().to_numpy().reshape(-1, 784)
            yield img, rb.column("label").to_numpy()

    return run


def _mds_dir(work: Path) -> Path:
    return work / "mds"


def write_mds(work: Path) -> None:
    """The MDS copy of the Parquet rows (``streaming.MDSWriter``, uncompressed)."""
    import pyarrow.parquet as pq

    streaming = importlib.import_module("streaming")
    columns = {"image": "ndarray:float32:784", "label": "int64"}
    with streaming.MDSWriter(out=str(_mds_dir(work)), columns=columns) as w:
        for f in _parquet_files(work):
            for rb in pq.ParquetFile(f).iter_batches(batch_size=1000, columns=["image", "label"]):
                img = rb.column(0).flatten().to_numpy().reshape(-1, 784)
                for i, label in enumerate(rb.column(1).to_pylist()):
                    w.write({"image": img[i], "label": label})


def _streaming(work: Path, batch_size: int, workers: int = 2) -> Batches:
    streaming = importlib.import_module("streaming")
    util = importlib.import_module("streaming.base.util")
    import torch.utils.data

    util.clean_stale_shared_memory()
    ds = streaming.StreamingDataset(local=str(_mds_dir(work)), batch_size=batch_size,
                                    shuffle=False)

    def run() -> Iterator[tuple[Any, Any]]:
        # forkserver: StreamingDataset's barrier holds a filelock.FileLock, which filelock >= 4
        # refuses to use in a forked child ("inherited across fork"), so DataLoader's default
        # fork start fails with the filelock of the dev venv.
        dl = torch.utils.data.DataLoader(ds, batch_size=batch_size, num_workers=workers,
                                         multiprocessing_context="forkserver")
        for b in dl:
            yield b["image"].numpy(), b["label"].numpy()

    return run


def _grain(work: Path, batch_size: int) -> Batches:
    grain = importlib.import_module("grain")
    files = [str(f) for f in _parquet_files(work)]

    def run() -> Iterator[tuple[Any, Any]]:
        ds = grain.experimental.ParquetIterDataset(files).batch(batch_size)
        for b in ds:
            yield b["image"], b["label"]

    return run


def _setup(method: str, work: Path, batch_size: int) -> Batches:
    """Imports and setup (not timed); returns what the clock runs."""
    if method == "pyarrow":
        return pyarrow_batches(work / "parquet", batch_size)
    if method == "tfdata":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        return tfdata_batches(work / "tfrecord", batch_size)
    if method == "petastorm":
        return _petastorm(work, batch_size)
    if method == "torch_dataloader_w2":
        return _torch_dataloader(work, batch_size)
    if method == "ray_data":
        return _ray_data(work, batch_size)
    if method == "streaming":
        return _streaming(work, batch_size)
    if method == "grain":
        return _grain(work, batch_size)
    if method == "serve":
        return feed_batches(work / "parquet", batch_size, "parquet")
    raise ValueError(f"unknown method {method}")


def _timed(batches: Batches, rows: int) -> dict[str, float]:
    """``bench._measure``, plus the time to the first batch and the rate from it to the last."""
    marks: dict[str, float] = {}

    def run() -> Iterator[tuple[Any, Any]]:
        marks["call"] = time.perf_counter()
        for b in batches():
            marks.setdefault("first", time.perf_counter())
            yield b
        marks["end"] = time.perf_counter()

    r = _measure(run, rows)
    return {
        "rows_per_s": r["rows_per_s"],
        "streaming_rows_per_s": rows / (marks["end"] - marks["first"]),
        "mb_per_s": r["mb_per_s"],
        "seconds": r["seconds"],
        "first_batch_s": marks["first"] - marks["call"],
        "trainer_cpu_s_per_100k_rows": r["cpu_us_per_row"] / 10,
    }


def _launch_trainer() -> int:
    """The trainer of ``launch`` (``bench._worker``'s loop, timed and its CPU counted from the
    first call, as every other method's): its figures to ``OUT``/rank-N.json."""
    c0, t0 = _cpu(), time.perf_counter()
    feed = hf.DataFeed(connect_timeout=120)
    n, t_first, t_end = 0, 0.0, 0.0
    for b in feed.batches():
        image, label = b["image"], b["label"]
        assert image.shape[1] == 784 and image.dtype == np.float32
        assert label.shape[0] == image.shape[0]
        if not n:
            t_first = time.perf_counter()
        n += image.shape[0]
    t_end = time.perf_counter()
    rank = os.environ["HYDROFEED_RANK"]
    with open(os.path.join(os.environ["OUT"], f"rank-{rank}.json"), "w") as f:
        json.dump({"rows": n, "seconds": t_end - t0, "first_batch_s": t_first - t0,
                   "streaming_seconds": t_end - t_first, "cpu": _cpu() - c0,
                   "cpu_whole_process": _cpu()}, f)
    return 0


def _launch(work: Path, rows: int, batch_size: int, out: Path) -> dict[str, float]:
    """``hydrofeed launch --workers 1`` into one trainer process (``_launch_trainer``)."""
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    r = subprocess.run(
        [hydrofeed_bin(), "launch", "--workers", "1", "--input", str(work / "parquet"),
         "--batch-size", str(batch_size), "--columns", "image,label",
         "--", sys.executable, "-m", "hydrofeed.bench_peers", "_trainer"],
        env={**os.environ, "OUT": str(out)}, capture_output=True, text=True,
    )
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"hydrofeed launch exited {r.returncode}: {r.stderr[-2000:]}")
    t = json.loads((out / "rank-0.json").read_text())
    if t["rows"] != rows:
        raise RuntimeError(f"launch: read {t['rows']} rows, expected {rows}")
    # The feeder's own getrusage, printed at its exit (as `bench feed --workers` reads it).
    m = re.search(r"cpu ([0-9.]+) s, max RSS ([0-9.]+) MiB", r.stderr)
    res = {
        "rows_per_s": rows / t["seconds"],
        "streaming_rows_per_s": rows / t["streaming_seconds"],
        "mb_per_s": rows * ROW_BYTES / t["seconds"] / 1e6,
        "seconds": t["seconds"],
        "first_batch_s": t["first_batch_s"],
        "trainer_cpu_s_per_100k_rows": t["cpu"] / rows * 1e5,
        "trainer_cpu_s_per_100k_rows_whole_process": t["cpu_whole_process"] / rows * 1e5,
        "job_wall_s": wall,
        "job_rows_per_s": rows / wall,
    }
    if m:
        res["feeder_cpu_s_per_100k_rows"] = float(m.group(1)) / rows * 1e5
    return res


def _sig(v: float) -> float:
    """``v`` to 4 significant digits (a CPU figure of 0.0123 keeps its precision)."""
    return float(f"{v:.4g}")


def _reason(e: BaseException) -> str:
    msg = " ".join(str(e).split())
    return f"{type(e).__name__}: {msg[:600]}" if msg else type(e).__name__


def run_one(method: str, work: Path, rows: int, batch_size: int,
            min_secs: float = MIN_SECS) -> dict[str, Any]:
    """One side of one method, in this process: passes until ``min_secs`` of them went by
    (each a whole epoch; for ``launch`` each a whole job): ``{"status": ..., "passes": [...]}``."""
    module = PEERS[method][0] if method in PEERS else "hydrofeed"
    if importlib.util.find_spec(module) is None:
        return {"status": "not installed", "reason": f"no module named {module!r}"}
    try:
        if method == "launch":
            passes = _passes_for(
                lambda: _launch(work, rows, batch_size, Path(tempfile.mkdtemp(dir=work))), min_secs)
        else:
            batches = _setup(method, work, batch_size)
            passes = _passes_for(lambda: _timed(batches, rows), min_secs)
    except Exception as e:  # a peer's failure is a result
        return {"status": "failed", "reason": _reason(e)}
    return {"status": "ran", "passes": passes}


def memcpy_bytes_per_s(size: int = 256 << 20, min_secs: float = MIN_SECS) -> dict[str, float]:
    """This machine's single-thread copy bandwidth, bytes/s (numpy ``copyto`` of ``size`` bytes,
    beyond the caches, repeated for ``min_secs``): best and median."""
    src = np.ones(size, dtype=np.uint8)
    dst = np.empty_like(src)
    np.copyto(dst, src)  # both touched before the clock
    rates: list[float] = []
    t_all = time.perf_counter()
    while not rates or time.perf_counter() - t_all < min_secs:
        t0 = time.perf_counter()
        np.copyto(dst, src)
        rates.append(size / (time.perf_counter() - t0))
    return {"best": max(rates), "median": float(np.median(rates)), "passes": len(rates)}


def rounds(
    sides: list[str],
    repeat: int,
    status: dict[str, dict[str, Any]],
    label: str,
    run: Callable[[str], dict[str, Any]],
    describe: Callable[[list[dict[str, Any]]], str],
) -> tuple[dict[str, list[dict[str, float]]], dict[str, list[float]]]:
    """``repeat`` rounds of every side, alternated: ``run(side)`` (a fresh process, see
    :func:`_child`) gives its passes; a side that did not run is kept in ``status`` and not
    tried again. Returns every side's passes and the seconds of each of its runs."""
    runs: dict[str, list[dict[str, float]]] = {}
    seconds: dict[str, list[float]] = {}
    for i in range(repeat):
        for m in sides:
            if m in status:
                continue  # failed or not installed: not tried again
            r = run(m)
            st = r.pop("status")
            if st != "ran":
                status[m] = {"status": st, **r}
                print(f"{label}: round {i + 1}/{repeat} {m}: {st} {r.get('reason', '')}",
                      file=sys.stderr)
                continue
            passes = r["passes"]
            runs.setdefault(m, []).extend(passes)
            seconds.setdefault(m, []).append(sum(p["seconds"] for p in passes))
            print(f"{label}: round {i + 1}/{repeat} {m}: {describe(passes)}", file=sys.stderr)
    return runs, seconds


def _child(args: list[str], timeout: float, module: str = "hydrofeed.bench_peers") -> dict[str, Any]:
    """``python -m MODULE ARGS`` in a fresh process (a side of a benchmark: this one's, or
    ``bench_images``'); its result file's JSON."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        try:
            r = subprocess.run([sys.executable, "-m", module, *args,
                                "--result", f.name],
                               capture_output=True, text=True, timeout=timeout)
            why = f"process exited {r.returncode} with no result"
            tail = [ln for ln in (r.stderr or r.stdout).splitlines() if ln.strip()][-3:]
        except subprocess.TimeoutExpired:
            why, tail = f"TimeoutExpired: no result in {timeout:.0f} s", []
        text = Path(f.name).read_text()
    if text:  # written before a hang at exit, too
        res: dict[str, Any] = json.loads(text)
        return res
    return {"status": "failed", "reason": f"{why}: {' | '.join(tail)[-600:]}" if tail else why}


def bench_peers(rows: int, repeat: int, batch_size: int, work: Path, timeout: float,
                only: list[str] | None = None, min_secs: float = MIN_SECS) -> dict[str, Any]:
    methods = [m for m in [*PEERS, *OURS] if only is None or m in only or m in REQUIRED]
    # One binary for every pass (a rebuild of the checkout's during the run would mix two).
    binary = hydrofeed_bin()
    mtime = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(os.path.getmtime(binary)))
    os.environ["HYDROFEED_BIN"] = shutil.copy2(binary, str(work / "hydrofeed"))
    print(f"peers: generating {rows} rows (Parquet, TFRecord)", file=sys.stderr)
    gen(work / "parquet", "parquet", rows, files=4)
    if "tfdata" in methods:
        gen(work / "tfrecord", "tfrecord", rows, files=4)
    status: dict[str, dict[str, Any]] = {}
    if "streaming" in methods and importlib.util.find_spec("streaming") is not None:
        print("peers: writing the MDS copy (streaming.MDSWriter)", file=sys.stderr)
        made = _child(["_mds", "--work", str(work)], timeout)
        if made["status"] != "ran":
            status["streaming"] = {"status": "failed", "reason": f"MDSWriter: {made['reason']}"}
    print("peers: measuring memcpy", file=sys.stderr)
    memcpy = memcpy_bytes_per_s(min_secs=min_secs)
    runs, sides = rounds(
        methods, repeat, status, "peers",
        lambda m: _child(["_run", m, "--work", str(work), "--rows", str(rows),
                          "--batch-size", str(batch_size), "--min-secs", str(min_secs)], timeout),
        lambda passes: ", ".join(f"{p['rows_per_s']:,.0f}" for p in passes) + " rows/s",
    )

    def entry(m: str, what: str) -> dict[str, Any]:
        if m not in methods:
            return {"status": "skipped", "reason": "not in --only", "what": what}
        if m in status:
            return {**status[m], "what": what}
        s = _summary(runs[m], sides[m])
        return {"status": "ran", "what": what, **{k: _sig(v) for k, v in s.items()},
                "fraction_of_memcpy": _sig(s["rows_per_s"] * ROW_BYTES / memcpy["best"]),
                "runs_rows_per_s": [round(r["rows_per_s"]) for r in runs[m]]}

    peers = {m: entry(m, what) for m, (_, what) in PEERS.items()}
    ours = {m: entry(m, w) for m, w in OURS.items()}
    ratios: dict[str, float] = {}
    cpu_ratios: dict[str, float] = {}
    streaming_ratios: dict[str, float] = {}

    def ratio(name: str, a: dict[str, Any], b: dict[str, Any]) -> None:
        if a["status"] == "ran" and b["status"] == "ran":
            ratios[name] = _sig(a["rows_per_s"] / b["rows_per_s"])
            ratios[name + "_median"] = _sig(a["median_rows_per_s"] / b["median_rows_per_s"])
            cpu_ratios[name] = _sig(b["trainer_cpu_s_per_100k_rows"]
                                    / max(a["trainer_cpu_s_per_100k_rows"], 1e-9))
            streaming_ratios[name] = _sig(a["streaming_rows_per_s"] / b["streaming_rows_per_s"])

    ratio("serve_vs_pyarrow", ours["serve"], peers["pyarrow"])
    for m, p in peers.items():
        ratio(f"launch_vs_{m}", ours["launch"], p)
    # Where a peer is ahead of launch: which measures (the README says why).
    ahead: dict[str, list[str]] = {}
    for name, rs in (("rows_per_s", ratios), ("trainer_cpu", cpu_ratios),
                     ("streaming_rows_per_s", streaming_ratios)):
        for k, v in rs.items():
            if k.startswith("launch_vs_") and not k.endswith("_median") and v < 1:
                ahead.setdefault(k.removeprefix("launch_vs_"), []).append(name)
    return {
        "benchmark": "peers",
        "rows": rows,
        "row_bytes": ROW_BYTES,
        "batch_size": batch_size,
        "repeat": repeat,
        "min_secs": min_secs,
        "input": "hydrofeed gen: 4 Parquet files (image fixed_size_list<float32, 784>, label "
                 "int64); a TFRecord copy (hydrofeed gen, same rows); an MDS copy "
                 "(streaming.MDSWriter from the Parquet rows)",
        "metric_note": "rows into a Python loop taking numpy image (n, 784) and label (n,): "
                       "rows_per_s from the method's first call (launch: the trainer's "
                       "DataFeed) to its last batch, streaming_rows_per_s from its first batch; "
                       "trainer_cpu_s_per_100k_rows: CPU of the process running that loop over "
                       "the rows_per_s span. Each method in a fresh process per round (imports, "
                       "Ray's start and the MDS copy not timed), passes repeated until the "
                       "round's side ran >= 2 s, methods alternated over repeat rounds; best "
                       "pass and median; fraction_of_memcpy: rows_per_s x row bytes over "
                       "memcpy_bytes_per_s",
        "hydrofeed_bin": binary,
        "hydrofeed_bin_mtime": mtime,
        "build": "release" if "/release/" in binary else "debug" if "/debug/" in binary else "?",
        "python": sys.executable,
        "cpus": os.cpu_count(),
        "memcpy_bytes_per_s": {k: _sig(v) for k, v in memcpy.items()},
        "peers": peers,
        "hydrofeed": ours,
        "ratios": ratios,
        "cpu_ratios": cpu_ratios,
        "streaming_ratios": streaming_ratios,
        "peers_ahead_of_launch": ahead,
    }


def main(argv: list[str]) -> int:
    if argv[:1] == ["_trainer"]:
        return _launch_trainer()
    if argv[:1] in (["_run"], ["_mds"]):
        p = argparse.ArgumentParser(prog="python -m hydrofeed.bench_peers")
        p.add_argument("what")
        p.add_argument("method", nargs="?")
        p.add_argument("--work", type=Path, required=True)
        p.add_argument("--rows", type=int, default=0)
        p.add_argument("--batch-size", type=int, default=1000)
        p.add_argument("--min-secs", type=float, default=MIN_SECS)
        p.add_argument("--result", type=Path, required=True)
        c = p.parse_args(argv)
        if c.what == "_mds":
            try:
                write_mds(c.work)
                res: dict[str, Any] = {"status": "ran"}
            except Exception as e:
                res = {"status": "failed", "reason": _reason(e)}
        else:
            res = run_one(c.method, c.work, c.rows, c.batch_size, c.min_secs)
        c.result.write_text(json.dumps(res))
        for stop in reversed(_AT_END):
            stop()
        return 0
    p = argparse.ArgumentParser(prog="python -m hydrofeed.bench peers", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=200000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=1000)
    p.add_argument("--timeout", type=float, default=600,
                   help="seconds one pass of one method may take (setup included)")
    p.add_argument("--only", help="comma-separated methods to run (pyarrow, serve and launch "
                   "always run): " + ", ".join([*PEERS, *OURS]))
    p.add_argument("--min-secs", type=float, default=MIN_SECS,
                   help="seconds each method's side runs at least, per round (passes repeated)")
    p.add_argument("--json", action="store_true", help="print JSON only")
    a = p.parse_args(argv)
    only = a.only.split(",") if a.only else None
    with tempfile.TemporaryDirectory(prefix="hydrofeed-peers-") as d:
        out = bench_peers(a.rows, a.repeat, a.batch_size, Path(d), a.timeout, only, a.min_secs)
    if a.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{a.rows} MNIST-shaped rows, batch {a.batch_size}, {a.repeat} rounds of >= 2 s "
              f"each, best pass (median); memcpy "
              f"{out['memcpy_bytes_per_s']['best'] / 1e9:.1f} GB/s; build {out['build']}")
        for m, r in [*out["peers"].items(), *out["hydrofeed"].items()]:
            if r["status"] == "ran":
                print(f"  {m:20s} {r['rows_per_s']:>10,.0f} rows/s "
                      f"({r['median_rows_per_s']:>10,.0f} median, "
                      f"{r['fraction_of_memcpy']:.3f} of memcpy) "
                      f"({r['streaming_rows_per_s']:>10,.0f} from the first batch) "
                      f"{r['trainer_cpu_s_per_100k_rows']:>7.3f} trainer CPU s/100k rows")
            else:
                print(f"  {m:20s} {r['status']}: {r.get('reason', '')}")
        for k, v in out["ratios"].items():
            print(f"  {k}: {v} (trainer CPU {out['cpu_ratios'][k]}, from the first batch "
                  f"{out['streaming_ratios'][k]})")
    ran = {m: r["status"] == "ran" for m, r in [*out["peers"].items(), *out["hydrofeed"].items()]}
    return 0 if all(ran[m] for m in REQUIRED) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
