"""Preemption and restarts under `hydrofeed launch`, as users run them: a trainer busy in a long
step while its feeder is `kill -9`ed; SIGTERM (what YARN, Kubernetes and Spark send) to `launch`
and to `hydrofeed coordinator`; trainers that checkpoint in their own SIGTERM handler; a state
file left by an earlier run. Real processes and signals; row ids checked exactly once.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from test_launch import (  # noqa: F401  (data7, data_wide: fixtures)
    BATCH,
    TOTAL,
    TRAINER,
    WIDE_TOTAL,
    all_ids,
    data7,
    data_wide,
    dropped,
    feeder_pids,
    launch,
    no_leftovers,
    records,
    steps_of,
)

HERE = Path(__file__).resolve().parent
PREEMPT_TRAINER = str(HERE / "preempt_trainer.py")


def wait_for(cond, what: str, p: subprocess.Popen, secs: float = 60) -> None:
    deadline = time.time() + secs
    while not cond():
        assert p.poll() is None, f"launch ended while waiting for {what}: " + p.communicate()[1][-3000:]
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def lines(f: Path) -> int:
    return f.read_text().count("\n") if f.exists() else 0


class StatePoller:
    """Reads the state file every few ms while the job runs: every read must be whole JSON."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.bad: list[str] = []
        self.reads = 0
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                text = self.path.read_text()
            except FileNotFoundError:
                text = None
            if text is not None:
                self.reads += 1
                try:
                    json.loads(text)
                except ValueError:
                    self.bad.append(text[:200])
            time.sleep(0.002)

    def close(self) -> None:
        self.stop.set()
        self.t.join()
        assert not self.bad, f"the state file was read half-written: {self.bad[:3]}"


