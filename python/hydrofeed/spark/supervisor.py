"""Per-node supervisor: ``python -m hydrofeed.spark.supervisor <spec>``.

Starts the trainer, relays its output to the executor's log while keeping the last lines,
reports to the driver (ready, exit status + output tail), and obeys the driver: ``eof``
(end of feed -> the hub), ``stop`` (terminate the trainer), ``files`` (file mode: start a
``hydrofeed feeder`` for the trainer, hand its ring to the hub, report its exit). If the driver goes away the trainer
is stopped too: no orphan trainers. Prints one line on stdout for the barrier task: ``READY``
or why not.
"""

from __future__ import annotations

import collections
import ctypes
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any

from hydrofeed._tensorboard import TENSORBOARD_ENV
from hydrofeed.spark.children import pump
from hydrofeed.spark.files import Feeder

TAIL_LINES = 40
STOP_GRACE_S = 5.0


def _say(line: str) -> None:
    try:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        sys.stdout.close()
        os.close(1)
    except OSError:
        pass


def _log(line: str) -> None:
    # The executor's stderr pipe dies with the executor: never let a log line kill the supervisor.
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


_LIBC: ctypes.CDLL | None
try:
    _LIBC = ctypes.CDLL(None, use_errno=True)  # loaded before fork: preexec_fn must not import
except OSError:  # pragma: no cover - not glibc/musl
    _LIBC = None


def _die_with_parent() -> None:
    """preexec_fn of the trainer: SIGKILL it if the supervisor dies (even by kill -9)."""
    if _LIBC is not None:
        _LIBC.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def _connect_driver(cm: dict[str, Any], hello: dict[str, Any]) -> socket.socket:
    host, port = cm["driver_addr"]
    s = socket.create_connection((host, port), timeout=30)
    s.settimeout(None)
    s.sendall((json.dumps(hello) + "\n").encode())
    return s


_SEND_LOCK = threading.Lock()  # feeder watchers report from their own threads


def _send(s: socket.socket, msg: dict[str, Any]) -> None:
    try:
        with _SEND_LOCK:
            s.sendall((json.dumps(msg) + "\n").encode())
    except OSError:
        pass


def _tensorboard_dir(spec: dict[str, Any]) -> str | None:
    """TensorBoard's log directory when this node runs TensorBoard (``tensorboard=True``, and
    this is the chief: the first of chief, master or worker), else ``None``."""
    cm = spec["cluster_meta"]
    meta = spec["meta"]
    if not cm.get("tensorboard"):
        return None
    jobs = sorted(k for k in cm["cluster_template"] if k in ("chief", "master", "worker"))
    tb_job = "chief" if "chief" in jobs else ("master" if "master" in jobs else "worker")
    if meta["job_name"] != tb_job or meta["task_index"] != 0:
        return None
    return str(cm.get("log_dir") or os.path.join(cm["working_dir"], f"tensorboard_{meta['executor_id']}"))


def tensorboard_env(spec: dict[str, Any]) -> dict[str, str]:
    """The trainer's ``HYDROFEED_TENSORBOARD_DIR`` on the node TensorBoard runs on: its feed
    writes the feed's scalars there (``hydrofeed.DataFeed``)."""
    d = _tensorboard_dir(spec)
    return {TENSORBOARD_ENV: d} if d is not None else {}


