"""`make demo` (`python -m hydrofeed.demo`) as a user runs it: two Keras trainers under
`hydrofeed launch` learn the generated data (the loss falls), the output leads with one headline
per rank (rows/s into the trainer, the share of time it waited for input), each rank's summary
line follows in the details, and TensorFlow's start-up noise stays out of the output."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.tf, pytest.mark.timeout(600)]


def test_demo_learns_and_prints_the_summary_quietly(hf_bin: str) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "hydrofeed.demo", "--rows", "20000", "--epochs", "3"],
        env={**os.environ, "HYDROFEED_BIN": hf_bin}, capture_output=True, text=True, timeout=500,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    epochs = re.findall(r"rank (\d) epoch (\d): \d+ steps, \d+ rows, loss ([0-9.]+) -> ([0-9.]+), "
                        r"accuracy ([0-9.]+)", out)
    assert len(epochs) == 6, out[-4000:]
    for rank in "01":
        mine = sorted((int(e), float(a), float(b), float(acc))
                      for k, e, a, b, acc in epochs if k == rank)
        # Chance is ln(10) = 2.30 and 10% accuracy: the loss starts there and falls by epochs.
        assert mine[0][1] > 2.0 and mine[-1][2] < mine[0][1] - 0.5 and mine[-1][3] > 0.4, mine
        assert mine[0][2] > mine[1][2] > mine[2][2], mine
    assert len(re.findall(r"hydrofeed rank \d: \d+ rows, \d+ steps", out)) == 2, out[-4000:]
    for noise in ("absl::InitializeLog", "cudart_stub", "cuInit", "oneDNN custom operations"):
        assert noise not in out, out[-4000:]
    # The headlines lead: a title, then one line per rank, in rank order.
    lines = r.stdout.splitlines()
    assert lines[0].startswith("hydrofeed demo: 2 Keras trainers"), out[:2000]
    for rank, line in enumerate(lines[1:3]):
        m = re.fullmatch(rf"  rank {rank}: ([0-9,]+) rows/s into the trainer, waited for input "
                         r"(\d+)% of the time \(\d+ rows, \d+ steps; .*\)", line)
        assert m and int(m[1].replace(",", "")) > 0 and int(m[2]) <= 100, out[:2000]