def test_busy_trainer_survives_a_feeder_restart_longer_than_dead_after(
    hf_bin: str, data_wide: Path, tmp_path: Path
) -> None:
    """Rank 0's trainer is busy for 6 s (an evaluation, a checkpoint) when the feeder is
    `kill -9`ed; `--dead-after 3`. The rank lives while its trainer does: the restarted feeder
    takes the trainer back when it asks for its next batch, the job ends 0, every row once."""
    out = tmp_path / "out"
    out.mkdir()
    e = dict(os.environ, OUT=str(out), SLOW="0.005", PAUSE_AT="0:10:6")
    p = subprocess.Popen(
        [hf_bin, "launch", "--workers", "2", "--input", str(data_wide), "--batch-size", str(BATCH),
         "--memory-mb", "48", "--dead-after", "3", "--", sys.executable, TRAINER],
        env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        # The header line and 10 steps: rank 0 has begun its 6 s pause; rank 1's trainer is
        # attached and reading too (the busy trainer is the subject here; a trainer not yet
        # attached when its feeder dies is `test_a_trainer_attaching_first_to_a_restarted_feeder`).
        wait_for(lambda: lines(out / "rank-0.jsonl") >= 11, "rank 0's pause", p)
        wait_for(lambda: lines(out / "rank-1.jsonl") >= 2, "rank 1's first step", p)
        pids = feeder_pids(str(data_wide))
        assert len(pids) == 1, pids
        os.kill(pids[0], signal.SIGKILL)
        _, err = p.communicate(timeout=180)
    finally:
        p.kill()
    assert p.returncode == 0, err[-3000:]
    assert err.count("restarting it") == 1, err[-3000:]
    s_e = WIDE_TOTAL // (2 * BATCH)
    ids: list[int] = []
    for k in range(2):
        recs = records(out, k)
        st = steps_of(recs)
        assert len(st) == s_e, k
        ids.extend(i for s in st for i in s["ids"])
        assert recs[-1]["metrics"]["rejoins"] == 1, recs[-1]
    assert len(ids) == len(set(ids)), "a row was delivered twice"
    assert len(ids) == WIDE_TOTAL - dropped(err)
    no_leftovers(str(tmp_path))


def preempt(hf_bin: str, data: Path, out: Path, state: Path, *extra: str, env: dict) -> tuple[int, str, StatePoller]:
    """Runs `launch` with `preempt_trainer.py`, sends SIGTERM mid-epoch (rank 0 at step 30),
    checks that `--state-out` is there, whole, while the trainers still checkpoint; returns
    the exit status, stderr and the poller (closed)."""
    out.mkdir()
    p = subprocess.Popen(
        [hf_bin, "launch", "--workers", "2", "--input", str(data), "--batch-size", str(BATCH),
         "--state-out", str(state), *extra, "--", sys.executable, PREEMPT_TRAINER],
        env=dict(os.environ, OUT=str(out), **env),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    poller = StatePoller(state)
    try:
        wait_for(lambda: lines(out / "rank-0.jsonl") >= 30, "30 steps of rank 0", p)
        before = state.read_text() if state.exists() else None
        p.send_signal(signal.SIGTERM)
        # The trainers checkpoint for CHECKPOINT_SECS: the state holding the acks so far is
        # saved before they are done (the only other writes: at the start, at the end).
        wait_for(lambda: state.exists() and state.read_text() != before,
                 "the state saved on SIGTERM", p)
        json.loads(state.read_text())
        _, err = p.communicate(timeout=120)
    finally:
        p.kill()
        poller.close()
    return p.returncode, err, poller


def test_sigterm_mid_epoch_saves_the_state_at_once_and_resume_is_exactly_once(
    hf_bin: str, data7: Path, tmp_path: Path
) -> None:
    """SIGTERM to `launch` mid-epoch: `--state-out` is written at once (whole at every read),
    the trainers get SIGTERM, their handlers finish the step and call `feed.state()`, the state
    is written again once they exited (exit 130); a resume feeds every other row, each once."""
    state = tmp_path / "state.json"
    rc, err, poller = preempt(hf_bin, data7, tmp_path / "a", state,
                              env={"SLOW": "0.01", "CHECKPOINT_SECS": "2"})
    assert rc == 130, err[-3000:]
    assert poller.reads > 0
    first = all_ids(tmp_path / "a", 2)
    assert 0 < len(first) < TOTAL
    r2 = launch(hf_bin, data7, tmp_path / "b", 2, "--resume", str(state))
    assert r2.returncode == 0, r2.stderr[-3000:]
    both = first + all_ids(tmp_path / "b", 2)
    assert len(both) == len(set(both)), (
        f"{len(both) - len(set(both))} rows delivered in both runs"
    )
    assert len(both) == TOTAL - dropped(r2.stderr)
    assert f"{len(first)} rows acked" in err, (len(first), err[-3000:])
    # Each trainer's own handler ran: it finished its step and saved its checkpoint.
    for k in range(2):
        assert records(tmp_path / "a", k)[-1].get("preempted"), k
    no_leftovers(str(tmp_path))


def test_trainer_checkpoints_in_its_sigterm_handler_within_the_grace(
    hf_bin: str, data7: Path, tmp_path: Path
) -> None:
    """The torch recipe: on SIGTERM the trainer finishes its step, saves its model and
    `feed.state()` (11 s of checkpoint: more than the 10 s trainers had before `--grace`, within
    its default 20 s), and exits 0; its saved feed state holds every row it was handed."""
    pytest.importorskip("torch")
    out = tmp_path / "a"
    rc, err, _ = preempt(hf_bin, data7, out, tmp_path / "state.json",
                         env={"SLOW": "0.01", "CHECKPOINT_SECS": "11", "MODEL": "torch"})
    assert rc == 130, err[-3000:]
    import torch

    for k in range(2):
        got = len(steps_of(records(out, k)))
        ckpt = json.loads((out / f"ckpt-{k}.json").read_text())
        assert ckpt["step"] == got, (k, ckpt["step"], got)
        model = torch.load(out / f"model-{k}.pt")
        assert model["step"] == got
        assert ckpt["feed"]["batch_size"] == BATCH
    # The launch state (written after the trainers exited) resumes exactly after both.
    first = all_ids(out, 2)
    r2 = launch(hf_bin, data7, tmp_path / "b", 2, "--resume", str(tmp_path / "state.json"))
    assert r2.returncode == 0, r2.stderr[-3000:]
    both = first + all_ids(tmp_path / "b", 2)
    assert len(both) == len(set(both)) == TOTAL - dropped(r2.stderr)


def test_sigterm_to_the_coordinator_writes_its_state(hf_bin: str, data7: Path, tmp_path: Path) -> None:
    """`hydrofeed coordinator --state-out` ends on SIGTERM as on Ctrl-C: its state written."""
    state = tmp_path / "coord-state.json"
    p = subprocess.Popen(
        [hf_bin, "coordinator", "--input", str(data7), "--workers", "2", "--batch-size", str(BATCH),
         "--token-file", str(tmp_path / "token"), "--state-out", str(state)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={k: v for k, v in os.environ.items() if k != "HYDROFEED_TOKEN"},
    )
    try:
        assert p.stdout is not None
        assert "listening on" in p.stdout.readline()
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
    finally:
        p.kill()
    assert p.returncode == 0, err[-3000:]
    st = json.loads(state.read_text())
    assert st["batch_size"] == BATCH and st["epochs"] == 1, st
    assert "interrupted" in out, out


def test_a_state_file_of_an_earlier_run_is_replaced_at_the_start(
    hf_bin: str, data7: Path, tmp_path: Path
) -> None:
    """`--state-out` names a file an earlier run left; this run is killed (SIGKILL: no handler
    runs) mid-epoch. The file is this run's state, not the earlier one looking current."""
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"left": "by an earlier run"}))
    out = tmp_path / "a"
    out.mkdir()
    p = subprocess.Popen(
        [hf_bin, "launch", "--workers", "2", "--input", str(data7), "--batch-size", str(BATCH),
         "--state-out", str(state), "--", sys.executable, TRAINER],
        env=dict(os.environ, OUT=str(out), SLOW="0.01"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        wait_for(lambda: lines(out / "rank-0.jsonl") >= 10, "10 steps of rank 0", p)
        p.send_signal(signal.SIGKILL)
        p.communicate(timeout=30)
    finally:
        p.kill()
    st = json.loads(state.read_text())
    assert "left" not in st, st
    assert st["batch_size"] == BATCH, st
    assert sorted(x.name for x in tmp_path.iterdir()) == ["a", "state.json"]
    # A SIGKILLed launch leaves its socket directory (its children die with it).
    for d in Path("/tmp").glob(f"hydrofeed-launch-{p.pid}-*"):
        shutil.rmtree(d)
    no_leftovers(str(tmp_path))


def test_a_trainer_attaching_first_to_a_restarted_feeder(
    hf_bin: str, data_wide: Path, tmp_path: Path
) -> None:
    """Rank 1's trainer is still starting (it waits for a file) when the feeder is `kill -9`ed;
    `launch` restarts the feeder, which takes its trainers back with `--rejoin`; rank 1's
    trainer then attaches for the first time: its `Hello` says so, and the feeder takes it as
    one that read nothing. The job ends 0 with every row once. Before, the restarted feeder
    waited for a `Rejoin` report that such a trainer never sends, and the trainer's `next()`
    timed out (seen once in a full test run, on the busy-trainer test above)."""
    out, go = tmp_path / "out", tmp_path / "go"
    out.mkdir()
    e = dict(os.environ, OUT=str(out), SLOW="0.005", WAIT_FOR_RANK=f"1:{go}",
             FEED_TIMEOUT="1:15")
    p = subprocess.Popen(
        [hf_bin, "launch", "--workers", "2", "--input", str(data_wide), "--batch-size", str(BATCH),
         "--memory-mb", "48", "--", sys.executable, TRAINER],
        env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        wait_for(lambda: lines(out / "rank-0.jsonl") >= 3, "rank 0's first steps", p)
        pids = feeder_pids(str(data_wide))
        assert len(pids) == 1, pids
        os.kill(pids[0], signal.SIGKILL)
        wait_for(lambda: [q for q in feeder_pids(str(data_wide)) if q != pids[0]],
                 "the restarted feeder", p)
        go.touch()
        _, err = p.communicate(timeout=180)
    finally:
        p.kill()
        p.communicate()
    assert p.returncode == 0, err[-3000:]
    ids = [i for k in range(2) for s in steps_of(records(out, k)) for i in s["ids"]]
    assert len(ids) == len(set(ids)) == WIDE_TOTAL - dropped(err)


def test_a_directory_left_by_a_sigkilled_launch_is_removed_by_the_next(
    hf_bin: str, data7: Path, tmp_path: Path
) -> None:
    """A `launch` killed with SIGKILL runs no handler: its socket directory stays. The next
    `launch` under the same directory removes it, and only it: the directory of a live launch
    (its trainers holding before their first batch) is kept, and that job then ends 0. Before,
    every later test that checks for leftovers failed on one such directory."""
    base = Path(tempfile.mkdtemp(prefix="hfrun", dir="/tmp"))  # short: sockets live under it
    env = dict(os.environ, TMPDIR=str(base))
    env.pop("XDG_RUNTIME_DIR", None)

    def start(out: Path, **more: str) -> subprocess.Popen:
        out.mkdir()
        return subprocess.Popen(
            [hf_bin, "launch", "--workers", "1", "--input", str(data7), "--batch-size",
             str(BATCH), "--", sys.executable, TRAINER],
            env=dict(env, OUT=str(out), **more), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)

    def run_dir(p: subprocess.Popen) -> list[Path]:
        return list(base.glob(f"hydrofeed-launch-{p.pid}-*"))

    go = tmp_path / "go"
    live = start(tmp_path / "live", WAIT_FOR=str(go))
    killed = start(tmp_path / "killed", WAIT_FOR=str(go))
    try:
        for p in (live, killed):
            wait_for(lambda p=p: (run_dir(p) or [Path("/")])[0].joinpath("rank-0.sock").exists(),
                     "the trainer's socket", p)
        killed.kill()
        killed.communicate(timeout=30)
        left = run_dir(killed)
        assert len(left) == 1, left  # no handler ran

        r = launch(hf_bin, data7, tmp_path / "next", 1, env={"TMPDIR": str(base)})
        assert r.returncode == 0, r.stderr[-3000:]
        assert not left[0].exists(), "the killed launch's directory was kept"
        assert len(run_dir(live)) == 1, "the live launch's directory was removed"

        go.touch()
        _, err = live.communicate(timeout=120)
        assert live.returncode == 0, err[-3000:]
        ids = all_ids(tmp_path / "live", 1)
        assert len(ids) == len(set(ids)) and len(ids) + dropped(err) == TOTAL, "the live job lost rows"
    finally:
        for p in (live, killed):
            p.kill()
    assert list(base.iterdir()) == []
    base.rmdir()
    no_leftovers(str(tmp_path))
