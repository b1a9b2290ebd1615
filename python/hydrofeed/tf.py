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
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import tensorflow as tf

from hydrofeed._epochs import EpochIterator
from hydrofeed._native import Batch, HydrofeedError, Ragged
from hydrofeed.feed import DataFeed

__all__ = ["dataset", "spec_of"]


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
    if isinstance(col, Ragged):
        return tf.RaggedTensor.from_row_splits(col.values, col.row_splits, validate=False)
    if isinstance(col, np.ndarray):
        return col
    # pyarrow (strings, binary)
    return np.array(col.to_pylist(), dtype=object)


def dataset(
    feed: DataFeed,
    batch_size: int | None = None,
    x: str | Sequence[str] | None = None,
    y: str | None = None,
    per_epoch: bool = True,
    shapes: Mapping[str, Sequence[int]] | None = None,
    steps_per_epoch: int | None = None,
) -> tf.data.Dataset:
    """A ``tf.data.Dataset`` of the feed's batches.

    Elements: a dict of all columns (default); with ``x``/``y``: ``(features, label)`` pairs for
    ``model.fit``, where ``x`` is one column name (a tensor) or several (a dict). ``batch_size``
    is checked against the size the feed asked for at attach. With ``per_epoch`` each iteration
    ends at a feed epoch boundary; otherwise one iteration reads the whole feed.

    ``shapes`` gives columns a dense per-row shape, e.g. ``{"image": (28, 28)}``: a variable
    list column whose rows all have that many values (Avro and ORC arrays) becomes a dense
    tensor, and a fixed-size one is reshaped; rows of another length raise ``ValueError``.

    ``steps_per_epoch`` (default: ``HYDROFEED_STEPS_PER_EPOCH`` when set) is the number of
    batches in each epoch: the dataset's cardinality, so Keras shows progress, and an epoch of
    another length fails at its end instead of passing unnoticed.
    """
    if batch_size is not None and feed._feed.batch_size not in (None, batch_size):
        raise ValueError(
            f"batch_size={batch_size}, but the feed asked for {feed._feed.batch_size} rows per "
            "batch at attach: pass batch_size to DataFeed"
        )
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

    signature = pick(specs)
    epochs = EpochIterator(feed, per_epoch=per_epoch)
    # The framework holds the tensors it made from ring memory: a copy out of the ring when
    # they pin too much of it is the right answer there, not a warning to the script.
    feed._feed.warn_pressure = False
    calls = [0]

    def gen() -> Iterator[Any]:
        calls[0] += 1
        b: Batch
        n = 0
        for b in epochs.epoch():
            n += 1
            yield pick({k: _value(b[k], dense.get(k)) for k in names})
        if n == 0 and per_epoch:
            done = epochs.epochs_started
            raise HydrofeedError(
                f"the trainer asked for epoch {calls[0]}, but the feed ended after {done} "
                f"epoch(s): give model.fit(epochs=...) and the feed (hydrofeed launch --epochs, "
                "DataFeed's feeder) the same number of epochs"
            )

    ds = tf.data.Dataset.from_generator(gen, output_signature=signature)
    if steps_per_epoch is None and os.environ.get("HYDROFEED_STEPS_PER_EPOCH"):
        steps_per_epoch = int(os.environ["HYDROFEED_STEPS_PER_EPOCH"])
    if steps_per_epoch is not None and per_epoch:
        ds = ds.apply(tf.data.experimental.assert_cardinality(steps_per_epoch))
    return ds
