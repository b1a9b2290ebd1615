"""Handed out is consumed: the state `hydrofeed launch --state-out` writes holds exactly the
batches the trainer's code received, however it left (returned without `flush_acks()`, broke out
of a tf.data pipeline that prefetched, a torch DataLoader over the adapter that reads ahead,
SIGKILL with a batch in hand), and `--resume` feeds exactly the rest: no id twice, none missing.

Input: one Parquet file (pyarrow) of 1000 rows, ids 0..999; batches of 10, one worker.
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
TRAINER = str(HERE / "handout_trainer.py")
ROWS, BATCH, TAKE = 1000, 10, 10


@pytest.fixture(scope="module")
def ids1000(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ids1000")
    t = pa.table({"id": pa.array(range(ROWS), pa.int64()), "x": pa.array([0.5] * ROWS, pa.float32())})
    pq.write_table(t, d / "part-00000.parquet", row_group_size=100)
    return d


def run(hf_bin: str, data: Path, out: Path, *extra: str, **env: str) -> subprocess.CompletedProcess:
    out.mkdir(parents=True, exist_ok=True)
    e = dict(os.environ, OUT=str(out), BATCH=str(BATCH), **env)
    return subprocess.run(
        [hf_bin, "launch", "--workers", "1", "--input", str(data), "--batch-size", str(BATCH),
         *extra, "--", sys.executable, TRAINER],
        env=e, capture_output=True, text=True, timeout=180,
    )


def received(out: Path) -> tuple[list[int], int | None]:
    """The ids the trainer's code received, and how many batches the feed had read."""
    ids: list[int] = []
    read = None
    for line in (out / "rank-0.jsonl").read_text().splitlines():
        r = json.loads(line)
        ids.extend(r.get("ids", []))
        read = r.get("read", read)
    return ids, read


def stop_then_resume(hf_bin: str, data: Path, tmp: Path, **env: str) -> tuple[list[int], int | None]:
    state = tmp / "state.json"
    r = run(hf_bin, data, tmp / "a", "--state-out", str(state), TAKE=str(TAKE), **env)
    assert state.exists(), r.stderr[-3000:]
    first, read = received(tmp / "a")
    assert len(first) == TAKE * BATCH, r.stderr[-3000:]
    r2 = run(hf_bin, data, tmp / "b", "--resume", str(state))
    assert r2.returncode == 0, r2.stderr[-3000:]
    rest, _ = received(tmp / "b")
    both = first + rest
    twice = len(both) - len(set(both))
    assert twice == 0, f"{twice} ids came in both runs (the state missed batches handed out)"
    missing = set(range(ROWS)) - set(both)
    assert not missing, f"{len(missing)} ids never came (the state held batches never handed out)"
    no_leftovers(str(tmp))
    return first, read


def test_returning_without_flush_acks_keeps_what_was_taken(hf_bin: str, ids1000: Path, tmp_path: Path) -> None:
    stop_then_resume(hf_bin, ids1000, tmp_path, HOW="batches")


def test_killed_with_a_batch_in_hand_resumes_exactly(hf_bin: str, ids1000: Path, tmp_path: Path) -> None:
    stop_then_resume(hf_bin, ids1000, tmp_path, HOW="batches", LEAVE="kill")


def test_breaking_out_of_a_prefetching_tf_dataset(hf_bin: str, ids1000: Path, tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    _, read = stop_then_resume(hf_bin, ids1000, tmp_path, HOW="tf")
    assert read is not None and read > TAKE, f"tf.data read {read} batches: nothing was prefetched"


def test_torch_dataloader_over_the_adapter(hf_bin: str, ids1000: Path, tmp_path: Path) -> None:
    """The trainer iterates the first epoch of 2 to its end, saves `feed.state()` and leaves:
    the adapter read the next epoch's first batch ahead to find the epoch's end; it was never
    yielded, so the state does not hold it and it comes again."""
    pytest.importorskip("torch")
    state = tmp_path / "state.json"
    r = run(hf_bin, ids1000, tmp_path / "a", "--epochs", "2", HOW="torch", EPOCHS="1",
            SAVE=str(state))
    assert state.exists(), r.stderr[-3000:]
    first, read = received(tmp_path / "a")
    assert sorted(first) == list(range(ROWS)), r.stderr[-3000:]
    assert read == ROWS // BATCH + 1, f"the adapter read {read} batches, expected one ahead"
    r2 = run(hf_bin, ids1000, tmp_path / "b", "--resume", str(state))
    assert r2.returncode == 0, r2.stderr[-3000:]
    rest, _ = received(tmp_path / "b")
    assert sorted(rest) == list(range(ROWS)), (
        f"the second epoch after the resume has {len(rest)} rows, {len(set(rest))} distinct"
    )
    no_leftovers(str(tmp_path))


def test_dataset_of_the_feeds_batch_size_after_steps_per_epoch(
    hf_bin: str, ids1000: Path, tmp_path: Path
) -> None:
    """`feed.steps_per_epoch()` (the feed made without a size, so the feeder's is the job's),
    then `hydrofeed.tf.dataset(feed, B)` with B the job's batch size: accepted, every batch."""
    pytest.importorskip("tensorflow")
    r = run(hf_bin, ids1000, tmp_path / "a", HOW="tf", SPE="1")
    assert r.returncode == 0, r.stderr[-3000:]
    ids, _ = received(tmp_path / "a")
    assert sorted(ids) == list(range(ROWS))
