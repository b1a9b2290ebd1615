"""``hydrofeed.torch``: a feed as a ``torch.utils.data.IterableDataset`` (needs torch).

torch is imported when :func:`IterableDataset` is first called, so this module imports without
it. Columns become tensors; ragged columns become ``(values, row_splits)`` tensor pairs;
strings stay ``pyarrow`` arrays. Each iteration is one feed epoch. Use it with
``DataLoader(ds, batch_size=None)``: batches are already made by the feeder, and one worker
(``num_workers=0``): a ``DataFeed`` cannot cross a fork, and the feeder already reads and
batches in its own process.

Copies: torch has no read-only tensors. It takes numpy's read-only DLPack flag and hands out a
writeable tensor, so a view of the ring would let an in-place op (``x.div_(255)``) write into
ring memory, and crash (SIGSEGV) on a batch the feed copied out of the ring under pressure
(those pages are read-only). The tensors are therefore copies by default (one ``memcpy`` per
column, and they hold nothing of the ring). ``copy=False`` gives views through DLPack, no
copy: then never write to them; a kept view pins its ring slot until the feed copies it out.

GPU: ``IterableDataset(feed, device="cuda:0")`` stages each batch into GPU memory (the ring is
registered with the driver, one DMA per column, the copy of the next batch overlapping the step
on this one; see :mod:`hydrofeed.gpu`) and yields CUDA tensors made by ``torch.from_dlpack``
without a further copy, ordered on torch's current stream. No ``.to("cuda")`` or
``pin_memory`` needed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from hydrofeed import images
from hydrofeed._epochs import EpochIterator
from hydrofeed._convert import column
from hydrofeed.feed import DataFeed

__all__ = ["IterableDataset", "to_torch"]


def to_torch(col: Any, copy: bool = True) -> Any:
    """One column of a batch as torch tensor(s): copies (default), or with ``copy=False``
    views of the ring through DLPack where torch takes them (never write to those)."""
    import torch
    from torch.utils.dlpack import from_dlpack

    def one(a: np.ndarray[Any, Any]) -> Any:
        if not copy:
            try:
                return from_dlpack(a)
            except (BufferError, TypeError, RuntimeError):
                pass  # Older torch cannot take read-only arrays through DLPack: copy.
        return torch.from_numpy(np.array(a))

    # torch passes its current stream to a GPU column's __dlpack__: ordered after the copy
    return column(col, one, cuda=from_dlpack)


_cls: Any = None


_WORKERS = (
    "hydrofeed.torch.IterableDataset reads its DataFeed in the trainer process only: use "
    "DataLoader(ds, batch_size=None, num_workers=0) (the feeder already reads and batches in "
    "its own process)"
)


def IterableDataset(  # noqa: N802 (a class to users)
    feed: DataFeed, per_epoch: bool = True, copy: bool = True, device: Any = None
) -> Any:
    """A ``torch.utils.data.IterableDataset`` yielding dicts of column -> tensor.

    ``copy=False``: tensors view ring memory (no copy); treat them as read-only.
    ``device="cuda:N"`` (or a ``torch.device``): CUDA tensors, staged by the feed (see the
    module's docs), image columns sent with ``gpu`` decoded there (:mod:`hydrofeed.images`);
    ``hydrofeed.NoCudaDeviceError`` without a GPU."""
    global _cls
    try:
        import torch.utils.data
    except ImportError as e:
        raise ImportError(
            "hydrofeed.torch needs PyTorch: pip install torch (hydrofeed itself does not)"
        ) from e
    if _cls is None:

        class _FeedDataset(torch.utils.data.IterableDataset[dict[str, Any]]):  # type: ignore[misc, unused-ignore]
            def __init__(self, feed: DataFeed, per_epoch: bool, copy: bool, device: Any) -> None:
                super().__init__()
                dev = feed.device_feed(device) if device is not None else None
                self._epochs = EpochIterator(feed, per_epoch=per_epoch,
                                             next=dev.next if dev is not None else None)
                self._feed = feed
                self._device = dev.device if dev is not None else None
                self._copy = copy
                # With copy=False torch holds tensors made from ring memory; copying them out
                # of the ring when they pin too much of it needs no warning to the script.
                feed._feed.warn_pressure = False

            def __iter__(self) -> Iterator[dict[str, Any]]:
                if torch.utils.data.get_worker_info() is not None:
                    raise RuntimeError(_WORKERS)  # a forked DataLoader worker
                gpu_images: bool | None = None
                for batch in self._epochs.epoch():
                    b: Any = batch
                    if self._device is not None:
                        # JPEGs sent for the GPU (an image spec with gpu) decoded there.
                        if gpu_images is None:
                            gpu_images = bool(images.columns(self._feed.schema))
                        if gpu_images:
                            b = images.decode(batch, self._feed.schema, self._device)
                    yield {k: to_torch(b[k], self._copy) for k in b.keys()}

            def __reduce__(self) -> Any:
                # A DataLoader worker under spawn/forkserver pickles the dataset.
                raise TypeError(_WORKERS)

        _cls = _FeedDataset
    return _cls(feed, per_epoch, copy, device)
