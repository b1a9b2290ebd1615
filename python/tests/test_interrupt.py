"""Ctrl-C during a call that blocks in Rust for long: planning an ``hdfs://`` input whose
NameNode is unreachable, and asking a coordinator that never answers for its state. Either
call has a deadline of minutes; Ctrl-C must raise ``KeyboardInterrupt`` at once, not when
that deadline passes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

CHILD = """
import faulthandler, signal, sys, time
faulthandler.register(signal.SIGUSR1)  # the test asks for a traceback if it hangs
# A shell that starts a command in the background (`cmd &`, no job control) hands it SIGINT
# ignored, and Python then keeps it ignored: give this process the ordinary Ctrl-C handler.
signal.signal(signal.SIGINT, signal.default_int_handler)
import hydrofeed as hf
from hydrofeed._native import Feed
what, target = sys.argv[1], sys.argv[2]
print("ready", flush=True)
t0 = time.monotonic()
try:
    if what == "read":
        hf.read(target)
    else:
        Feed.coordinator_state(target, "test-token", 0, 1, 120.0)
except KeyboardInterrupt:
    print(f"KeyboardInterrupt after {time.monotonic() - t0:.1f} s", flush=True)
    sys.exit(0)
except BaseException as e:
    print(f"raised {type(e).__name__}: {e}", flush=True)
    sys.exit(2)
print("returned", flush=True)
sys.exit(3)
"""

# Seconds the child may take to answer Ctrl-C (it checks every 0.1 s).
ANSWER_WITHIN = 5.0


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A loopback port that refuses connections: bound (so nothing else takes it), not
    listening."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]
    finally:
        s.close()


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A loopback port that accepts connections and never answers (nor closes them)."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.settimeout(0.1)
    conns: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conns.append(c)

    t = threading.Thread(target=accept, daemon=True)
    try:
        srv.bind(("127.0.0.1", 0))
        srv.listen(16)
        t.start()
        yield srv.getsockname()[1]
    finally:
        stop.set()
        if t.is_alive():
            t.join(timeout=5)
        srv.close()
        for c in conns:
            c.close()


def _interrupt(what: str, target: str, tmp_path: Path) -> None:
    """Runs the blocking call in a child, sends it SIGINT after 1 s, and checks that it ends
    with KeyboardInterrupt within ANSWER_WITHIN seconds."""
    script = tmp_path / "blocked.py"
    script.write_text(CHILD)
    conf = tmp_path / "hadoop-conf"  # no Hadoop configuration of this machine
    conf.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "HADOOP_HOME"}
    env.update(
        HADOOP_CONF_DIR=str(conf),
        HADOOP_USER_NAME="hydrofeed-test",
        # Keep trying the unreachable NameNode for 2 minutes: far longer than the test waits.
        HYDROFEED_HDFS_TIMEOUT="120",
    )
    child = subprocess.Popen(
        [sys.executable, str(script), what, target],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        time.sleep(1.0)  # the child is now inside the call
        assert child.poll() is None, "the call ended by itself before Ctrl-C"
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        try:
            out, err = child.communicate(timeout=2 * ANSWER_WITHIN)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGUSR1)  # where is it stuck?
            time.sleep(1.0)
            child.kill()
            out, err = child.communicate(timeout=10)
            raise AssertionError(
                f"no exit {2 * ANSWER_WITHIN:.0f} s after Ctrl-C; stdout {out!r}; stacks:\n{err}"
            ) from None
        took = time.monotonic() - sent
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate(timeout=10)
    assert child.returncode == 0, f"stdout {out!r}; stderr {err!r}"
    assert "KeyboardInterrupt" in out, out
    assert took < ANSWER_WITHIN, f"Ctrl-C answered after {took:.1f} s"


def test_ctrl_c_interrupts_planning_an_unreachable_hdfs_input(
    refusing_port: int, tmp_path: Path
) -> None:
    # The NameNode refuses connections: planning retries for HYDROFEED_HDFS_TIMEOUT (120 s).
    _interrupt("read", f"hdfs://127.0.0.1:{refusing_port}/x", tmp_path)


def test_ctrl_c_interrupts_coordinator_state(silent_server: int, tmp_path: Path) -> None:
    # The coordinator accepts and never answers: the gRPC calls wait for their deadlines
    # (30 s per call, 120 s to connect).
    _interrupt("state", f"127.0.0.1:{silent_server}", tmp_path)
