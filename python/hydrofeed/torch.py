"""``hydrofeed.torch``: a feed as a ``torch.utils.data.IterableDataset`` (needs torch).

torch is imported when :func:`IterableDataset` is first called, so this module imports without
it. Columns become tensors through DLPack (``torch.from_dlpack`` on the numpy views: no copy,
the tensor keeps the ring slot alive); ragged columns become ``(values, row_splits)`` tensor
pairs; strings stay ``pyarrow`` arrays. Each iteration is one feed epoch. Use it with
``DataLoader(ds, batch_size=None)``: batches are already made by the feeder, and one worker
(``num_workers=0``): a ``DataFeed`` cannot cross a fork.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hydrofeed._epochs import EpochIterator
from hydrofeed._native import Ragged
from hydrofeed.feed import DataFeed

__all__ = ["IterableDataset", "to_torch"]


def to_torch(col: Any) -> Any:
    """One column of a batch as torch tensor(s), without a copy where DLPack allows."""
    import torch

    def one(a: np.ndarray[Any, Any]) -> Any:
        try:
            return torch.from_dlpack(a)
        except (BufferError, TypeError, RuntimeError):
            # Older torch cannot take read-only arrays through DLPack: copy.
            return torch.from_numpy(np.array(a))

    if isinstance(col, Ragged):
        return one(col.values), one(col.row_splits)
    if isinstance(col, np.ndarray):
        return one(col)
    return col


_cls: Any = None


def IterableDataset(feed: DataFeed, per_epoch: bool = True) -> Any:  # noqa: N802 (a class to users)
    """A ``torch.utils.data.IterableDataset`` yielding dicts of column -> tensor."""
    global _cls
    try:
        import torch.utils.data
    except ImportError as e:
        raise ImportError(
            "hydrofeed.torch needs PyTorch: pip install torch (hydrofeed itself does not)"
        ) from e
    if _cls is None:

        class _FeedDataset(torch.utils.data.IterableDataset):  # type: ignore[misc, unused-ignore]
            def __init__(self, feed: DataFeed, per_epoch: bool) -> None:
                super().__init__()
                self._epochs = EpochIterator(feed, per_epoch=per_epoch)
                # torch holds the tensors it made from ring memory; copying them out of the
                # ring when they pin too much of it needs no warning to the script.
                feed._feed.warn_pressure = False

            def __iter__(self) -> Iterator[dict[str, Any]]:
                for b in self._epochs.epoch():
                    yield {k: to_torch(b[k]) for k in b.keys()}

        _cls = _FeedDataset
    return _cls(feed, per_epoch)
