"""Where time goes under `hydrofeed launch`: the trainer's wait for input in the feeder's
Prometheus text, TensorBoard scalars on the chief, and stalls that name the stage and the rank.

Real coordinator, feeder and trainer processes (`launch_trainer.py`), as in `test_launch.py`.
"""

from __future__ import annotations

import os
import re
import socket
import struct
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

from test_launch import (  # noqa: F401 (data7 and data_wide are fixtures)
    BATCH,
    TRAINER,
    data7,
    data_wide,
    launch,
    no_leftovers,
    records,
    steps_of,
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrapes(p: subprocess.Popen, port: int, timeout: float = 120) -> Iterator[str]:
    """The Prometheus text at `port`, every 0.1 s while `p` runs (at most `timeout` s)."""
    deadline = time.time() + timeout
    while p.poll() is None and time.time() < deadline:
        try:
            yield urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        except OSError:
            pass
        time.sleep(0.1)


def samples(text: str, name: str) -> dict[str, float]:
    """`{rank: value}` of one metric in Prometheus text."""
    out = {}
    for m in re.finditer(rf'^{name}{{rank="(\d+)"}} (\S+)$', text, re.M):
        out[m.group(1)] = float(m.group(2))
    return out


def events(path: Path) -> list:
    """The `Event` protos of a TensorBoard event file (TFRecord framing: length, its CRC, the
    record, its CRC), read without TensorFlow (tensorboard's own loaders import it)."""
    from tensorboard.compat.proto import event_pb2

    data, i, out = path.read_bytes(), 0, []
    while i < len(data):
        (n,) = struct.unpack_from("<Q", data, i)
        out.append(event_pb2.Event.FromString(data[i + 12 : i + 12 + n]))
        i += 12 + n + 4
    return out


def test_trainer_wait_reaches_prometheus_per_rank(hf_bin: str, data7: Path, tmp_path: Path) -> None:
    """The trainer's wait for input, rows/s and steps travel with its acks to the feeder, which
    serves them per rank beside its own counters; the feeder's exit lines name the bytes each
    rank read from storage and wrote into its ring."""
    out = tmp_path / "out"
    out.mkdir()
    port = free_port()
    p = subprocess.Popen(
        [hf_bin, "launch", "--workers", "2", "--input", str(data7), "--batch-size", str(BATCH),
         "--epochs", "2", "--feeder-metrics", f"127.0.0.1:{port}", "--", sys.executable, TRAINER],
        env=dict(os.environ, OUT=str(out), SLOW="0.01"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    last = ""
    try:
        for text in scrapes(p, port):
            if len(samples(text, "hydrofeed_feed_steps_total")) == 2:
                last = text
        err = p.communicate(timeout=60)[1]
    finally:
        p.kill()
    assert p.returncode == 0, err[-3000:]
    assert last, "no scrape carried the trainers' figures:\n" + err[-3000:]
    steps = samples(last, "hydrofeed_feed_steps_total")
    frac = samples(last, "hydrofeed_feed_wait_fraction")
    rps = samples(last, "hydrofeed_feed_rows_per_second")
    wait = samples(last, "hydrofeed_feed_wait_seconds_total")
    for r in ("0", "1"):
        total = len(steps_of(records(out, int(r))))
        assert 0 < steps[r] <= total, (r, steps, total)
        assert 0.0 <= frac[r] <= 1.0, frac
        assert rps[r] > 0, rps
        assert wait[r] >= 0, wait
    assert "# TYPE hydrofeed_feed_wait_fraction gauge" in last
    assert samples(last, "hydrofeed_feeder_storage_bytes_total")["0"] > 0, last
    for r in (0, 1):
        line = re.search(rf"hydrofeed feeder: rank {r}: \d+ rows in \d+ batches, \d+ steps; "
                         rf"[0-9.]+ MB read from storage, [0-9.]+ MB into the ring", err)
        assert line, err[-3000:]


def test_tensorboard_scalars_on_the_chief(hf_bin: str, data7: Path, tmp_path: Path) -> None:
    """`launch --tensorboard DIR`: rank 0's feed writes `feed/wait_fraction` and `feed/rows_per_s`
    against its step every few seconds and at the end, into DIR/hydrofeed; no other rank
    writes."""
    tb = tmp_path / "tb"
    out = tmp_path / "out"
    r = launch(hf_bin, data7, out, 2, "--epochs", "2", "--tensorboard", str(tb),
               env={"SLOW": "0.01", "HYDROFEED_METRICS_EVERY": "0.3"})
    assert r.returncode == 0, r.stderr[-3000:]
    files = sorted((tb / "hydrofeed").glob("events.out.tfevents.*"))
    assert len(files) == 1, files
    points: dict[str, list[tuple[int, float]]] = {}
    for ev in events(files[0]):
        for v in ev.summary.value:
            points.setdefault(v.tag, []).append((ev.step, v.simple_value))
    total = len(steps_of(records(out, 0)))
    for tag in ("feed/wait_fraction", "feed/rows_per_s"):
        pts = points.get(tag, [])
        assert len(pts) >= 2, points.keys()
        assert [s for s, _ in pts] == sorted(s for s, _ in pts), pts
        assert pts[-1][0] == total, (pts, total)
    assert all(0.0 <= v <= 1.0 for _, v in points["feed/wait_fraction"])
    assert all(v >= 0 for _, v in points["feed/rows_per_s"])
    assert "feed/gpu_utilization" not in points  # no batch went to a GPU


def test_trainer_timeout_names_the_feeders_stage(hf_bin: str, data7: Path, tmp_path: Path) -> None:
    """Rank 0 consumed its share of epoch 0, and of epoch 1 (a rank goes one epoch ahead),
    while rank 1 sleeps: rank 0's feeder waits at the epoch barrier, and rank 0's wait for a
    batch times out saying so (not "reading or decoding slowly")."""
    r = launch(hf_bin, data7, tmp_path / "out", 2, "--epochs", "2",
               env={"PAUSE_AT": "1:2:20", "FEED_TIMEOUT": "0:3"})
    assert r.returncode != 0
    assert "trainer rank 0" in r.stderr, r.stderr[-3000:]
    m = re.search(r"FeedTimeoutError: .*", r.stderr)
    assert m, r.stderr[-3000:]
    assert "rank 0" in m.group(0) and "waiting for work" in m.group(0), m.group(0)
    assert "epoch barrier" in m.group(0), m.group(0)
    no_leftovers(str(tmp_path))


def test_a_trainer_that_stops_taking_batches_is_named(
    hf_bin: str, data_wide: Path, tmp_path: Path
) -> None:
    """Rank 1 keeps its batches and stops calling `next()`: its ring stays full past
    `--stall-timeout`, and `launch` names trainer rank 1 and the stage (not "the feeder
    failed")."""
    t0 = time.time()
    r = launch(hf_bin, data_wide, tmp_path / "out", 2, "--memory-mb", "48", "--columns", "id,x",
               "--stall-timeout", "3", env={"HOLD_AT": "1:3"})
    took = time.time() - t0
    assert r.returncode != 0
    assert "trainer rank 1" in r.stderr, r.stderr[-3000:]
    assert "not consuming" in r.stderr, r.stderr[-3000:]
    assert "the feeder (pid" not in r.stderr, r.stderr[-3000:]
    assert took < 60, took
    no_leftovers(str(tmp_path))


@pytest.mark.parametrize("chief", [True, False])
def test_spark_chief_gets_the_tensorboard_dir(chief: bool, tmp_path: Path) -> None:
    """The Spark supervisor gives `HYDROFEED_TENSORBOARD_DIR` (TensorBoard's log dir) to the
    trainer of the node TensorBoard runs on, when the cluster was started with
    `tensorboard=True`, and to no other."""
    from hydrofeed.spark.supervisor import tensorboard_env

    spec = {
        "cluster_meta": {"tensorboard": True, "log_dir": str(tmp_path / "logs"),
                         "working_dir": str(tmp_path), "cluster_template": {"chief": [0], "worker": [1]}},
        "meta": {"job_name": "chief" if chief else "worker", "task_index": 0, "executor_id": 0},
    }
    env = tensorboard_env(spec)
    assert env == ({"HYDROFEED_TENSORBOARD_DIR": str(tmp_path / "logs")} if chief else {})
    spec["cluster_meta"]["tensorboard"] = False
    assert tensorboard_env(spec) == {}
