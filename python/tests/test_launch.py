"""`hydrofeed launch` end to end: real coordinator, feeder and trainer processes.

The trainer is `launch_trainer.py`: it logs every row id per step to `OUT/rank-<r>.jsonl`.
Input: 7 Parquet files (written by pyarrow) of very different sizes, ids 0..N-1.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers import shm_listing

HERE = Path(__file__).resolve().parent
TRAINER = str(HERE / "launch_trainer.py")
SIZES = [1, 10000, 37, 2500, 3, 900, 6000]
TOTAL = sum(SIZES)
BATCH = 64


@pytest.fixture(scope="module")
def data7(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("seven")
    start = 0
    for i, n in enumerate(SIZES):
        t = pa.table(
            {
                "id": pa.array(range(start, start + n), pa.int64()),
                "x": pa.array([float(v) for v in range(n)], pa.float32()),
            }
        )
        pq.write_table(t, d / f"part-{i:05d}.parquet", row_group_size=1000)
        start += n
    return d


WIDE_SIZES = [5000, 7000, 6000]
WIDE_TOTAL = sum(WIDE_SIZES)


@pytest.fixture(scope="module")
def data_wide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3 files of 4 KiB rows (id + 1024 float32): 72 MiB per epoch, far more than the rings
    of `--memory-mb 48` (8 MiB per rank) hold, so a feeder restart has rows left to feed."""
    d = tmp_path_factory.mktemp("wide")
    start = 0
    for i, n in enumerate(WIDE_SIZES):
        ids = pa.array(range(start, start + n), pa.int64())
        vals = pa.array(np.arange(n * 1024, dtype=np.float32))
        t = pa.table({"id": ids, "x": pa.FixedSizeListArray.from_arrays(vals, 1024)})
        pq.write_table(t, d / f"part-{i:05d}.parquet", row_group_size=1000)
        start += n
    return d


def launch(
    hf_bin: str, data: Path, out: Path, workers: int, *extra: str, env: dict | None = None,
    timeout: float = 120, batch: int | None = BATCH,
) -> subprocess.CompletedProcess:
    out.mkdir(parents=True, exist_ok=True)
    e = dict(os.environ, OUT=str(out), **(env or {}))
    size = ["--batch-size", str(batch)] if batch else []
    return subprocess.run(
        [hf_bin, "launch", "--workers", str(workers), "--input", str(data),
         *size, *extra, "--", sys.executable, TRAINER],
        env=e, capture_output=True, text=True, timeout=timeout,
    )


def records(out: Path, rank: int) -> list[dict]:
    return [json.loads(line) for line in (out / f"rank-{rank}.jsonl").read_text().splitlines()]


def steps_of(recs: list[dict]) -> list[dict]:
    return [r for r in recs if "ids" in r]


def dropped(stderr: str) -> int:
    m = re.search(r"rows acked \((\d+) dropped\)", stderr)
    assert m, stderr
    return int(m.group(1))


def no_leftovers(tag: str) -> None:
    """No process of this job survives (the tag is unique to its paths), no socket directory
    of a launch whose process is gone is left."""
    for d in Path("/tmp").glob("hydrofeed-launch-*"):
        pid = int(d.name.split("-")[2])
        assert Path(f"/proc/{pid}").exists(), f"{d} left behind"
    deadline = time.time() + 5
    while True:
        ps = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
        left = [l for l in ps.splitlines() if tag in l and "ps -eo" not in l]
        if not left or time.time() > deadline:
            break
        time.sleep(0.1)
    assert not left, left


