"""``python -m hydrofeed.demo``: a feeder process feeds this trainer process through the ring.

Generates a small MNIST-shaped TFRecord dataset with ``hydrofeed gen``, starts
``hydrofeed serve`` as a separate process, consumes it here with ``DataFeed.batches()`` (numpy
views of ring memory), and prints rows/s, MB/s and rows seen. The server process is cleaned up
on any exit (normal, error, Ctrl-C, SIGTERM).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import hydrofeed as hf
from hydrofeed._proc import ServeProcess, gen


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m hydrofeed.demo", description=__doc__)
    p.add_argument("--rows", type=int, default=20000)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--epochs", type=int, default=2)
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hydrofeed-demo-") as d:
        data = Path(d) / "mnist"
        gen(data, "tfrecord", a.rows, files=2)
        print(f"generated {a.rows} MNIST-shaped rows in {data}")
        with ServeProcess(str(data), "--epochs", str(a.epochs)) as server:
            feed = hf.DataFeed(server.socket, batch_size=a.batch_size, connect_timeout=30)
            rows = 0
            nbytes = 0
            label_sum = 0
            t0 = time.perf_counter()
            for batch in feed.batches():
                image, label = batch["image"], batch["label"]
                # A stand-in for a training step: touch every value once.
                float(np.add.reduce(image, axis=None))
                label_sum += int(label.sum())
                rows += batch.num_rows
                nbytes += image.nbytes + label.nbytes
            dt = time.perf_counter() - t0
            status = server.wait()
            print(
                f"trainer saw {rows} rows ({a.epochs} epochs of {a.rows}) in {dt:.2f}s: "
                f"{rows / dt:,.0f} rows/s, {nbytes / dt / 1e6:,.1f} MB/s; "
                f"feeder pid {feed.feeder_pid} exited with {status}"
            )
            if rows != a.rows * a.epochs:
                print(f"ERROR: expected {a.rows * a.epochs} rows", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
