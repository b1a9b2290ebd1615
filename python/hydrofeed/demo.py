"""``python -m hydrofeed.demo``: train a small Keras model with 2 workers through ``hydrofeed launch``.

Generates a small MNIST-shaped Parquet dataset with ``hydrofeed gen``, then runs
``hydrofeed launch --workers 2 -- python -m hydrofeed.demo --worker``: an in-process
coordinator, one feeder daemon, two trainer processes (ranks 0 and 1, each with its own
``TF_CONFIG`` and ring). Each trainer trains on the batches of its rank (numpy views of ring
memory). Every rank takes the same number of steps per epoch, and the two ranks' rows are
disjoint and together cover the epoch (minus the remainder ``launch`` reports).

The output leads with one headline per rank: the rows per second fed into its trainer once
the first batch arrived, and the share of that time the trainer waited for input. The details
follow: each rank's epochs (steps, loss, accuracy), the feeder's and ``launch``'s summaries.
TensorFlow's start-up lines stay out. Imports TensorFlow (Keras) only: ``make demo`` installs
what it needs and nothing more (no torch, no JAX, no Spark).

How the model trains, and why: **plain per-worker Keras without a distribution strategy**
(``model.train_on_batch`` on each rank's own batches; no gradient all-reduce). Keras 3's
``model.fit`` does not work under ``tf.distribute.MultiWorkerMirroredStrategy``
(keras-team/keras#20585), and a custom training loop over ``MultiWorkerMirroredStrategy``
would spend most of this demo's one-minute budget on 2 cores starting gRPC collectives for a
model this small. The demo is about the feed (equal steps, disjoint shards, acks, end of
epoch at the same step on every rank); for synchronous data-parallel training, use a custom
loop with ``strategy.run`` over ``DataFeed.batches()``: ``TF_CONFIG`` is already set by
``launch``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hydrofeed._proc import gen, hydrofeed_bin


# What TensorFlow's C++ side prints at import on a host without a GPU, before its logging can
# be configured (TF_CPP_MIN_LOG_LEVEL does not reach these): not for the demo's output.
_TF_NOISE = (
    "All log messages before absl::InitializeLog()",
    "cudart_stub.cc",
    "Could not find cuda drivers",
    "failed call to cuInit",
    "computation placer already registered",
    "Unable to register cu",
    "TF-TRT Warning",
    "oneDNN custom operations are on",
    "This TensorFlow binary is optimized",
    "rebuild TensorFlow with the appropriate compiler flags",
)

# A rank's end-of-feed line (`hydrofeed.feed.summary_line`), as `launch` passes it on.
_SUMMARY = re.compile(
    r"hydrofeed rank (\d+): (\d+) rows, (\d+) steps; first batch after [0-9.]+ s, then "
    r"([0-9.]+) s: ([0-9,]+) rows/s; waited for input (\d+)% of the time"
)


def _import_keras_quietly() -> Any:
    """``import keras`` (and TensorFlow under it) with the start-up noise its C++ side writes
    to fd 2 dropped; every other line it wrote is passed on, all of them if the import fails."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as cap:
        os.dup2(cap.fileno(), 2)
        try:
            import keras
            import tensorflow as tf  # noqa: F401  (its devices are probed here, still captured)

            tf.config.list_physical_devices()
            failed = False
        except BaseException:
            failed = True
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            cap.seek(0)
            for line in cap.read().decode(errors="replace").splitlines():
                if failed or not any(n in line for n in _TF_NOISE):
                    print(line, file=sys.stderr)
    return keras