def test_equal_steps_and_exactly_once(hf_bin: str, data7: Path, tmp_path: Path) -> None:
    shm0 = shm_listing()
    r = launch(hf_bin, data7, tmp_path / "out", 3, "--epochs", "2")
    assert r.returncode == 0, r.stderr[-3000:]
    recs = [records(tmp_path / "out", k) for k in range(3)]
    per_epoch_steps = {}
    seen: dict[int, list[int]] = {0: [], 1: []}
    for k in range(3):
        st = steps_of(recs[k])
        for s in st:
            assert len(s["ids"]) == BATCH
            seen[s["epoch"]].extend(s["ids"])
        per_epoch_steps[k] = [sum(1 for s in st if s["epoch"] == e) for e in (0, 1)]
        end = recs[k][-1]
        assert end["should_stop"] is True
        assert end["end"] == len(st)
    # Every worker takes the same number of steps in every epoch.
    assert per_epoch_steps[0] == per_epoch_steps[1] == per_epoch_steps[2], per_epoch_steps
    s_e = TOTAL // (3 * BATCH)
    assert per_epoch_steps[0] == [s_e, s_e]
    drop = dropped(r.stderr)
    assert drop == 2 * (TOTAL - s_e * 3 * BATCH)
    for e in (0, 1):
        ids = seen[e]
        assert len(ids) == len(set(ids)), "a row was delivered twice in one epoch"
        assert set(ids) <= set(range(TOTAL))
        assert len(ids) == TOTAL - drop // 2
    # Where the time went: one line per rank from its feed, and the feeder's cores.
    for k in range(3):
        rows = 2 * s_e * BATCH
        line = re.search(rf"hydrofeed rank {k}: {rows} rows, {2 * s_e} steps; first batch after "
                         rf"[0-9.]+ s, then [0-9.]+ s: [0-9,]+ rows/s; waited for input \d+% of "
                         rf"the time", r.stdout + r.stderr)
        assert line, (r.stdout + r.stderr)[-3000:]
    assert re.search(r"hydrofeed feeder: cpu [0-9.]+ s, max RSS [0-9.]+ MiB; [0-9.]+ s wall, "
                     r"[0-9.]+ cores used", r.stderr), r.stderr[-3000:]
    assert shm_listing() <= shm0
    no_leftovers(str(tmp_path))


def test_trainer_killed_fails_fast_naming_rank(hf_bin: str, data7: Path, tmp_path: Path) -> None:
    shm0 = shm_listing()
    t0 = time.time()
    r = launch(hf_bin, data7, tmp_path / "out", 3, "--epochs", "2",
               env={"KILL_AT": "1:5", "SLOW": "0.01"})
    took = time.time() - t0
    assert r.returncode != 0
    assert "trainer rank 1" in r.stderr and "SIGKILL" in r.stderr, r.stderr[-2000:]
    assert took < 30, took
    assert shm_listing() <= shm0
    no_leftovers(str(tmp_path))


