"""A trainer for test_resume_steps.py: reads the feed one way (``HOW``) and records, per epoch
of the loop, the ids of each batch in ``OUT/rank-<r>.jsonl``, with the feed's
``steps_per_epoch()``, ``initial_epoch()`` and ``initial_step()`` first.

HOW: ``batches`` (``feed.batches()``), ``tf`` (``hydrofeed.tf.dataset``, one iteration per
epoch), ``torch`` (``hydrofeed.torch.IterableDataset`` through a ``DataLoader``), ``keras``
(tf-keras ``model.fit`` with ``hydrofeed.tf.BackupAndRestore(save_freq=SAVE_FREQ)`` in
``BACKUP``; ``KILL_AT`` "epoch:step": SIGKILL itself at the end of that step).
TAKE: take that many batches, then return (``batches`` only). EPOCHS: the feed's epochs.
"""

import json
import os
import signal

import hydrofeed

rank = int(os.environ["HYDROFEED_RANK"])
how = os.environ.get("HOW", "batches")
take = int(os.environ.get("TAKE", "0"))
batch = int(os.environ["BATCH"])
epochs = int(os.environ["HYDROFEED_EPOCHS"])
log = open(os.path.join(os.environ["OUT"], f"rank-{rank}.jsonl"), "w")


def write(rec):
    log.write(json.dumps(rec) + "\n")
    log.flush()


feed = hydrofeed.DataFeed(batch_size=batch)
# A build without initial_epoch()/initial_step() records None (and starts at epoch 0).
first = feed.initial_epoch() if hasattr(feed, "initial_epoch") else 0
write({"steps_per_epoch": feed.steps_per_epoch(), "initial_epoch": first,
       "initial_step": feed.initial_step() if hasattr(feed, "initial_step") else None})

if how == "batches":
    for n, b in enumerate(feed.batches()):
        write({"epoch": b.epoch, "ids": [int(x) for x in b["id"]]})
        if take and n + 1 == take:
            break
elif how == "tf":
    import hydrofeed.tf

    ds = hydrofeed.tf.dataset(feed, batch)
    write({"cardinality": int(ds.cardinality()), "len": len(ds)})
    for e in range(first, epochs):
        for el in ds:
            write({"epoch": e, "ids": [int(x) for x in el["id"].numpy()]})
elif how == "torch":
    import torch.utils.data

    import hydrofeed.torch

    dl = torch.utils.data.DataLoader(hydrofeed.torch.IterableDataset(feed), batch_size=None)
    for e in range(first, epochs):
        for el in dl:
            write({"epoch": e, "ids": [int(x) for x in el["id"]]})
elif how == "keras":
    import tensorflow as tf

    import hydrofeed.tf

    keras = tf.keras
    seen = []

    class Model(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(1)

        def call(self, x):
            return self.dense(tf.reshape(x, (-1, 1)))

        def train_step(self, data):
            feats, y = data
            seen.append([int(i) for i in feats["id"].numpy()])
            return super().train_step((feats["x"], y))

    class Log(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.epoch = epoch

        def on_train_batch_end(self, step, logs=None):
            write({"epoch": int(self.epoch), "step": int(step), "ids": seen.pop()})
            if os.environ.get("KILL_AT") == f"{self.epoch}:{step}":
                os.kill(os.getpid(), signal.SIGKILL)

    model = Model()
    model(tf.zeros((1,)))
    model.compile(optimizer="sgd", loss="mse", run_eagerly=True)
    ds = hydrofeed.tf.dataset(feed, batch, x=["id", "x"], y="y")
    backup, freq = os.environ["BACKUP"], int(os.environ["SAVE_FREQ"])
    if hasattr(hydrofeed.tf, "BackupAndRestore"):
        cb = hydrofeed.tf.BackupAndRestore(feed, backup, save_freq=freq)
    else:  # what a script does without it: the feed's state saved with each backup
        class Backup(keras.callbacks.BackupAndRestore):
            def _backup(self, epoch, batch=0):
                super()._backup(epoch, batch)
                hydrofeed.save_state(feed.state(), os.path.join(backup, "feed_state.json"))

        cb = Backup(backup, save_freq=freq)
    # The backup's callback first: its on_epoch_begin/on_train_batch_end run before the kill.
    h = model.fit(ds, epochs=epochs, callbacks=[cb, Log()], verbose=0)
    write({"fit_epochs": len(h.history["loss"])})
else:
    raise SystemExit(f"unknown HOW={how}")
log.close()