def worker(epochs_hint: int) -> int:
    """One rank: train on the feed, print a line per epoch."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    keras = _import_keras_quietly()
    import numpy as np

    import hydrofeed as hf

    rank = int(os.environ.get("HYDROFEED_RANK", "0"))
    keras.utils.set_random_seed(rank)
    model = keras.Sequential(
        [keras.Input((784,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    feed = hf.DataFeed(connect_timeout=120)
    epoch, steps, rows, t0 = None, 0, 0, time.perf_counter()
    loss = acc = first = float("nan")

    def summary() -> None:
        dt = time.perf_counter() - t0
        print(
            f"rank {rank} epoch {epoch}: {steps} steps, {rows} rows, loss {first:.3f} -> "
            f"{loss:.3f}, accuracy {acc:.3f}, {rows / max(dt, 1e-9):,.0f} rows/s",
            flush=True,
        )

    for batch in feed.batches():
        if epoch is not None and batch.epoch != epoch:
            summary()
            steps, rows, t0 = 0, 0, time.perf_counter()
            model.reset_metrics()  # loss and accuracy: this epoch's running means
        epoch = batch.epoch
        x = np.asarray(batch["image"])
        # The generated label is the tenth of the image with the most ink: learnable.
        y = np.asarray(batch["label"]) % 10
        loss, acc = (float(v) for v in model.train_on_batch(x, y, return_dict=False)[:2])
        if steps == 0:
            first = loss
        steps += 1
        rows += batch.num_rows
    if epoch is not None:
        summary()
    return 0


def headlines(lines: list[str]) -> list[str]:
    """One line per rank from the ranks' end-of-feed lines, by rank."""
    out = []
    for m in sorted((m for m in map(_SUMMARY.search, lines) if m), key=lambda m: int(m[1])):
        rank, rows, steps, secs, rate, waited = m.groups()
        out.append(
            f"rank {rank}: {rate} rows/s into the trainer, waited for input {waited}% of the "
            f"time ({rows} rows, {steps} steps; steady rate over the {secs} s after the first "
            f"batch)"
        )
    return out


def _run_quietly(cmd: list[str], env: dict[str, str]) -> tuple[int, list[str]]:
    """Runs ``cmd`` with its output kept (TensorFlow's start-up lines dropped); on a terminal a
    status line shows the last line meanwhile, erased at the end."""
    live = sys.stderr.isatty()
    kept: list[str] = []
    with subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, bufsize=1) as p:
        assert p.stdout is not None
        for line in p.stdout:
            line = line.rstrip("\n")
            if any(n in line for n in _TF_NOISE):
                continue
            kept.append(line)
            if live:
                print(f"\r\033[K{line[:100]}", end="", file=sys.stderr, flush=True)
    if live:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    return p.returncode, kept


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m hydrofeed.demo", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    # 50,000 rows: 25,000 per rank, 78 MB of images each, more than the 64 MiB ring holds, so
    # the demo shows the feed flowing through the ring rather than fitting in it.
    p.add_argument("--rows", type=int, default=50000)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker:
        return worker(a.epochs)
    with tempfile.TemporaryDirectory(prefix="hydrofeed-demo-") as d:
        data = Path(d) / "mnist"
        gen(data, "parquet", a.rows, files=3)
        t0 = time.perf_counter()
        code, lines = _run_quietly(
            [hydrofeed_bin(), "launch", "--workers", str(a.workers), "--input", str(data),
             "--epochs", str(a.epochs), "--batch-size", str(a.batch_size),
             "--columns", "image,label", "--", sys.executable, "-m", "hydrofeed.demo", "--worker"],
            {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
        )
        secs = time.perf_counter() - t0
        heads = headlines(lines)
        print(f"hydrofeed demo: {a.workers} Keras trainers fed through shared-memory rings "
              f"by one feeder ({a.rows} MNIST-shaped rows, Parquet, {a.epochs} epochs)")
        for h in heads:
            print(f"  {h}")
        if len(heads) < a.workers:
            print(f"  ({a.workers - len(heads)} rank(s) did not reach the end of the feed)")
        print("\ndetails:")
        for line in lines:
            print(f"  {line}")
        print(f"\nhydrofeed launch exited with {code} after {secs:.1f} s")
        return code


if __name__ == "__main__":
    sys.exit(main())