def test_feeder_killed_fails_fast_naming_stage(hf_bin: str, data7: Path, tmp_path: Path) -> None:
    shm0 = shm_listing()
    out = tmp_path / "out"
    out.mkdir()
    e = dict(os.environ, OUT=str(out), SLOW="0.02")
    import socket
    import urllib.request

    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        port = sk.getsockname()[1]
    p = subprocess.Popen(
        [hf_bin, "launch", "--workers", "3", "--input", str(data7), "--batch-size", str(BATCH),
         "--feeder-metrics", f"127.0.0.1:{port}", "--feeder-restarts", "0",
         "--", sys.executable, TRAINER],
        env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        # Wait for training to be under way, then kill -9 the feeder.
        deadline = time.time() + 60
        while time.time() < deadline:
            if (out / "rank-0.jsonl").exists() and len((out / "rank-0.jsonl").read_text()) > 0:
                break
            time.sleep(0.05)
        # The feeder's Prometheus endpoint while it runs.
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
        text = text.decode()
        for name in ("rows_total", "bytes_per_second", "ring_batches_unacked",
                     "ring_full_seconds_total", "epoch_barrier_seconds_total", "stage"):
            assert f"hydrofeed_feeder_{name}{{" in text, text
        rows = sum(float(line.split()[-1]) for line in text.splitlines()
                   if line.startswith("hydrofeed_feeder_rows_total{"))
        assert rows > 0, text
        ps = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
        pids = [int(l.split()[0]) for l in ps.splitlines()
                if " feeder " in l and str(data7) in l and "ps -eo" not in l]
        assert len(pids) == 1, ps
        t0 = time.time()
        os.kill(pids[0], signal.SIGKILL)
        _, err = p.communicate(timeout=30)
        took = time.time() - t0
    finally:
        p.kill()
    assert p.returncode != 0
    assert "the feeder" in err and "SIGKILL" in err and "last stages reported" in err, err[-2000:]
    assert took < 15, took
    assert shm_listing() <= shm0
    no_leftovers(str(out))


def feeder_pids(tag: str) -> list[int]:
    ps = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [int(l.split()[0]) for l in ps.splitlines()
            if " feeder " in l and tag in l and "ps -eo" not in l]


def rows_recorded(out: Path, workers: int) -> int:
    n = 0
    for k in range(workers):
        f = out / f"rank-{k}.jsonl"
        if f.exists():
            n += sum(len(json.loads(line).get("ids", [])) for line in f.read_text().splitlines()
                     if line.endswith("}"))
    return n


def test_feeder_killed_is_restarted_and_every_row_comes_once(
    hf_bin: str, data_wide: Path, tmp_path: Path
) -> None:
    """`kill -9` of the feeder at 30% of epoch 0 and at 30% of epoch 1 (later, the rest of the
    epoch fits in the rings and the new feeder has nothing to read): `launch` restarts it,
    the trainers read what the dead feeder left in their rings, re-attach and report what they
    read after their last ack, and the new feeder feeds the rest: every row exactly once per
    epoch, the same steps on every rank."""
    shm0 = shm_listing()
    out = tmp_path / "out"
    out.mkdir()
    e = dict(os.environ, OUT=str(out), SLOW="0.005")
    p = subprocess.Popen(
        [hf_bin, "launch", "--workers", "3", "--input", str(data_wide), "--batch-size",
         str(BATCH), "--epochs", "2", "--memory-mb", "48", "--columns", "id,x",
         "--", sys.executable, TRAINER],
        env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    killed: list[int] = []
    try:
        for frac in (0.15, 0.65):  # of the job's 2 epochs: 30% of epoch 0, 30% of epoch 1
            deadline = time.time() + 60
            while rows_recorded(out, 3) < frac * 2 * WIDE_TOTAL:
                assert p.poll() is None, p.communicate()[1][-3000:]
                assert time.time() < deadline, "training stalled"
                time.sleep(0.01)
            pids = [q for q in feeder_pids(str(data_wide)) if q not in killed]
            assert len(pids) == 1, pids
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])
        _, err = p.communicate(timeout=120)
    finally:
        p.kill()
    assert p.returncode == 0, err[-3000:]
    assert err.count("restarting it") == 2, err[-3000:]
    # The restarted feeders fed rows themselves (not only the dead ones' rings).
    fed = [int(m) for m in re.findall(r"\[feeder\] hydrofeed feeder: rank \d+: (\d+) rows", err)]
    assert sum(fed) > 0, err[-3000:]
    s_e = WIDE_TOTAL // (3 * BATCH)
    drop = dropped(err)
    assert drop == 2 * (WIDE_TOTAL - s_e * 3 * BATCH)
    seen: dict[int, list[int]] = {0: [], 1: []}
    for k in range(3):
        recs = records(out, k)
        st = steps_of(recs)
        for s in st:
            assert len(s["ids"]) == BATCH
            seen[s["epoch"]].extend(s["ids"])
        assert [sum(1 for s in st if s["epoch"] == ep) for ep in (0, 1)] == [s_e, s_e], k
        assert recs[-1]["should_stop"] is True
        assert recs[-1]["metrics"]["rejoins"] == 2
    for ep in (0, 1):
        ids = seen[ep]
        assert len(ids) == len(set(ids)), f"epoch {ep}: a row was delivered twice"
        assert set(ids) <= set(range(WIDE_TOTAL))
        assert len(ids) == WIDE_TOTAL - drop // 2, ep
    assert shm_listing() <= shm0
    no_leftovers(str(tmp_path))


