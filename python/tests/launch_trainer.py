"""A trainer for the launch tests: records every row id it gets, per step and epoch.

Environment: ``OUT`` (directory for ``rank-<r>.jsonl``), ``STOP_AFTER`` (steps, then save
``state.json`` on rank 0 and exit), ``DIE_AT`` ("rank:step": that rank exits 3 there),
``KILL_AT`` ("rank:step": kill -9 itself there), ``CRASH_AT`` ("rank:step:how", how is
``exception``, ``segv`` or ``kill``), ``EXIT0_AT`` ("rank:step": that rank exits 0 there, without
ending the feed), ``SLOW`` (seconds per step), ``BATCH`` (batch size to ask for, or one per rank
"10,20"; default: none), ``PAUSE_AT`` ("rank:step:secs": that rank sleeps there), ``HOLD_AT``
("rank:step": that rank keeps its batches and stops calling ``next()`` there, for 120 s),
``FEED_TIMEOUT`` ("rank:secs": that rank's ``DataFeed`` timeout; default 60), ``WAIT_FOR`` (a path:
the trainer attaches once it exists), ``WAIT_FOR_RANK`` ("rank:path": the same for that rank only).
On SIGINT the trainer finishes its step, acks what it recorded and exits 0 (``interrupted``).
"""

import ctypes
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
crash = os.environ.get("CRASH_AT", "").split(":")
assert json.loads(os.environ["TF_CONFIG"])["task"]["index"] == rank

interrupted = False


def on_sigint(signum, frame):
    global interrupted
    interrupted = True


signal.signal(signal.SIGINT, on_sigint)

# BATCH: the size to ask for, or one per rank ("10,20"); unset: ask for none.
sizes = os.environ.get("BATCH", "").split(",")
batch_size = int(sizes[rank % len(sizes)]) if sizes != [""] else None
# BATCH_LATE=1: the size goes only to `batches(n)`, not to the constructor.
late = os.environ.get("BATCH_LATE") == "1"
pause = os.environ.get("PAUSE_AT", "").split(":")
feed_timeout = os.environ.get("FEED_TIMEOUT", "").split(":")
timeout = float(feed_timeout[1]) if feed_timeout[0] == str(rank) else 60.0
wait_for = os.environ.get("WAIT_FOR")
wait_rank, _, wait_path = os.environ.get("WAIT_FOR_RANK", "").partition(":")
if wait_rank == str(rank):
    wait_for = wait_path
while wait_for and not os.path.exists(wait_for):
    time.sleep(0.05)
feed = hydrofeed.DataFeed(batch_size=None if late else batch_size, timeout=timeout)
log = open(os.path.join(out, f"rank-{rank}.jsonl"), "w")
sock_dir = os.path.dirname(os.environ["HYDROFEED_FEED_SOCKET"])
log.write(json.dumps({"socket_dir": sock_dir, "mode": os.stat(sock_dir).st_mode & 0o777}) + "\n")
step = 0
held = []
for b in feed.batches(batch_size):
    ids = [int(x) for x in b["id"]]
    log.write(json.dumps({"step": step, "epoch": b.epoch, "ids": ids}) + "\n")
    log.flush()
    step += 1
    if slow:
        time.sleep(slow)
    if pause[0] == str(rank) and pause[1] == str(step):
        time.sleep(float(pause[2]))
    if os.environ.get("HOLD_AT") == f"{rank}:{step}":
        # Keeps the batches and stops calling next(): the ring stays full.
        held.append(b)
        print(f"rank {rank} holding its batches at step {step}", flush=True)
        time.sleep(120)
    if interrupted:
        # Everything recorded is consumed: ack it before leaving.
        feed.flush_acks()
        log.write(json.dumps({"interrupted": step}) + "\n")
        log.close()
        sys.exit(0)
    if die_at == f"{rank}:{step}":
        sys.exit(3)
    if os.environ.get("KILL_AT") == f"{rank}:{step}":
        os.kill(os.getpid(), signal.SIGKILL)
    if os.environ.get("EXIT0_AT") == f"{rank}:{step}":
        feed.flush_acks()
        log.write(json.dumps({"exit0": step}) + "\n")
        log.close()
        sys.exit(0)
    if crash[0] == str(rank) and crash[1] == str(step):
        print(f"rank {rank} crashing at step {step} by {crash[2]}", flush=True)
        if crash[2] == "exception":
            raise RuntimeError(f"boom at step {step}")
        if crash[2] == "segv":
            ctypes.string_at(0)
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
