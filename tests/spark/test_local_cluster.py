"""One run on ``local-cluster[2,1,1024]``: two executor JVMs, each with one core and its own
Python workers, as on a real cluster (the other tests use local[2] for speed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

HERE = os.path.dirname(os.path.abspath(__file__))


def test_two_executor_jvms_feed_every_row_exactly_num_epochs_times():
    proc = subprocess.run(
        [sys.executable, os.path.join(HERE, "local_cluster_job.py")],
        capture_output=True,
        text=True,
        timeout=280,
        env=dict(os.environ),
        cwd=HERE,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["distinct"] == 4000 and res["times"] == [2]
    assert res["workers"] == ["worker", "worker"]
    assert len(res["node_pids"]) == 2  # each node was started by a different Python worker
    # GPU addresses from Spark's resource scheduling reach the trainer (fake discovery script)
    assert res["gpus"] == [["3"], ["3"]] and res["cuda"] == ["3"]