def test_resume_with_fewer_workers(hf_bin: str, data7: Path, tmp_path: Path) -> None:
    k = 20
    r1 = launch(hf_bin, data7, tmp_path / "a", 3, "--epochs", "1", env={"STOP_AFTER": str(k)})
    assert r1.returncode == 0, r1.stderr[-3000:]
    state_file = tmp_path / "a" / "state.json"
    state = json.loads(state_file.read_text())
    assert state["batch_size"] == BATCH and state["epochs"] == 1
    first: list[int] = []
    for rank in range(3):
        st = steps_of(records(tmp_path / "a", rank))
        assert len(st) == k
        for s in st:
            first.extend(s["ids"])
    r2 = launch(hf_bin, data7, tmp_path / "b", 2, "--epochs", "1", "--resume", str(state_file))
    assert r2.returncode == 0, r2.stderr[-3000:]
    second: list[int] = []
    steps2 = []
    for rank in range(2):
        st = steps_of(records(tmp_path / "b", rank))
        steps2.append(len(st))
        for s in st:
            second.extend(s["ids"])
    assert steps2[0] == steps2[1]
    both = first + second
    assert len(both) == len(set(both)), "a row was delivered in both runs"
    drop = dropped(r2.stderr)
    assert len(both) == TOTAL - drop
    assert drop < 2 * BATCH


sys.path.insert(0, str(HERE.parents[1] / "tests"))
from minidfs import minidfs  # noqa: E402,F401  (the session fixture)