def _start_tensorboard(spec: dict[str, Any]) -> tuple[subprocess.Popen[bytes] | None, int]:
    logdir = _tensorboard_dir(spec)
    if logdir is None:
        return None, 0
    import importlib.util

    if importlib.util.find_spec("tensorboard") is None:
        _log("hydrofeed: tensorboard=True but the tensorboard package is not installed here; not started")
        return None, 0
    port = int(os.environ.get("TENSORBOARD_PORT", "0"))
    if port == 0:
        with socket.socket() as s:
            s.bind(("", 0))
            port = s.getsockname()[1]
    try:
        p = subprocess.Popen(
            [sys.executable, "-m", "tensorboard.main", f"--logdir={logdir}", f"--port={port}", "--bind_all"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    except OSError:
        return None, 0
    return p, port


def main(spec_path: str) -> int:
    import pickle

    with open(spec_path, "rb") as f:
        spec = pickle.load(f)  # plain values only (see node.py): no pyspark import here
    cm, meta = spec["cluster_meta"], spec["meta"]
    rank = meta["executor_id"]
    try:
        drv = _connect_driver(
            cm,
            {"t": "hello", "token": cm["token"], "gen": spec["generation"], "rank": rank, "meta": meta, "pid": os.getpid()},
        )
    except OSError as e:
        _say(f"cannot reach the driver at {cm['driver_addr']}: {e}")
        return 2

    env = dict(os.environ)
    env["TF_CONFIG"] = json.dumps(spec["tf_config"])
    if meta["gpus"]:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(meta["gpus"])
    env["PYTHONUNBUFFERED"] = "1"
    env.pop(TENSORBOARD_ENV, None)
    env.update(tensorboard_env(spec))
    trainer = subprocess.Popen(
        [sys.executable, "-m", "hydrofeed.spark.trainer", spec_path],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        pass_fds=(spec["port_fd"],),
        preexec_fn=_die_with_parent,
    )
    os.close(spec["port_fd"])
    try:
        return _supervise(spec, spec_path, drv, trainer)
    finally:
        if trainer.poll() is None:
            trainer.kill()
            trainer.wait()
        for p in (meta["sock"], spec_path):
            if p:
                try:
                    os.unlink(p)
                except FileNotFoundError:
                    pass
        for d in (os.path.dirname(spec_path), os.path.dirname(os.path.dirname(spec_path))):
            try:
                os.rmdir(d)  # the last node on this host removes the directories
            except OSError:
                break


def _supervise(spec: dict[str, Any], spec_path: str, drv: socket.socket, trainer: subprocess.Popen[bytes]) -> int:
    cm, meta = spec["cluster_meta"], spec["meta"]
    tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
    prefix = f"[hydrofeed {meta['job_name']}:{meta['task_index']}] "

    pumper = pump(trainer, tail, lambda line: _log(prefix + line))
    feeders: list[Feeder] = []

    # Ready = the hub listens (feeding nodes) or the trainer is running (others).
    sock = meta["sock"]
    deadline = time.monotonic() + float(cm["reservation_timeout"])
    if sock:
        _await_path(sock, trainer, deadline, 0.02)
    tb, tb_port = _start_tensorboard(spec)
    if trainer.poll() is not None and trainer.returncode != 0:
        pumper.join(2)
        _say("trainer exited before it was ready: " + " | ".join(list(tail)[-5:]))
    elif sock and not os.path.exists(sock) and trainer.poll() is None:
        _say(f"trainer's feeding socket did not appear within {cm['reservation_timeout']}s")
        trainer.kill()
    else:
        _send(drv, {"t": "ready", "tb_port": tb_port})
        _say("READY")

    stopping = False
    stop_at = 0.0
    buf = b""
    driver_alive = True
    # A pidfd turns readable when the trainer exits: the exit is seen at once, not at the next
    # 0.2 s poll (shutdown waits on it).
    try:
        pidfd: int | None = os.pidfd_open(trainer.pid)
    except (AttributeError, OSError):
        pidfd = None
    while trainer.poll() is None:
        waits = ([drv] if driver_alive else []) + ([pidfd] if pidfd is not None else [])
        r, _, _ = select.select(waits, [], [], 0.2)
        if drv in r:
            try:
                chunk = drv.recv(4096)
            except OSError:
                chunk = b""
            if not chunk:
                driver_alive = False
                stopping, stop_at = True, time.monotonic()
                trainer.send_signal(signal.SIGTERM)
                _log(prefix + "driver connection lost: stopping the trainer")
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                msg = json.loads(line)
                if msg["t"] == "eof" and sock:
                    from hydrofeed.spark.hub import send_end_of_feed

                    try:
                        send_end_of_feed(sock)
                    except OSError as e:
                        # A trainer that is done closes its hub: in file mode its feed ended
                        # through its feeder's ring, or it returned. Nothing waits for the marker.
                        if trainer.poll() is None and not feeders:
                            _log(prefix + f"could not deliver end of feed: {e}")
                elif msg["t"] == "files" and sock:
                    feeders.append(_start_files(msg, meta, sock, spec_path, drv, prefix))
                elif msg["t"] == "stop" and not stopping:
                    stopping, stop_at = True, time.monotonic()
                    trainer.send_signal(signal.SIGTERM)
        if stopping and time.monotonic() - stop_at > STOP_GRACE_S:
            trainer.kill()
    code = trainer.wait()
    for fd in feeders:
        if fd.proc.poll() is not None:
            if fd.watcher is not None:
                fd.watcher.join(5)  # its own exit (a failure?) reaches the driver before ours
        fd.stop()
    if pidfd is not None:
        os.close(pidfd)
    pumper.join(5)
    if tb is not None:
        tb.terminate()
        try:
            tb.wait(5)
        except subprocess.TimeoutExpired:
            tb.kill()
    _send(drv, {"t": "exit", "code": code, "stopped": stopping, "tail": list(tail)})
    drv.close()
    # Stopped on the driver's order (ps/evaluator at shutdown, or the rest of a failed gang):
    # not this node's failure, so the barrier task must not report one.
    return 0 if code == 0 or (stopping and driver_alive) else 1


def _await_path(path: str, proc: subprocess.Popen[bytes], deadline: float, step: float) -> None:
    """Waits, polling every ``step`` seconds, until ``path`` exists (a child's socket), the
    child exited, or ``deadline`` (monotonic) passed; the caller looks at which."""
    while not os.path.exists(path) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(step)


def _start_files(msg: dict[str, Any], meta: dict[str, Any], hub_sock: str, spec_path: str, drv: socket.socket, prefix: str) -> Feeder:
    """File mode: starts this node's feeder, points the trainer's hub at its ring, and reports
    the feeder's exit (``feeder_exit``: code, output tail) to the driver from a thread."""
    from hydrofeed.spark.node import ERROR_PREFIX
    from hydrofeed.spark.hub import send_files

    feeder = Feeder(msg, meta["host"], os.path.dirname(spec_path), lambda line: _log(prefix + line))

    def watch() -> None:
        # Point the trainer at the ring once the feeder listens (it registers with the
        # coordinator first): the trainer then attaches at once instead of retrying.
        _await_path(feeder.socket, feeder.proc, time.monotonic() + float(msg["feed_timeout"]), 0.002)
        try:
            send_files(hub_sock, feeder.hub_message())
        except OSError as e:  # TransportError included: the hub refused (map_fun returned)
            feeder.tail.append(f"{ERROR_PREFIX}the trainer did not take the file feed: {e}")
            feeder.stop()
        code = feeder.wait()
        _send(drv, {"t": "feeder_exit", "job": msg["job"], "code": code, "stopped": feeder.stopped, "tail": list(feeder.tail)})

    feeder.watcher = threading.Thread(target=watch, name="hydrofeed-feeder-watch", daemon=True)
    feeder.watcher.start()
    return feeder


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
