"""``hydrofeed.jax``: a feed's batches as JAX arrays (needs jax).

jax is imported when :func:`batches` or :func:`dataset` is first called, so this module imports
without it. Each batch is a dict of column -> ``jax.Array`` made by ``jax.device_put`` on the
numpy views; ragged columns become ``(values, row_splits)`` pairs; strings stay ``pyarrow``
arrays. :func:`batches` reads the whole feed; :func:`dataset` is an iterable whose every
iteration is one feed epoch (as ``hydrofeed.torch.IterableDataset`` and ``hydrofeed.tf.dataset``).

Copies: on an accelerator, ``device_put`` copies the batch to the device (the numpy view, and
its ring slot, is let go once the transfer is done). On the CPU backend XLA wraps an aligned
host array without copying (every ring buffer is 64-byte aligned), so a ``jax.Array`` may view
ring memory: it holds the numpy view, and so its ring slot, until it is collected, and the feed
copies such held batches out of the ring when they pin too much of it (no warning: JAX holds
them, not the script). JAX arrays are immutable and XLA does not donate a buffer it does not
own, so nothing is ever written to ring memory. JAX's own dtype rule applies: without
``jax_enable_x64``, int64 and float64 columns become int32 and float32 (a copy).

GPU: with ``device`` a JAX GPU device, batches are staged by the feed itself (the ring
registered with the CUDA driver, one DMA per column; see :mod:`hydrofeed.gpu`) and taken by
``jax.dlpack.from_dlpack`` without a further copy, instead of ``device_put`` from pageable
memory. (A ``Sharding`` across several devices still goes through ``device_put``.)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from hydrofeed._epochs import EpochIterator
from hydrofeed._convert import column
from hydrofeed.feed import DataFeed

__all__ = ["Dataset", "batches", "dataset", "global_batches", "initialize", "to_jax"]


def _jax() -> Any:
    try:
        import jax
    except ImportError as e:
        raise ImportError(
            "hydrofeed.jax needs JAX: pip install 'jax[cpu]' (or a CUDA/TPU build; hydrofeed "
            "itself does not)"
        ) from e
    return jax


def _staging(feed: DataFeed, device: Any) -> Any:
    """The feed's GPU staging ``next`` when ``device`` is one JAX GPU device, else None."""
    if getattr(device, "platform", None) in ("gpu", "cuda"):
        return feed.device_feed(device).next
    return None


def to_jax(col: Any, device: Any = None) -> Any:
    """One column of a batch as JAX array(s) on ``device`` (a ``jax.Device`` or ``Sharding``;
    default: JAX's default device)."""
    jax = _jax()

    def one(a: np.ndarray[Any, Any]) -> Any:
        return jax.device_put(a, device)

    def gpu(t: Any) -> Any:
        from jax import dlpack

        return dlpack.from_dlpack(t)

    return column(col, one, cuda=gpu)  # pyarrow (strings, binary) unchanged


def batches(
    feed: DataFeed, batch_size: int | None = None, device: Any = None
) -> Iterator[dict[str, Any]]:
    """Every batch of the feed, all epochs, as dicts of column -> ``jax.Array``.

    ``batch_size`` is as in :meth:`hydrofeed.DataFeed.batches`; ``device`` as in
    :func:`to_jax`. The generator keeps no batch once it was yielded.
    """
    _jax()
    # JAX holds the arrays it made from ring memory: copying them out of the ring when they
    # pin too much of it needs no warning to the script.
    feed._feed.warn_pressure = False
    if batch_size is not None:
        feed._ask_batch_size(batch_size)

    nxt = _staging(feed, device) or feed.next

    def gen() -> Iterator[dict[str, Any]]:
        while (b := nxt()) is not None:
            out = {k: to_jax(b[k], device) for k in b.keys()}
            # Hold nothing while waiting for the next batch (only the arrays may keep one).
            del b
            yield out
            del out

    return gen()


class Dataset:
    """The feed as an iterable of JAX batches; each iteration is one feed epoch (one iteration
    reads the whole feed with ``per_epoch=False``). Once the feed ended, an iteration yields
    nothing. Made by :func:`dataset`."""

    def __init__(self, feed: DataFeed, device: Any = None, per_epoch: bool = True) -> None:
        _jax()
        self.feed = feed
        self.device = device
        self._epochs = EpochIterator(feed, per_epoch=per_epoch, next=_staging(feed, device))
        feed._feed.warn_pressure = False  # as in batches()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for b in self._epochs.epoch():
            out = {k: to_jax(b[k], self.device) for k in b.keys()}
            del b
            yield out
            del out


def dataset(
    feed: DataFeed, batch_size: int | None = None, device: Any = None, per_epoch: bool = True
) -> Dataset:
    """The feed as a :class:`Dataset`: ``for epoch in range(E): for batch in ds: ...`` reads
    ``hydrofeed launch --epochs E`` epoch by epoch. ``batch_size`` is told to the feeder before
    the first batch (as :meth:`hydrofeed.DataFeed.batches`); ``device`` as in :func:`to_jax`."""
    if batch_size is not None:
        feed._ask_batch_size(batch_size)
    return Dataset(feed, device=device, per_epoch=per_epoch)


def initialize(**kwargs: Any) -> None:
    """``jax.distributed.initialize`` with the coordinates ``hydrofeed launch`` gives each trainer
    (``JAX_COORDINATOR_ADDRESS``, ``JAX_NUM_PROCESSES``, ``JAX_PROCESS_ID``; process 0 runs the
    coordinator service). On the CPU backend it selects the gloo collectives, so that jitted
    computations over arrays spanning the processes run. ``kwargs`` go to
    ``jax.distributed.initialize`` (``local_device_ids``, ...)."""
    jax = _jax()
    addr = os.environ.get("JAX_COORDINATOR_ADDRESS")
    if not addr:
        raise RuntimeError(
            "hydrofeed.jax.initialize(): JAX_COORDINATOR_ADDRESS is not set; run the trainer "
            "under hydrofeed launch (it sets it, JAX_NUM_PROCESSES and JAX_PROCESS_ID), or call "
            "jax.distributed.initialize yourself"
        )
    try:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    except (AttributeError, KeyError, ValueError):
        pass  # an older jax without CPU collectives: accelerators still work
    jax.distributed.initialize(
        coordinator_address=addr,
        num_processes=int(os.environ.get("JAX_NUM_PROCESSES", "1")),
        process_id=int(os.environ.get("JAX_PROCESS_ID", "0")),
        **kwargs,
    )


def global_batches(
    feed: DataFeed, sharding: Any, batch_size: int | None = None
) -> Iterator[dict[str, Any]]:
    """Every batch of the feed as one global ``jax.Array`` per dense column, laid out by
    ``sharding`` (a ``NamedSharding`` over a mesh of every process's devices, say):
    ``jax.make_array_from_process_local_data`` places this process's rows (its rank's share)
    on its devices, so the global batch is ``batch_size x processes`` rows. Every process must
    iterate in step (the coordinator gives every rank the same number of steps). Ragged and
    string columns stay per process, as in :func:`batches`.
    """
    jax = _jax()
    feed._feed.warn_pressure = False  # as in batches()
    if batch_size is not None:
        feed._ask_batch_size(batch_size)
    while (b := feed.next()) is not None:
        out: dict[str, Any] = {}
        for k in b.keys():
            col = b[k]
            out[k] = (
                jax.make_array_from_process_local_data(sharding, col)
                if isinstance(col, np.ndarray)
                else col
            )
        del b
        yield out
        del out
