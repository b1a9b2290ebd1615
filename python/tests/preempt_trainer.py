"""A trainer that handles preemption as docs/arch/feed.md shows: SIGTERM sets a flag, the
loop finishes its step, then the trainer checkpoints its model (torch, ``MODEL=torch``) and
its feed's state (``feed.state()``) with ``hydrofeed.save_state`` and exits 0.

Environment: ``OUT`` (directory for ``rank-<r>.jsonl`` and ``ckpt-<r>.json``), ``SLOW``
(seconds per step), ``CHECKPOINT_SECS`` (how long the checkpoint takes after SIGTERM),
``MODEL`` (``torch``: a small model trained on the ``x`` column, saved with ``torch.save``).
"""

import json
import os
import signal
import sys
import time

import hydrofeed

rank = int(os.environ["HYDROFEED_RANK"])
out = os.environ["OUT"]
slow = float(os.environ.get("SLOW", "0"))
checkpoint_secs = float(os.environ.get("CHECKPOINT_SECS", "0"))
use_torch = os.environ.get("MODEL") == "torch"

preempted = False


def on_sigterm(signum, frame):
    global preempted
    preempted = True


signal.signal(signal.SIGTERM, on_sigterm)

if use_torch:
    import torch

    model = torch.nn.Linear(1, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1e-6)

feed = hydrofeed.DataFeed(timeout=60)
log = open(os.path.join(out, f"rank-{rank}.jsonl"), "w")
step = 0
for b in feed.batches():
    ids = [int(x) for x in b["id"]]
    log.write(json.dumps({"step": step, "epoch": b.epoch, "ids": ids}) + "\n")
    log.flush()
    if use_torch:
        x = torch.as_tensor(b["x"]).reshape(-1, 1)
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    step += 1
    if slow:
        time.sleep(slow)
    if preempted:
        break

if preempted:
    time.sleep(checkpoint_secs)  # a checkpoint takes its time
    if use_torch:
        tmp = os.path.join(out, f".model-{rank}.pt")
        torch.save({"model": model.state_dict(), "step": step}, tmp)
        os.replace(tmp, os.path.join(out, f"model-{rank}.pt"))
    # Acks every batch handed out, waits until the coordinator recorded them.
    state = feed.state()
    hydrofeed.save_state({"step": step, "feed": state}, os.path.join(out, f"ckpt-{rank}.json"))
    log.write(json.dumps({"preempted": step}) + "\n")
    log.close()
    sys.exit(0)
log.write(json.dumps({"end": step}) + "\n")
log.close()
