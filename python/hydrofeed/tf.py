"""``hydrofeed.tf``: a feed as a ``tf.data.Dataset`` (needs TensorFlow).

The element spec comes from the feed's Arrow schema, known before the first batch:

- primitive columns -> ``tf.TensorSpec((None,), dtype)``;
- fixed-size lists -> ``tf.TensorSpec((None, n, ...), dtype)`` (dense);
- variable lists -> ``tf.RaggedTensorSpec((None, None, ...), dtype, ragged_rank=1,
  row_splits_dtype=int32/int64)`` built from the ring's values + row_splits;
- strings / binary -> ``tf.TensorSpec((None,), tf.string)``.

Copies: ``tf.data.Dataset.from_generator`` copies each numpy array into a TF tensor once (TF owns
its tensor memory); numbers in ``docs/arch/feed.md``. Each iteration of the dataset is one feed
epoch, so ``model.fit(ds, epochs=E)`` matches ``hydrofeed serve --epochs E``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import tensorflow as tf

from hydrofeed._epochs import EpochIterator
from hydrofeed._native import Batch, Ragged
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


def _value(col: Any) -> Any:
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
) -> tf.data.Dataset:
    """A ``tf.data.Dataset`` of the feed's batches.

    Elements: a dict of all columns (default); with ``x``/``y``: ``(features, label)`` pairs for
    ``model.fit``, where ``x`` is one column name (a tensor) or several (a dict). ``batch_size``
    is checked against the size the feed asked for at attach. With ``per_epoch`` each iteration
    ends at a feed epoch boundary; otherwise one iteration reads the whole feed.
    """
    if batch_size is not None and feed._feed.batch_size not in (None, batch_size):
        raise ValueError(
            f"batch_size={batch_size}, but the feed asked for {feed._feed.batch_size} rows per "
            "batch at attach: pass batch_size to DataFeed"
        )
    schema: pa.Schema = feed._feed.wait_schema()
    specs = {f.name: spec_of(f) for f in schema}
    names = list(specs)

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

    def gen() -> Iterator[Any]:
        b: Batch
        for b in epochs.epoch():
            yield pick({k: _value(b[k]) for k in names})

    return tf.data.Dataset.from_generator(gen, output_signature=signature)
