"""``hydrofeed.tf``: a feed as a ``tf.data.Dataset`` (needs TensorFlow).

The element spec comes from the feed's Arrow schema, known before the first batch:

- primitive columns -> ``tf.TensorSpec((None,), dtype)``;
- fixed-size lists -> ``tf.TensorSpec((None, n, ...), dtype)`` (dense);
- variable lists -> ``tf.RaggedTensorSpec((None, None, ...), dtype, ragged_rank=1,
  row_splits_dtype=int32/int64)`` built from the ring's values + row_splits;
- strings / binary -> ``tf.TensorSpec((None,), tf.string)``.

Copies: TensorFlow wraps aligned numpy arrays without copying, so its tensors view ring memory
for as long as tf.data keeps them (prefetch buffers, the element in hand). The feed copies
batches the framework still holds out of the ring only when they pin more than half of it (no
warning here: the framework, not the script, holds them; ``feed.metrics()`` counts the copies).

Epochs: each iteration of the dataset is one feed epoch, so ``model.fit(ds, epochs=E)`` matches
``hydrofeed launch --epochs E``. Asking for more epochs than the feed has raises a
``HydrofeedError`` naming both counts at the first epoch boundary past the end, instead of
empty epochs with a loss of 0.

Resumed mid-epoch (``launch --resume`` of a state saved after 30 of 100 steps): the first
iteration has the epoch's remaining 70 batches, the next ones 100; the cardinality stays 100, the
whole epoch, which is what Keras expects with its ``initial_step``: ``BackupAndRestore`` (this
module's, which saves the feed's state with each backup) starts that epoch's step counter at
30 and takes 70 batches.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import tensorflow as tf

from hydrofeed._epochs import EpochIterator
from hydrofeed._convert import column
from hydrofeed._native import Batch, Ragged
from hydrofeed.exceptions import HydrofeedError
from hydrofeed.feed import DataFeed

__all__ = ["BackupAndRestore", "dataset", "distributed_dataset", "spec_of"]


def _dtype(t: pa.DataType) -> Any:
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t):
        return tf.string
    if pa.types.is_large_binary(t) or pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        return tf.string
    return tf.as_dtype(np.dtype(t.to_pandas_dtype()))


def spec_of(field: pa.Field) -> Any:
    """The TF spec of one column."""
    t = field.type
    inner: list[int] = []
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        v = t.value_type
        while pa.types.is_fixed_size_list(v):
            inner.append(v.list_size)
            v = v.value_type
        splits = tf.int32 if pa.types.is_list(t) else tf.int64
        return tf.RaggedTensorSpec(
            shape=(None, None, *inner), dtype=_dtype(v), ragged_rank=1, row_splits_dtype=splits
        )
    while pa.types.is_fixed_size_list(t):
        inner.append(t.list_size)
        t = t.value_type
    return tf.TensorSpec(shape=(None, *inner), dtype=_dtype(t))


def _value(col: Any, shape: tuple[int, ...] | None = None) -> Any:
    if shape is not None:
        a = col.to_numpy() if isinstance(col, Ragged) else np.asarray(col)
        return a.reshape((a.shape[0], *shape))
    return column(
        col,
        lambda a: a,
        ragged=lambda r: tf.RaggedTensor.from_row_splits(r.values, r.row_splits, validate=False),
        other=lambda c: np.array(c.to_pylist(), dtype=object),  # pyarrow (strings, binary)
    )


def dataset(
    feed: DataFeed,
    batch_size: int | None = None,
    x: str | Sequence[str] | None = None,
    y: str | None = None,
    per_epoch: bool = True,
    shapes: Mapping[str, Sequence[int]] | None = None,
    steps_per_epoch: int | None = None,
    prefetch: int = 2,
) -> tf.data.Dataset:
    """A ``tf.data.Dataset`` of the feed's batches.

    Hand-out: a batch is consumed (acked, in ``feed.state()`` and in ``launch --state-out``)
    when the dataset's iterator yields it, after the dataset's own read-ahead of ``prefetch``
    batches (0: none); batches read ahead and never taken come again in a resumed run. A
    ``.prefetch()`` added after this dataset runs its hand-out ahead too: give its depth here
    instead.

    Elements: a dict of all columns (default); with ``x``/``y``: ``(features, label)`` pairs for
    ``model.fit``, where ``x`` is one column name (a tensor) or several (a dict). ``batch_size``
    is checked against the size the feed asked for at attach. With ``per_epoch`` each iteration
    ends at a feed epoch boundary; otherwise one iteration reads the whole feed.

    ``shapes`` gives columns a dense per-row shape, e.g. ``{"image": (28, 28)}``: a variable
    list column whose rows all have that many values (Avro and ORC arrays) becomes a dense
    tensor, and a fixed-size one is reshaped; rows of another length raise ``ValueError``.

    ``steps_per_epoch`` (default: ``HYDROFEED_STEPS_PER_EPOCH`` when set, else
    ``feed.steps_per_epoch()``) is the number of batches in each epoch: the dataset's
    cardinality, so Keras shows progress, and an epoch of another length fails at its end
    instead of passing unnoticed. In a run resumed mid-epoch the cardinality stays the whole
    epoch's (``cardinality()``, ``len()``: what Keras' ``initial_step`` counts from), while the
    first iteration yields the ``steps_per_epoch - feed.initial_step()`` batches left of its
    epoch; hydrofeed checks every epoch's count itself there (``tf.data``'s own check, kept in
    every other run, would refuse the shorter epoch), and transformations after this dataset
    see an unknown cardinality.
    """
    if batch_size is not None:
        feed._ask_batch_size(batch_size)
    schema: pa.Schema = feed._feed.wait_schema()
    specs = {f.name: spec_of(f) for f in schema}
    names = list(specs)
    dense: dict[str, tuple[int, ...]] = {}
    for n, shp in (shapes or {}).items():
        if n not in specs:
            raise KeyError(f"shapes names no column {n!r}; the feed has {names}")
        dense[n] = tuple(int(d) for d in shp)
        specs[n] = tf.TensorSpec(shape=(None, *dense[n]), dtype=specs[n].dtype)

    if isinstance(x, str):
        xs: list[str] | str = x
    elif x is not None:
        xs = list(x)
    else:
        xs = [n for n in names if n != y]
    for n in ([xs] if isinstance(xs, str) else xs) + ([y] if y is not None else []):
        if n not in specs:
            raise KeyError(f"no column {n!r}; the feed has {names}")

    def pick(cols: dict[str, Any]) -> Any:
        if x is None and y is None:
            return cols
        feats = cols[xs] if isinstance(xs, str) else {k: cols[k] for k in xs}
        return (feats, cols[y]) if y is not None else feats

    signature = (pick(specs), tf.TensorSpec((), tf.int64))
    # Batches are handed out (consumed) after tf.data's prefetch, by the last stage below:
    # what tf.data read ahead and the trainer never took comes again in a resumed run.
    epochs = EpochIterator(feed, per_epoch=per_epoch, hand_out=False)
    # The framework holds the tensors it made from ring memory: a copy out of the ring when
    # they pin too much of it is the right answer there, not a warning to the script.
    feed._feed.warn_pressure = False
    calls = [0]

    # Set below for a run resumed mid-epoch: (resumed epoch, its batches, other epochs').
    counts: list[tuple[int, int, int]] = []

    def gen() -> Iterator[Any]:
        calls[0] += 1
        b: Batch
        n = 0
        for b in epochs.epoch():
            n += 1
            yield pick({k: _value(b[k], dense.get(k)) for k in names}), np.int64(b.ticket)
        if n and counts:
            first, left, whole = counts[0]
            want = left if epochs.current == first else whole
            if n != want:
                raise HydrofeedError(
                    f"epoch {epochs.current} of the feed was expected to contain {want} elements "
                    f"but contained {n} (steps_per_epoch={whole}; the run resumed in epoch "
                    f"{first} with {left} steps left)"
                )
        if n == 0 and per_epoch:
            done = epochs.epochs_started
            raise HydrofeedError(
                f"the trainer asked for epoch {calls[0]}, but the feed ended after {done} "
                f"epoch(s): give model.fit(epochs=...) and the feed (hydrofeed launch --epochs, "
                "DataFeed's feeder) the same number of epochs"
            )

    def hand(ticket: Any) -> Any:
        feed._feed.hand_out(int(ticket.numpy()))
        return np.int64(0)

    def handed(element: Any, ticket: Any) -> Any:
        done = tf.py_function(hand, [ticket], tf.int64)
        with tf.control_dependencies([done]):
            return tf.nest.map_structure(tf.identity, element)

    ds = tf.data.Dataset.from_generator(gen, output_signature=signature)
    if prefetch:
        ds = ds.prefetch(prefetch)
    ds = ds.map(handed)
    # No prefetch injected after the hand-out stage: it would count batches tf.data read ahead.
    opts = tf.data.Options()
    opts.experimental_optimization.inject_prefetch = False
    ds = ds.with_options(opts)
    if per_epoch:
        steps_per_epoch = _steps_per_epoch(feed, steps_per_epoch)
        if steps_per_epoch is not None:
            resumed = feed._resumed()
            if resumed is not None and resumed[1] != steps_per_epoch:
                # Resumed mid-epoch: the first epoch is shorter, the cardinality the whole one.
                counts.append((resumed[0], resumed[1], steps_per_epoch))
                return _sized(ds, steps_per_epoch)
            ds = ds.apply(tf.data.experimental.assert_cardinality(steps_per_epoch))
    return ds


def _sized(ds: tf.data.Dataset, n: int) -> tf.data.Dataset:
    """``ds`` reporting ``n`` as its cardinality (``cardinality()``, ``len()``, what Keras
    reads) without tf.data's count check, which would refuse the shorter epoch of a resumed
    run: the generator checks each epoch's count instead."""
    from tensorflow.python.data.ops import dataset_ops

    class _Sized(dataset_ops.UnaryUnchangedStructureDataset):  # type: ignore[misc]
        def __init__(self, inp: tf.data.Dataset) -> None:
            super().__init__(inp, inp._variant_tensor)

        def cardinality(self) -> Any:
            return tf.constant(n, dtype=tf.int64)

    return _Sized(ds)


