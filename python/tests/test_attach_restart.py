"""A feeder lost in the middle of a trainer's attach, when feeders are restarted (`launch`, a
rejoin timeout): the trainer waits for the restarted one instead of failing. Seen on a loaded
machine: `launch`'s feeder was `kill -9`ed while trainer rank 1 was still attaching, and rank 1
failed with "ring attach failed at Recv: Connection reset by peer" although a new feeder came
up a moment later.

Here a hostile listener accepts each connection and resets it for 2 s (what a feeder dying
mid-handshake looks like to the trainer), then a real `hydrofeed serve` takes the socket.
"""

from __future__ import annotations

import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hydrofeed


def _resetting_listener(path: Path, secs: float) -> threading.Thread:
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(16)
    srv.settimeout(0.05)

    def run() -> None:
        end = time.monotonic() + secs
        while time.monotonic() < end:
            try:
                c, _ = srv.accept()
            except socket.timeout:
                continue
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            c.close()  # a reset, as from a process killed mid-handshake
        srv.close()
        path.unlink()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _data(tmp: Path) -> Path:
    d = tmp / "data"
    d.mkdir()
    pq.write_table(pa.table({"id": pa.array(range(500), pa.int64())}), d / "part-0.parquet")
    return d


def test_a_reset_mid_attach_waits_for_the_restarted_feeder(hf_bin: str, tmp_path: Path) -> None:
    sock = tmp_path / "feed.sock"
    data = _data(tmp_path)
    hostile = _resetting_listener(sock, 2.0)
    procs: list[subprocess.Popen] = []

    def restart() -> None:
        hostile.join()
        procs.append(subprocess.Popen([hf_bin, "serve", "--input", str(data), "--socket", str(sock)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    threading.Thread(target=restart, daemon=True).start()
    try:
        feed = hydrofeed.DataFeed(str(sock), batch_size=100, connect_timeout=30, rejoin_timeout=30)
        ids = [i for b in feed.batches() for i in b["id"].tolist()]
        feed.close()
    finally:
        for p in procs:
            p.wait(timeout=60)
    assert sorted(ids) == list(range(500))


def test_without_restarts_a_reset_fails_at_once(tmp_path: Path) -> None:
    """Without a rejoin timeout (no one restarts the feeder) the reset is the error."""
    sock = tmp_path / "feed.sock"
    hostile = _resetting_listener(sock, 2.0)
    t0 = time.monotonic()
    with pytest.raises(hydrofeed.HydrofeedError):
        hydrofeed.DataFeed(str(sock), batch_size=100, connect_timeout=30)
    assert time.monotonic() - t0 < 1.5
    hostile.join()
