"""Keras `model.fit` under `MultiWorkerMirroredStrategy` across workers of `hydrofeed launch`:
one model trained synchronously (both ranks end with the same weights), on data that can be
learned, reaching the accuracy of one worker; run with the example the README shows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("tf_keras")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "keras_multiworker.py"
ROWS, FILES, FEATURES, BATCH, EPOCHS = 8192, 4, 16, 64, 3


def learnable(out: Path) -> Path:
    """Labels a function of the features (the side of a hyperplane): a small model learns it."""
    out.mkdir()
    rng = np.random.default_rng(7)
    w = rng.normal(size=FEATURES).astype(np.float32)
    per = ROWS // FILES
    for f in range(FILES):
        x = rng.normal(size=(per, FEATURES)).astype(np.float32)
        y = (x @ w > 0).astype(np.int64)
        xs = pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), FEATURES)
        ids = pa.array(np.arange(f * per, (f + 1) * per, dtype=np.int64))
        pq.write_table(pa.table({"id": ids, "x": xs, "y": y}), out / f"part-{f}.parquet")
    return out


def fit(hf_bin: str, data: Path, out: Path, workers: int) -> list[dict]:
    out.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    r = subprocess.run(
        [hf_bin, "launch", "--workers", str(workers), "--input", str(data), "--epochs", str(EPOCHS),
         "--batch-size", str(BATCH), "--", sys.executable, str(EXAMPLE), "--x", "x", "--y", "y",
         "--classes", "2", "--lr", "0.1", "--out", str(out)],
        capture_output=True, text=True, timeout=600, env=env,
    )
    assert r.returncode == 0, r.stderr[-4000:]
    return [json.loads((out / f"rank-{k}.json").read_text()) for k in range(workers)]


def test_keras_fit_multiworker_trains_one_model(hf_bin: str, tmp_path: Path) -> None:
    data = learnable(tmp_path / "data")
    two = fit(hf_bin, data, tmp_path / "two", 2)
    for r in two:
        assert r["workers"] == 2 and r["replicas"] == 2, r
        # Every rank takes the same steps; the epoch is every row once (8192 = 2 x 64 x 64).
        assert r["steps_per_epoch"] == ROWS // (2 * BATCH), r
        assert r["rows"] == EPOCHS * ROWS // 2, r
        assert r["loss"][-1] < r["loss"][0], r
        assert r["accuracy"][-1] > 0.9, r
    # One model: the all-reduce kept both ranks' weights identical.
    assert two[0]["weights_sha256"] == two[1]["weights_sha256"]
    one = fit(hf_bin, data, tmp_path / "one", 1)[0]
    assert one["steps_per_epoch"] == ROWS // BATCH and one["accuracy"][-1] > 0.9, one
    assert abs(one["accuracy"][-1] - two[0]["accuracy"][-1]) < 0.05, (one, two[0])