@pytest.mark.hdfs
def test_launch_from_minidfs(hf_bin: str, data7: Path, tmp_path: Path, minidfs) -> None:  # noqa: F811
    """The same job with the input on a real MiniDFS (files put with Hadoop's own client)."""
    for f in sorted(data7.glob("*.parquet")):
        minidfs.put(f, f"/launch7/{f.name}")
    out = tmp_path / "out"
    out.mkdir()
    r = subprocess.run(
        [hf_bin, "launch", "--workers", "3", "--input", minidfs.uri("/launch7"),
         "--batch-size", str(BATCH), "--epochs", "1", "--", sys.executable, TRAINER],
        env={**minidfs.env(), "OUT": str(out)}, capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    ids: list[int] = []
    steps = []
    for k in range(3):
        st = steps_of(records(out, k))
        steps.append(len(st))
        for s in st:
            ids.extend(s["ids"])
    assert steps[0] == steps[1] == steps[2] == TOTAL // (3 * BATCH)
    assert len(ids) == len(set(ids)) == TOTAL - dropped(r.stderr)


def verdict(stderr: str) -> str:
    """The error `launch` ended with (after the children's streamed output)."""
    starts = [m.start() for m in re.finditer(r"^Error: ", stderr, re.M)]
    assert starts, stderr[-3000:]
    return stderr[starts[-1]:]


@pytest.mark.parametrize(
    "how,status",
    [("exception", "exit status 1"), ("segv", "SIGSEGV"), ("kill", "SIGKILL")],
)
def test_trainer_crash_is_attributed_to_the_rank(
    hf_bin: str, data7: Path, tmp_path: Path, how: str, status: str
) -> None:
    """Rank 1 dies at step 20: `launch` names rank 1, its status and the tail of its output,
    not the feeder (which only lost a trainer)."""
    r = launch(hf_bin, data7, tmp_path / "out", 3, "--epochs", "2",
               env={"CRASH_AT": f"1:20:{how}", "SLOW": "0.005"})
    assert r.returncode != 0
    v = verdict(r.stderr)
    assert "trainer rank 1" in v and status in v, v
    assert not v.startswith("Error: the feeder"), v
    assert "rank 1 crashing at step 20" in v, v
    if how == "exception":
        assert "RuntimeError: boom at step 20" in v, v
    no_leftovers(str(tmp_path))


def all_ids(out: Path, workers: int) -> list[int]:
    ids: list[int] = []
    for k in range(workers):
        for s in steps_of(records(out, k)):
            ids.extend(s["ids"])
    return ids


def test_ctrl_c_saves_acks_and_resume_is_exactly_once(
    hf_bin: str, data7: Path, tmp_path: Path
) -> None:
    """Ctrl-C mid-epoch with --state-out: the state holds every row the trainers consumed (acks
    are forwarded continuously and flushed on the way out); a resume feeds the rest, so both
    runs together deliver every row exactly once."""
    out = tmp_path / "a"
    state = tmp_path / "state.json"
    rc, err = interrupt_after(hf_bin, data7, out, state, BATCH, 40)
    assert rc == 130, err[-3000:]
    assert "interrupted" in verdict(err), err[-3000:]
    first = all_ids(out, 2)
    assert 0 < len(first) < TOTAL
    assert f"{len(first)} rows acked" in verdict(err), (len(first), err[-3000:])
    resume_exactly_once(hf_bin, data7, tmp_path, state, first)


def interrupt_after(hf_bin: str, data: Path, out: Path, state: Path, batch: int, steps: int) -> tuple[int, str]:
    """`launch --workers 2 --state-out` over `data`, Ctrl-C once rank 0 recorded `steps` steps
    (10 ms each): the exit status and standard error."""
    out.mkdir()
    p = subprocess.Popen(
        [hf_bin, "launch", "--workers", "2", "--input", str(data), "--batch-size", str(batch),
         "--state-out", str(state), "--", sys.executable, TRAINER],
        env=dict(os.environ, OUT=str(out), SLOW="0.01"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            f = out / "rank-0.jsonl"
            if f.exists() and f.read_text().count("\n") >= steps:
                break
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
    return p.returncode, err


def resume_exactly_once(hf_bin: str, data7: Path, tmp_path: Path, state: Path, first: list[int]) -> None:
    """Resumes `state` with 2 workers: every row not delivered in the first run arrives once."""
    r2 = launch(hf_bin, data7, tmp_path / "b", 2, "--resume", str(state))
    assert r2.returncode == 0, r2.stderr[-3000:]
    both = first + all_ids(tmp_path / "b", 2)
    assert len(both) == len(set(both)), "a row was delivered in both runs"
    assert len(both) == TOTAL - dropped(r2.stderr)
    no_leftovers(str(tmp_path))


def test_trainer_exiting_0_early_ends_the_job_cleanly(
    hf_bin: str, data7: Path, tmp_path: Path
) -> None:
    """Rank 0 trains a fixed number of steps and exits 0 mid-feed: the other ranks are told to
    stop (end of feed), `launch` exits 0, and the state it saved resumes exactly once."""
    state = tmp_path / "state.json"
    r = launch(hf_bin, data7, tmp_path / "a", 3, "--state-out", str(state),
               env={"EXIT0_AT": "0:10", "SLOW": "0.01"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "stopped before the end of the feed" in r.stderr, r.stderr[-3000:]
    for k in (1, 2):
        assert records(tmp_path / "a", k)[-1]["should_stop"] is True
    first = all_ids(tmp_path / "a", 3)
    assert f" {len(first)} rows acked" in r.stderr, (len(first), r.stderr[-3000:])
    resume_exactly_once(hf_bin, data7, tmp_path, state, first)


def test_run_dir_is_private_and_never_a_planted_one(hf_bin: str, data7: Path, tmp_path: Path) -> None:
    """The socket directory is made 0700 by `launch` itself (under $XDG_RUNTIME_DIR when set): a
    directory planted beforehand at the predictable `$TMPDIR/hydrofeed-launch-<pid>` is neither
    used nor removed."""
    import shutil
    import tempfile

    # Short paths: a Unix socket path has at most 107 bytes.
    short = Path(tempfile.mkdtemp(prefix="hft", dir="/tmp"))
    try:
        run_dir_checks(hf_bin, data7, tmp_path, short)
    finally:
        shutil.rmtree(short)


def run_dir_checks(hf_bin: str, data7: Path, tmp_path: Path, short: Path) -> None:
    tmp = short / "tmp"
    tmp.mkdir()
    # `exec` keeps the shell's pid, so the planted name is the one `launch` would predict.
    plant = 'd="$TMPDIR/hydrofeed-launch-$$"; mkdir -m 777 "$d"; touch "$d/planted"; exec "$@"'
    for xdg in (None, short / "xdg"):
        out = tmp_path / ("out-xdg" if xdg else "out")
        out.mkdir()
        env = dict(os.environ, OUT=str(out), TMPDIR=str(tmp))
        env.pop("XDG_RUNTIME_DIR", None)
        if xdg:
            xdg.mkdir(mode=0o700)
            env["XDG_RUNTIME_DIR"] = str(xdg)
        r = subprocess.run(
            ["sh", "-c", plant, "sh", hf_bin, "launch", "--workers", "1", "--input", str(data7),
             "--batch-size", str(BATCH), "--", sys.executable, TRAINER],
            env=env, capture_output=True, text=True, timeout=120,
        )
        assert r.returncode == 0, r.stderr[-3000:]
        first = records(out, 0)[0]
        d = Path(first["socket_dir"])
        assert d.parent == (xdg or tmp), d
        assert not (d / "planted").exists(), f"launch used the planted directory {d}"
        assert first["mode"] == 0o700, oct(first["mode"])
        assert not d.exists(), "the run directory is removed at exit"
        planted = list(tmp.glob("hydrofeed-launch-*/planted"))
        assert len(planted) == (2 if xdg else 1), planted


def test_skip_errors_counts_and_names_the_files(hf_bin: str, tmp_path: Path) -> None:
    """`launch --skip-errors` skips a corrupt TFRecord record (bad data CRC) and its summary
    gives the count and the file."""
    data = tmp_path / "data"
    subprocess.run([hf_bin, "gen", "--format", "tfrecord", "--rows", "300", "--files", "2",
                    "--out", str(data)], check=True, capture_output=True)
    bad = sorted(data.iterdir())[0]
    b = bytearray(bad.read_bytes())
    b[12 + 100] ^= 0xFF  # inside the first record's data: its data CRC no longer matches
    bad.write_bytes(bytes(b))
    trainer = "import hydrofeed\nfor _ in hydrofeed.DataFeed(timeout=60): pass\n"
    r = subprocess.run(
        [hf_bin, "launch", "--workers", "1", "--input", str(data), "--batch-size", "10",
         "--skip-errors", "--", sys.executable, "-c", trainer],
        capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    summary = [line for line in r.stderr.splitlines() if line.startswith("hydrofeed launch: 1 workers")]
    assert summary and f"skipped 1 corrupt records in {bad}" in summary[-1], r.stderr[-3000:]
    assert "290 rows acked" in summary[-1] or "299 rows acked" in summary[-1], summary
    # The feeder's WARN about the record, without colour codes: stderr is not a terminal.
    assert "data CRC mismatch" in r.stderr and "\x1b[" not in r.stderr, r.stderr[-3000:]


# -- CLI hygiene ----------------------------------------------------------------------------


def test_serve_removes_its_socket_on_ctrl_c(hf_bin: str, data7: Path, tmp_path: Path) -> None:
    sock = tmp_path / "feed.sock"
    p = subprocess.Popen([hf_bin, "serve", "--input", str(data7), "--socket", str(sock)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while not sock.exists():
            assert time.time() < deadline and p.poll() is None, "serve did not bind"
            time.sleep(0.02)
        p.send_signal(signal.SIGINT)
        p.wait(timeout=10)
    finally:
        p.kill()
    assert not sock.exists(), "serve left its socket file after Ctrl-C"


def test_inspect_json_into_a_closed_pipe_is_quiet(hf_bin: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    subprocess.run([hf_bin, "gen", "--format", "tfrecord", "--rows", "3000", "--files", "1",
                    "--out", str(data)], check=True, capture_output=True)
    # One split per record: a JSON plan far larger than a pipe's buffer.
    r = subprocess.run(
        ["sh", "-c", f'"{hf_bin}" inspect --json --split-bytes 1 "{data}" | head -n 1; '
                     'exit "${PIPESTATUS:-0}"'],
        capture_output=True, text=True, timeout=60, env=dict(os.environ, RUST_BACKTRACE="0"),
    )
    assert r.stdout.strip() == "{"
    assert r.stderr == "", r.stderr[-2000:]


def run_on_a_pty(argv: list[str], env: dict) -> str:
    """Runs `argv` with stderr on a pseudo-terminal; returns what it wrote there."""
    import pty

    master, slave = pty.openpty()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            b = os.read(master, 4096)
        except OSError:
            break
        if not b:
            break
        chunks.append(b)
    p.wait(timeout=30)
    os.close(master)
    return b"".join(chunks).decode(errors="replace")


def test_logs_have_colour_only_on_a_terminal_without_no_color(hf_bin: str) -> None:
    # A WARN line: the NameNode is unreachable while --hdfs-timeout waits for it.
    argv = [hf_bin, "inspect", "--hdfs-timeout", "1.5", "hdfs://127.0.0.1:9/x"]
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["RUST_BACKTRACE"] = "0"
    plain = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=env).stderr
    assert "WARN" in plain and "\x1b[" not in plain, plain
    tty = run_on_a_pty(argv, env)
    assert "WARN" in tty and "\x1b[" in tty, tty
    no_color = run_on_a_pty(argv, dict(env, NO_COLOR="1"))
    assert "WARN" in no_color and "\x1b[" not in no_color, no_color


def test_help_texts(hf_bin: str) -> None:
    def help_of(*args: str) -> str:
        return subprocess.run([hf_bin, *args, "--help"], capture_output=True, text=True,
                              check=True).stdout

    top = help_of()
    assert "hydrofeed launch --workers N" in top and "storage, format readers" not in top, top
    def command_line(name: str) -> str:
        m = re.search(rf"^  {name}  .*$", top, re.M)
        assert m, top
        return m.group(0)

    assert "decode" in help_of("bench") and "decode" in command_line("bench")
    assert "one trainer" in command_line("serve"), top
    inspect = help_of("inspect")
    assert "fixed_size_list" not in inspect and "Apache Parquet" in inspect, inspect
    assert "default: 1" in help_of("launch")
    r = subprocess.run([hf_bin, "launch", "--workers", "1", "--input", "x", "--epochs", "0",
                        "--", "true"], capture_output=True, text=True)
    assert r.returncode != 0 and "--epochs" in r.stderr and "0" in r.stderr, r.stderr


def test_trainer_asking_another_batch_size_than_launch_is_told_which_flag(
    hf_bin: str, data7: Path, tmp_path: Path
) -> None:
    """`launch --batch-size 64` and a trainer asking for 10: the trainer's first call raises an
    error naming both sizes and `--batch-size`; `launch` names that rank."""
    r = launch(hf_bin, data7, tmp_path / "out", 1, env={"BATCH": "10"})
    assert r.returncode != 0
    v = verdict(r.stderr)
    assert "trainer rank 0" in v and "--batch-size 64" in v and "10 rows" in v, v


def test_without_batch_size_the_trainers_size_is_the_jobs(
    hf_bin: str, data7: Path, tmp_path: Path
) -> None:
    """No `--batch-size`: the trainers ask for 10 rows, so every step is 10 rows (it was the
    launcher's 256), every row once."""
    r = launch(hf_bin, data7, tmp_path / "out", 2, env={"BATCH": "10"}, batch=None)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "batch size 10 (asked by the trainers)" in r.stderr, r.stderr[-3000:]
    ids = []
    for k in range(2):
        for s in steps_of(records(tmp_path / "out", k)):
            assert len(s["ids"]) == 10
            ids.extend(s["ids"])
    assert len(ids) == len(set(ids)) == TOTAL - dropped(r.stderr)


@pytest.mark.parametrize("given", ["none", "64"])
def test_batch_size_given_only_to_batches_is_the_one_used(
    hf_bin: str, data7: Path, tmp_path: Path, given: str
) -> None:
    """`DataFeed()` then `feed.batches(10)`: every step is 10 rows (it was the launcher's 256
    without `--batch-size`); with `--batch-size 64` the first call raises naming it."""
    batch = None if given == "none" else 64
    r = launch(hf_bin, data7, tmp_path / "out", 1, env={"BATCH": "10", "BATCH_LATE": "1"}, batch=batch)
    if batch is not None:
        assert r.returncode != 0
        v = verdict(r.stderr)
        assert "--batch-size 64" in v and "10 rows" in v, v
        return
    assert r.returncode == 0, r.stderr[-3000:]
    steps = steps_of(records(tmp_path / "out", 0))
    assert steps and all(len(s["ids"]) == 10 for s in steps), [len(s["ids"]) for s in steps][:5]


def test_trainers_asking_different_batch_sizes_fail_naming_both(
    hf_bin: str, data7: Path, tmp_path: Path
) -> None:
    r = launch(hf_bin, data7, tmp_path / "out", 2, env={"BATCH": "10,20"}, batch=None)
    assert r.returncode != 0
    v = verdict(r.stderr)
    assert "rank 0 asks for 10 rows" in v and "rank 1 asks for 20 rows" in v, v
    assert "--batch-size" in v, v
    no_leftovers(str(tmp_path))


def test_the_error_is_the_last_line_with_rust_backtrace_set(hf_bin: str, tmp_path: Path) -> None:
    """With RUST_BACKTRACE=1 (a common setting while debugging) the backtrace comes first and
    the error, with its causes on one line, last: `launch` and the Spark supervisor read a
    failed feeder's last lines, which a backtrace after the error pushed out (a corrupt file's
    name and offset were lost behind 40 lines of frames)."""
    missing = tmp_path / "nowhere"
    r = subprocess.run([hf_bin, "inspect", str(missing)], capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, RUST_BACKTRACE="1"))
    assert r.returncode != 0
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert lines[-1].startswith("Error: ") and str(missing) in lines[-1], r.stderr[-3000:]
    assert sum(ln.startswith("Error: ") for ln in lines) == 1, r.stderr[-3000:]


def feeder_metric(port: int, name: str) -> float:
    """The sum over ranks of one of the feeder's Prometheus counters."""
    import urllib.request

    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith(f"hydrofeed_feeder_{name}{{"))


def test_the_feeder_reads_before_its_trainers_attach(hf_bin: str, data7: Path, tmp_path: Path) -> None:
    """With the job's batch size given, each rank leases, reads and decodes while its trainer
    is still starting (the trainers here wait for a file): storage is read before any trainer
    attached, nothing goes into a ring yet, and once they attach every row comes once, in equal
    steps. Before, a rank read nothing until its trainer attached."""
    import socket

    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        port = sk.getsockname()[1]
    out, go = tmp_path / "out", tmp_path / "go"
    out.mkdir()
    p = subprocess.Popen(
        [hf_bin, "launch", "--workers", "2", "--input", str(data7), "--batch-size", str(BATCH),
         "--feeder-metrics", f"127.0.0.1:{port}", "--", sys.executable, TRAINER],
        env=dict(os.environ, OUT=str(out), WAIT_FOR=str(go)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        read, deadline = 0.0, time.time() + 60
        while time.time() < deadline:
            try:
                read = feeder_metric(port, "storage_bytes_total")
            except OSError:
                read = 0.0  # the endpoint is not up yet
            if read > 0:
                break
            time.sleep(0.05)
        assert read > 0, "no rank read its input before its trainer attached"
        assert not list(out.glob("rank-*.jsonl")), "a trainer attached before the file existed"
        assert feeder_metric(port, "batches_total") == 0, "batches went into a ring with no trainer"
        go.touch()
        _, err = p.communicate(timeout=120)
    finally:
        p.kill()
        p.communicate()
    assert p.returncode == 0, err[-3000:]
    steps = [steps_of(records(out, k)) for k in range(2)]
    assert len(steps[0]) == len(steps[1]) > 0
    ids = [i for st in steps for s in st for i in s["ids"]]
    assert len(ids) == len(set(ids)) == TOTAL - dropped(err)
    no_leftovers(str(tmp_path))


def test_a_rank_whose_trainer_never_comes_stops_reading_ahead(
    hf_bin: str, data7: Path, tmp_path: Path
) -> None:
    """`hydrofeed coordinator` and one `hydrofeed feeder`, and no trainer: the rank reads ahead,
    then its attach timeout ends it naming the socket; the reader stops with it (the feeder
    exits, no hang), and its socket and ring are gone."""
    shm0 = shm_listing()
    coord = subprocess.Popen(
        [hf_bin, "coordinator", "--input", str(data7), "--workers", "1", "--batch-size",
         str(BATCH), "--listen", "127.0.0.1:0", "--token-file", str(tmp_path / "token")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert coord.stdout is not None
        line = coord.stdout.readline()
        assert "listening on" in line, line
        r = subprocess.run(
            [hf_bin, "feeder", "--input", str(data7), "--coordinator", line.split()[-1],
             "--token-file", str(tmp_path / "token"), "--socket-dir", str(tmp_path / "sock"),
             "--accept-timeout", "3", "--memory-mb", "32"],
            capture_output=True, text=True, timeout=60,
        )
    finally:
        coord.kill()
        coord.communicate()
    assert r.returncode != 0
    assert "a trainer to connect to" in r.stderr and "rank-0.sock" in r.stderr, r.stderr[-3000:]
    assert not (tmp_path / "sock" / "rank-0.sock").exists()
    assert shm_listing() <= shm0