def _steps_per_epoch(feed: DataFeed, given: int | None) -> int | None:
    """``given``, else ``HYDROFEED_STEPS_PER_EPOCH``, else what the coordinator says."""
    if given is not None:
        return given
    if os.environ.get("HYDROFEED_STEPS_PER_EPOCH"):
        return int(os.environ["HYDROFEED_STEPS_PER_EPOCH"])
    return feed.steps_per_epoch()


def distributed_dataset(
    strategy: Any,
    feed: DataFeed,
    batch_size: int | None = None,
    x: str | Sequence[str] | None = None,
    y: str | None = None,
    shapes: Mapping[str, Sequence[int]] | None = None,
    steps_per_epoch: int | None = None,
    global_batch_size: int | None = None,
) -> Any:
    """The feed as a dataset that ``strategy`` distributes, for ``model.fit`` under
    ``tf.distribute.MultiWorkerMirroredStrategy`` (``hydrofeed launch`` sets ``TF_CONFIG``)::

        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        ds = hf.tf.distributed_dataset(strategy, hf.DataFeed(), batch_size=64, x="image", y="label")
        with strategy.scope():
            model = ...; model.compile(...)
        model.fit(ds, epochs=E, steps_per_epoch=ds.steps_per_epoch)

    hydrofeed already gave each worker its own rows (every row once per epoch, every worker the
    same number of steps), so each worker's input pipeline is its own feed, taken as it is:
    ``strategy.distribute_datasets_from_function`` with auto-sharding off (sharding again would
    drop rows). **Batch sizes**: the feed's batch is one replica's batch; the global batch of a
    step is ``batch_size * strategy.num_replicas_in_sync``. Pass ``global_batch_size`` to have
    that checked. ``ds.steps_per_epoch`` is the steps of each whole epoch (give it to
    ``model.fit``: Keras cannot count a distributed dataset); ``None`` where the feed cannot
    say. In a run resumed mid-epoch the stream's first epoch has ``steps_per_epoch -
    ds.initial_step`` batches (``ds.initial_epoch``, ``ds.initial_step``: the feed's
    :meth:`~hydrofeed.DataFeed.initial_epoch` and :meth:`~hydrofeed.DataFeed.initial_step`);
    tf-keras takes that many when its ``BackupAndRestore`` resumes at the same step (this
    module's :func:`BackupAndRestore` saves the feed's state with each backup).

    **Epochs**: the dataset is one stream of every epoch the feed has, and ``model.fit`` takes
    ``steps_per_epoch`` batches of it per epoch; give ``fit`` the feed's epochs
    (``HYDROFEED_EPOCHS``, set by ``launch --epochs``). More epochs than the feed has end the
    training at the end of the feed ("Your input ran out of data"); fewer leave the rest unread
    and the other ranks' feeds are ended when a trainer exits.

    Keras 3 does not run ``model.fit`` under ``MultiWorkerMirroredStrategy``; use tf-keras
    (``pip install tf-keras``, ``TF_USE_LEGACY_KERAS=1`` before importing TensorFlow).
    """
    # One iterator over every epoch of the feed: Keras keeps a distributed dataset's iterator
    # across epochs when steps_per_epoch is given (it does not start a new one per epoch), and
    # takes steps_per_epoch batches from it in each.
    local = dataset(feed, batch_size=batch_size, x=x, y=y, shapes=shapes, per_epoch=False)
    steps_per_epoch = _steps_per_epoch(feed, steps_per_epoch)
    per_replica = batch_size or feed._feed.batch_size
    replicas = int(strategy.num_replicas_in_sync)
    if global_batch_size is not None:
        if per_replica is None or per_replica * replicas != global_batch_size:
            raise ValueError(
                f"global_batch_size={global_batch_size}, but each of the {replicas} replicas takes "
                f"batches of {per_replica or 'the feed' + chr(39) + 's'} rows from its feed: the "
                f"global batch is batch_size x num_replicas_in_sync"
            )
    opts = tf.data.Options()
    opts.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    local = local.with_options(opts)

    def fn(ctx: Any) -> Any:
        return local

    dist = strategy.distribute_datasets_from_function(fn)
    dist.steps_per_epoch = steps_per_epoch
    dist.initial_epoch = feed.initial_epoch()
    dist.initial_step = feed.initial_step()
    return dist


