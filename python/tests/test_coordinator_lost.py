"""A coordinator that goes away under a running job, as users hit it: `hydrofeed coordinator`
with two `hydrofeed feeder`s (one rank each) and two trainers, the coordinator `kill -9`ed in
the middle of an epoch. Without a journal (or restarted too late) the feeders and trainers fail
naming the coordinator and the stage; restarted on its journal within `--coordinator-timeout`,
the job finishes with every row id exactly once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from test_launch import BATCH, TOTAL, TRAINER, all_ids, data7  # noqa: F401  (data7: fixture)

WORKERS = 2


def lines(p: Path) -> int:
    return len(p.read_text().splitlines()) if p.exists() else 0


class Job:
    """A coordinator, a feeder per rank and a trainer per rank, as separate processes."""

    def __init__(self, hf_bin: str, data: Path, tmp: Path, *coord_args: str,
                 coordinator_timeout: float, epochs: int = 3, slow: str = "0.02",
                 feeder_args: tuple[str, ...] = ()) -> None:
        self.hf_bin, self.data, self.tmp = hf_bin, data, tmp
        self.coord_args = list(coord_args)
        self.epochs = epochs
        self.env = {k: v for k, v in os.environ.items() if k != "HYDROFEED_TOKEN"}
        self.out = tmp / "out"
        self.out.mkdir(parents=True, exist_ok=True)
        self.coord = self.start_coordinator("127.0.0.1:0")
        self.feeders = []
        self.trainers = []
        for r in range(WORKERS):
            sock = tmp / f"sock-{r}"
            self.feeders.append(subprocess.Popen(
                [hf_bin, "feeder", "--input", str(data), "--coordinator", self.addr,
                 "--token-file", str(tmp / "token"), "--socket-dir", str(sock), "--ranks", str(r),
                 "--memory-mb", "32", *feeder_args],
                env=dict(self.env, HYDROFEED_COORDINATOR_TIMEOUT=str(coordinator_timeout)),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            ))
            tf_config = {"cluster": {"worker": [f"127.0.0.1:{2222 + k}" for k in range(WORKERS)]},
                         "task": {"type": "worker", "index": r}}
            self.trainers.append(subprocess.Popen(
                [sys.executable, TRAINER],
                env=dict(self.env, OUT=str(self.out), SLOW=slow, HYDROFEED_RANK=str(r),
                         HYDROFEED_NUM_WORKERS=str(WORKERS), TF_CONFIG=json.dumps(tf_config),
                         HYDROFEED_FEED_SOCKET=str(sock / f"rank-{r}.sock"),
                         HYDROFEED_SUMMARY="0"),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            ))

    def start_coordinator(self, listen: str) -> subprocess.Popen:
        p = subprocess.Popen(
            [self.hf_bin, "coordinator", "--input", str(self.data), "--workers", str(WORKERS),
             "--batch-size", str(BATCH), "--epochs", str(self.epochs), "--listen", listen,
             "--token-file", str(self.tmp / "token"), *self.coord_args],
            env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        assert p.stdout is not None
        line = p.stdout.readline()
        assert "listening on" in line, (line, p.stderr.read() if p.poll() is not None else "")
        self.addr = line.split()[-1]
        return p

    def wait_steps(self, rank: int, steps: int, secs: float = 60) -> None:
        deadline = time.time() + secs
        f = self.out / f"rank-{rank}.jsonl"
        while lines(f) < steps + 1:
            assert time.time() < deadline, f"rank {rank}: {lines(f)} lines"
            assert all(t.poll() is None for t in self.trainers), self.outputs()
            time.sleep(0.02)

    def finish(self, secs: float = 120) -> list[subprocess.CompletedProcess]:
        done = []
        for p in [*self.trainers, *self.feeders, self.coord]:
            try:
                out, err = p.communicate(timeout=secs)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
            done.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
        return done

    def restart_on_journal(self, steps: int, meanwhile=None) -> list[subprocess.CompletedProcess]:  # noqa: ANN001
        """Once rank 0 took `steps` steps: `kill -9` of the coordinator, `meanwhile()` (1 s by
        default), the coordinator started again on the same port (its journal in its
        arguments); then every process to its end, each of which must exit 0, and the
        coordinator must say it continued from the journal."""
        try:
            self.wait_steps(0, steps)
            self.coord.send_signal(signal.SIGKILL)
            self.coord.communicate()
            (meanwhile or (lambda: time.sleep(1)))()
            self.coord = self.start_coordinator(self.addr)
            res = self.finish()
        finally:
            self.kill()
        for p in res:
            assert p.returncode == 0, (p.args[:2], p.returncode, p.stderr[-3000:])
        assert "continuing the job from the journal" in res[-1].stderr, res[-1].stderr[-3000:]
        return res

    def kill(self) -> None:
        for p in [*self.trainers, *self.feeders, self.coord]:
            if p.poll() is None:
                p.kill()
                p.communicate()

    def outputs(self) -> str:
        return "\n".join(f"{p.args[:2]}: rc={p.poll()}" for p in [*self.trainers, *self.feeders])


def test_a_coordinator_killed_is_named_by_feeders_and_trainers(
    hf_bin: str, data7: Path, tmp_path: Path
) -> None:
    """`kill -9` of the coordinator mid-epoch, no journal: each feeder gives up after
    `--coordinator-timeout` with exit status 5 and a message naming the coordinator's address
    and what it was doing; each trainer raises CoordinatorError with the feeder's reason (not
    "feeder closed the ring before end-of-feed"; the feeder not "a trainer left")."""
    job = Job(hf_bin, data7, tmp_path, coordinator_timeout=2)
    try:
        job.wait_steps(0, 10)
        job.coord.send_signal(signal.SIGKILL)
        res = job.finish(secs=60)
    finally:
        job.kill()
    trainers, feeders = res[:WORKERS], res[WORKERS:2 * WORKERS]
    want = f"coordinator at {job.addr} unreachable for"
    for r, f in enumerate(feeders):
        assert f.returncode == 5, (r, f.returncode, f.stderr[-3000:])
        assert want in f.stderr, f.stderr[-3000:]
        assert "while " in f.stderr.split(want, 1)[1].splitlines()[0], f.stderr[-3000:]
    for r, t in enumerate(trainers):
        assert t.returncode != 0, (r, t.stdout[-2000:])
        assert "CoordinatorError" in t.stderr, t.stderr[-3000:]
        assert want in t.stderr, t.stderr[-3000:]


def test_a_coordinator_restarted_on_its_journal_continues_the_job(
    hf_bin: str, data7: Path, tmp_path: Path
) -> None:
    """`hydrofeed coordinator --journal D`, `kill -9`ed mid-epoch and started again on the same
    journal and port within the feeders' `--coordinator-timeout`: the feeders find it again,
    and the job ends with exit status 0 everywhere and every row id exactly once per epoch."""
    journal = tmp_path / "journal"
    job = Job(hf_bin, data7, tmp_path, "--journal", str(journal), coordinator_timeout=60,
              epochs=2)
    job.restart_on_journal(40)
    ids = all_ids(job.out, WORKERS)
    per_epoch = TOTAL - TOTAL % (WORKERS * BATCH)
    assert len(ids) == 2 * per_epoch, len(ids)
    for epoch in range(2):
        got = [i for k in range(WORKERS) for s in _steps(job.out, k) if s["epoch"] == epoch
               for i in s["ids"]]
        assert len(got) == len(set(got)) == per_epoch, (epoch, len(got), len(set(got)))


def _steps(out: Path, rank: int) -> list[dict]:
    return [json.loads(line) for line in (out / f"rank-{rank}.jsonl").read_text().splitlines()
            if '"ids"' in line]


def test_a_filtered_job_restarted_on_its_journal_reads_the_same_rows(
    hf_bin: str, data7: Path, tmp_path: Path
) -> None:
    """Under `--filter`: the coordinator counts the passing rows once, each `hydrofeed feeder`
    (a process of its own) takes its counts instead of counting again; the coordinator
    `kill -9`ed mid-epoch and restarted on its journal plans the same rows, and every passing
    row comes exactly once per epoch, no other."""
    text = "id < 4000 OR x >= 2000"
    journal = tmp_path / "journal"
    job = Job(hf_bin, data7, tmp_path, "--journal", str(journal), "--filter", text,
              coordinator_timeout=60, epochs=2, feeder_args=("--filter", text))
    res = job.restart_on_journal(20)
    assert "filter" in res[-1].stderr and "rows pass" in res[-1].stderr, res[-1].stderr[-2000:]
    # data7: files of 1, 10000, 37, 2500, 3, 900, 6000 rows; x is the row's index in its file.
    sizes, want, start = [1, 10000, 37, 2500, 3, 900, 6000], set(), 0
    for n in sizes:
        want |= {start + k for k in range(n) if start + k < 4000 or k >= 2000}
        start += n
    per_epoch = len(want) - len(want) % (WORKERS * BATCH)
    for epoch in range(2):
        got = [i for k in range(WORKERS) for s in _steps(job.out, k) if s["epoch"] == epoch
               for i in s["ids"]]
        assert len(got) == len(set(got)) == per_epoch, (epoch, len(got), per_epoch)
        assert set(got) <= want


def test_a_feeder_with_another_filter_than_its_coordinators_stops_naming_both(
    hf_bin: str, data7: Path, tmp_path: Path
) -> None:
    job = Job(hf_bin, data7, tmp_path, "--filter", "x < 1000", coordinator_timeout=10,
              epochs=1, feeder_args=("--filter", "x < 1001"))
    try:
        for f in job.feeders:
            _, err = f.communicate(timeout=60)
            assert f.returncode != 0
            assert "--filter \"x < 1001\" differs from the coordinator's \"x < 1000\"" in err, err[-2000:]
    finally:
        job.kill()
