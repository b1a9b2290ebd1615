"""A driver killed with SIGKILL leaves no trainer, supervisor or socket behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.timeout(180)]

HERE = os.path.dirname(os.path.abspath(__file__))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie awaiting its reaper is gone for our purpose
        return f.read().split(") ", 1)[1][0] != "Z"


def test_supervisors_and_trainers_exit_when_the_driver_is_killed():
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "driver_dies_job.py")], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=HERE, start_new_session=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        info = json.loads(line)
        sups = info["supervisors"]
        assert len(sups) == 2 and all(_alive(p) for p in sups)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (any(_alive(p) for p in sups) or any(os.path.exists(s) for s in info["socks"])):
            time.sleep(0.2)
        assert not any(_alive(p) for p in sups), "supervisors outlived the driver"
        assert not any(os.path.exists(s) for s in info["socks"]), "feeding sockets left behind"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()