def BackupAndRestore(  # noqa: N802 (a class to users)
    feed: DataFeed,
    backup_dir: str,
    save_freq: int | str = "epoch",
    delete_checkpoint: bool = True,
    state_path: str | None = None,
) -> Any:
    """tf-keras' ``BackupAndRestore`` that saves the feed's state with each backup, so that a
    job killed mid-epoch resumes the model and the feed at the same step::

        cb = hf.tf.BackupAndRestore(feed, "ckpt/backup", save_freq=50)
        model.fit(hf.tf.dataset(feed, 64, x="x", y="y"), epochs=E, callbacks=[cb])
        # after a crash: hydrofeed launch --resume ckpt/backup/feed_state.json -- python train.py

    Each backup writes ``feed.state()`` (every batch Keras took so far, none it did not) to
    ``state_path`` (default ``<backup_dir>/feed_state.json``; rank 0 writes it, every rank acks)
    right after tf-keras' checkpoint. On restore tf-keras starts the epoch's step counter at
    its ``initial_step`` and takes ``steps_per_epoch - initial_step`` batches; the resumed feed's
    first epoch has exactly ``steps_per_epoch - feed.initial_step()``. At the start of ``fit``
    this callback checks that the two positions (epoch, step) agree and raises
    ``HydrofeedError`` naming both when they do not (a state file from elsewhere, or a crash
    between the two writes). Needs tf-keras (``TF_USE_LEGACY_KERAS=1``): Keras 3 restores a
    backup from the epoch's first step.
    """
    base = tf.keras.callbacks.BackupAndRestore
    if not base.__module__.startswith("tf_keras"):
        raise ValueError(
            "hydrofeed.tf.BackupAndRestore needs tf-keras (pip install tf-keras, "
            "TF_USE_LEGACY_KERAS=1 before importing TensorFlow): Keras 3 restores a backup from "
            "the first step of its epoch, which the resumed feed has passed"
        )
    path = state_path or os.path.join(backup_dir, "feed_state.json")

    class _FeedBackupAndRestore(base):  # type: ignore[misc, valid-type]
        def _backup(self, epoch: int, batch: int = 0) -> None:
            super()._backup(epoch, batch)
            state = feed.state()
            if int(os.environ.get("HYDROFEED_RANK", "0")) == 0:
                from hydrofeed._state import save_state

                os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
                save_state(state, path)

        def on_train_begin(self, logs: Any = None) -> None:
            super().on_train_begin(logs)
            steps = self.params.get("steps")
            if steps is None:
                return
            # tf-keras' own reading of its backup, as fit does it ("train": ModeKeys.TRAIN).
            keras = self._training_state.maybe_load_initial_counters_from_ckpt(steps, 0, "train")
            ours = (feed.initial_epoch(), feed.initial_step())
            # (0, 0): no backup, and fit's own initial_epoch is not ours to see; then only a
            # feed resumed mid-epoch is certain to disagree.
            if ours[1] is None or (tuple(keras) == (0, 0) and ours[1] == 0):
                return
            if tuple(keras) != ours:
                raise HydrofeedError(
                    f"tf-keras resumes at epoch {keras[0]} step {keras[1]} (its backup in "
                    f"{backup_dir}), the feed at epoch {ours[0]} step {ours[1]}: resume with the "
                    f"feed state saved with that backup (hydrofeed launch --resume {path})"
                )

        def on_train_end(self, logs: Any = None) -> None:
            super().on_train_end(logs)
            if self.delete_checkpoint and int(os.environ.get("HYDROFEED_RANK", "0")) == 0:
                try:
                    os.remove(path)
                except FileNotFoundError:
                    pass

    return _FeedBackupAndRestore(backup_dir, save_freq=save_freq, delete_checkpoint=delete_checkpoint)
