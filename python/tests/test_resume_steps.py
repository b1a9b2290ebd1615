"""Exact step counts after a resume: a run stopped after 30 of its 100 steps per epoch resumes
with `steps_per_epoch()` still 100, `initial_step()` 30, and a first epoch of exactly the 70
batches left through a plain loop, `hydrofeed.tf.dataset` (cardinality 100) and the torch
adapter, the next epochs 100; under the fixed order, with a shuffle buffer, and the dynamic
order. tf-keras `model.fit` with `hydrofeed.tf.BackupAndRestore(save_freq=5)`, its trainer
SIGKILLed mid-epoch, resumes model and feed at the same step and trains every row exactly once
per epoch.

Input: one Parquet file (pyarrow) of 403 rows, ids 0..402; batches of 4, one worker: 100 steps
per epoch (3 rows dropped), 3 epochs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from test_launch import no_leftovers

HERE = Path(__file__).resolve().parent
TRAINER = str(HERE / "steps_trainer.py")
ROWS, BATCH, STEPS, EPOCHS, TAKE = 403, 4, 100, 3, 30
ORDERS = {
    "fixed": ["--order", "fixed", "--shuffle-buffer", "0"],
    "fixed-buffer": ["--order", "fixed", "--shuffle-buffer", "64"],
    "dynamic": ["--order", "dynamic"],
}


@pytest.fixture(scope="module")
def ids403(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ids403")
    t = pa.table({
        "id": pa.array(range(ROWS), pa.int64()),
        "x": pa.array([0.5] * ROWS, pa.float32()),
        "y": pa.array([1.0] * ROWS, pa.float32()),
    })
    pq.write_table(t, d / "part-00000.parquet", row_group_size=50)
    return d


def run(hf_bin: str, data: Path, out: Path, *extra: str, **env: str) -> subprocess.CompletedProcess:
    out.mkdir(parents=True, exist_ok=True)
    e = dict(os.environ, OUT=str(out), BATCH=str(BATCH), TF_USE_LEGACY_KERAS="1",
             TF_CPP_MIN_LOG_LEVEL="2", **env)
    return subprocess.run(
        [hf_bin, "launch", "--workers", "1", "--input", str(data), "--batch-size", str(BATCH),
         "--epochs", str(EPOCHS), "--seed", "5", *extra, "--", sys.executable, TRAINER],
        env=e, capture_output=True, text=True, timeout=300,
    )


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "rank-0.jsonl").read_text().splitlines()]


def per_epoch(recs: list[dict]) -> dict[int, list[list[int]]]:
    by: dict[int, list[list[int]]] = {}
    for r in recs:
        if "ids" in r:
            by.setdefault(r["epoch"], []).append(r["ids"])
    return by


def once_per_epoch(*runs: dict[int, list[list[int]]]) -> None:
    """Every epoch, over all runs: STEPS batches, no id twice."""
    for e in range(EPOCHS):
        ids = [i for r in runs for b in r.get(e, []) for i in b]
        assert len(ids) == STEPS * BATCH, f"epoch {e}: {len(ids)} rows"
        assert len(set(ids)) == len(ids), f"epoch {e}: {len(ids) - len(set(ids))} ids twice"


@pytest.mark.parametrize("how", ["batches", "tf", "torch"])
@pytest.mark.parametrize("order", list(ORDERS))
def test_resumed_first_epoch_has_the_steps_left(
    hf_bin: str, ids403: Path, tmp_path: Path, order: str, how: str
) -> None:
    if how == "torch":
        pytest.importorskip("torch")
    state = tmp_path / "state.json"
    r = run(hf_bin, ids403, tmp_path / "a", *ORDERS[order], "--state-out", str(state),
            HOW="batches", TAKE=str(TAKE))
    assert r.returncode == 0 and state.exists(), r.stderr[-3000:]
    a = records(tmp_path / "a")
    first = per_epoch(a)
    assert [len(first.get(e, [])) for e in range(EPOCHS)] == [TAKE, 0, 0]

    r = run(hf_bin, ids403, tmp_path / "b", *ORDERS[order], "--resume", str(state), HOW=how)
    assert r.returncode == 0, r.stderr[-3000:]
    b = records(tmp_path / "b")
    rest = per_epoch(b)
    assert [len(rest.get(e, [])) for e in range(EPOCHS)] == [STEPS - TAKE, STEPS, STEPS]
    once_per_epoch(first, rest)
    assert b[0] == {"steps_per_epoch": STEPS, "initial_epoch": 0, "initial_step": TAKE}, b[0]
    assert a[0] == {"steps_per_epoch": STEPS, "initial_epoch": 0, "initial_step": 0}, a[0]
    if how == "tf":
        assert b[1] == {"cardinality": STEPS, "len": STEPS}, b[1]
    no_leftovers(str(tmp_path))


def test_keras_backup_and_restore_across_a_sigkill(hf_bin: str, ids403: Path, tmp_path: Path) -> None:
    pytest.importorskip("tf_keras")
    backup = tmp_path / "backup"
    env = dict(HOW="keras", BACKUP=str(backup), SAVE_FREQ="5")
    after = tmp_path / "state-out.json"
    r = run(hf_bin, ids403, tmp_path / "a", *ORDERS["fixed-buffer"], "--state-out", str(after),
            KILL_AT="1:37", **env)
    assert r.returncode != 0, r.stderr[-3000:]
    state = backup / "feed_state.json"
    assert state.exists(), r.stderr[-3000:]
    a = [x for x in records(tmp_path / "a") if "ids" in x]
    assert (a[-1]["epoch"], a[-1]["step"]) == (1, 37), a[-1]

    # launch's own state holds the steps after the last backup too: refused, naming both.
    r = run(hf_bin, ids403, tmp_path / "x", *ORDERS["fixed-buffer"], "--resume", str(after), **env)
    assert r.returncode != 0
    assert "tf-keras resumes at epoch 1 step 35 " in r.stderr, r.stderr[-3000:]
    assert "the feed at epoch 1 step 38" in r.stderr, r.stderr[-3000:]

    r = run(hf_bin, ids403, tmp_path / "b", *ORDERS["fixed-buffer"], "--resume", str(state), **env)
    assert r.returncode == 0, r.stderr[-3000:]
    b = records(tmp_path / "b")
    steps = [x for x in b if "ids" in x]
    # The last backup was after step 34 of epoch 1: Keras and the feed resume at step 35.
    assert (steps[0]["epoch"], steps[0]["step"]) == (1, 35), steps[0]
    rest = per_epoch(steps)
    assert [len(rest.get(e, [])) for e in range(EPOCHS)] == [0, STEPS - 35, STEPS]
    # What the model kept of the killed run: the steps before the backup it resumed from.
    kept = per_epoch([x for x in a if (x["epoch"], x["step"]) < (1, 35)])
    once_per_epoch(kept, rest)
    assert b[-1] == {"fit_epochs": EPOCHS - 1}, b[-1]
    assert b[0] == {"steps_per_epoch": STEPS, "initial_epoch": 1, "initial_step": 35}, b[0]
    assert not state.exists(), "the finished fit leaves no feed state behind"
    no_leftovers(str(tmp_path))
