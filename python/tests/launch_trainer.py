"""A trainer for the launch tests: records every row id it gets, per step and epoch.

Environment: ``OUT`` (directory for ``rank-<r>.jsonl``), ``STOP_AFTER`` (steps, then save
``state.json`` on rank 0 and exit), ``DIE_AT`` ("rank:step": that rank exits 3 there),
``KILL_AT`` ("rank:step": kill -9 itself there), ``SLOW`` (seconds per step).
"""

import json
import os
import signal
import sys
import time

import hydrofeed

rank = int(os.environ["HYDROFEED_RANK"])
workers = int(os.environ["HYDROFEED_NUM_WORKERS"])
out = os.environ["OUT"]
stop_after = int(os.environ.get("STOP_AFTER", "0"))
die_at = os.environ.get("DIE_AT", "")
slow = float(os.environ.get("SLOW", "0"))
assert json.loads(os.environ["TF_CONFIG"])["task"]["index"] == rank

feed = hydrofeed.DataFeed(timeout=60)
log = open(os.path.join(out, f"rank-{rank}.jsonl"), "w")
step = 0
while True:
    b = feed.next()
    if b is None:
        break
    ids = [int(x) for x in b["id"]]
    log.write(json.dumps({"step": step, "epoch": b.epoch, "ids": ids}) + "\n")
    log.flush()
    step += 1
    if slow:
        time.sleep(slow)
    if die_at == f"{rank}:{step}":
        sys.exit(3)
    if os.environ.get("KILL_AT") == f"{rank}:{step}":
        os.kill(os.getpid(), signal.SIGKILL)
    if stop_after and step == stop_after:
        # A checkpoint barrier: every rank's acks are recorded (state() waits for that) before
        # rank 0 takes the state that gets saved.
        feed.state()
        open(os.path.join(out, f"flushed-{rank}"), "w").close()
        if rank == 0:
            deadline = time.time() + 30
            while not all(
                os.path.exists(os.path.join(out, f"flushed-{r}")) for r in range(workers)
            ):
                assert time.time() < deadline, "barrier timed out"
                time.sleep(0.01)
            with open(os.path.join(out, "state.json"), "w") as f:
                json.dump(feed.state(), f)
            open(os.path.join(out, "saved"), "w").close()
        else:
            deadline = time.time() + 30
            while not os.path.exists(os.path.join(out, "saved")):
                assert time.time() < deadline, "waiting for the state timed out"
                time.sleep(0.01)
        feed.terminate()
        log.write(json.dumps({"stopped": step}) + "\n")
        sys.exit(0)
log.write(json.dumps({"end": step, "should_stop": feed.should_stop(), "metrics": feed.metrics()}) + "\n")
log.close()
