"""A trainer for test_handout.py: takes ``TAKE`` batches one way (``HOW``), records their ids in
``OUT/rank-<r>.jsonl`` as it receives them, then leaves as ``LEAVE`` says, with no
``flush_acks()`` and no ``state()``.

HOW: ``batches`` (``feed.batches()``), ``tf`` (``hydrofeed.tf.dataset``, tf.data prefetch),
``torch`` (``hydrofeed.torch.IterableDataset`` through a ``DataLoader``). TAKE 0: everything.
LEAVE: ``return`` (the script ends), ``kill`` (SIGKILL while the last batch is in hand).
SAVE: a path to write ``feed.state()`` to once the loop ended.
"""

import json
import os
import signal
import sys

import hydrofeed

rank = int(os.environ["HYDROFEED_RANK"])
how = os.environ.get("HOW", "batches")
take = int(os.environ.get("TAKE", "0"))
leave = os.environ.get("LEAVE", "return")
batch = int(os.environ["BATCH"])
log = open(os.path.join(os.environ["OUT"], f"rank-{rank}.jsonl"), "w")
# SPE=1: a feed made without a batch size asks steps_per_epoch() before the dataset.
spe = os.environ.get("SPE") == "1"
feed = hydrofeed.DataFeed(batch_size=None if spe else batch)
if spe:
    log.write(json.dumps({"steps_per_epoch": feed.steps_per_epoch()}) + "\n")


def source():
    if how == "batches":
        for b in feed.batches():
            yield [int(x) for x in b["id"]]
    elif how == "tf":
        import hydrofeed.tf

        for el in hydrofeed.tf.dataset(feed, batch):
            yield [int(x) for x in el["id"].numpy()]
    elif how == "torch":
        import torch.utils.data

        import hydrofeed.torch

        dl = torch.utils.data.DataLoader(hydrofeed.torch.IterableDataset(feed), batch_size=None)
        for _ in range(int(os.environ.get("EPOCHS", "1"))):
            for el in dl:
                yield [int(x) for x in el["id"]]
    else:
        sys.exit(f"unknown HOW={how}")


n = 0
for ids in source():
    log.write(json.dumps({"step": n, "ids": ids}) + "\n")
    log.flush()
    n += 1
    if take and n == take:
        if leave == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        break
log.write(json.dumps({"read": feed.metrics()["batches"]}) + "\n")
log.close()
if os.environ.get("SAVE"):
    # A checkpoint where the loop ended: the feed's state as DataFeed.state() gives it.
    with open(os.environ["SAVE"], "w") as f:
        json.dump(feed.state(), f)
