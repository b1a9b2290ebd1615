"""Splitting one feed into per-epoch iterations (Keras and torch iterate a dataset per epoch).

Hand-out: a batch is consumed when it is yielded, not when it is read; the first batch of the
next epoch, read to find the epoch's end, is not, and comes again in a resumed run if the
trainer stops there.

Batch lifetime: nothing here keeps a batch once it was yielded. A batch views ring memory, and
the ring frees space in order, so one batch kept for a whole epoch would pin everything after
it; only the first batch of the next epoch is held over, between two iterations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from hydrofeed._native import Batch
from hydrofeed.feed import DataFeed


class EpochIterator:
    """Yields the batches of one feed epoch per call of :meth:`epoch`.

    The first batch of the next epoch is held over, so nothing is lost between epochs; once the
    feed ended, :meth:`epoch` yields nothing.
    """

    def __init__(
        self,
        feed: DataFeed,
        per_epoch: bool = True,
        next: Callable[[], Any] | None = None,
        hand_out: bool = True,
    ) -> None:
        self.feed = feed
        self.per_epoch = per_epoch
        # Where batches come from: the feed's host batches (read without handing them out: the
        # first batch of the next epoch is read ahead), or its GPU staging
        # (DataFeed.device_feed(...).next).
        self._next: Callable[[], Any] = (
            next if next is not None else (lambda: feed.next(hand_out=False))
        )
        # Whether a batch is handed out (consumed) as it is yielded; tf.data hands its
        # elements out after its prefetch instead (hydrofeed.tf).
        self._hand_out = hand_out and next is None
        self._held: Batch | None = None
        self.epochs_started = 0
        # The feed epoch of the iteration under way (its first batch's), None before one.
        self.current: int | None = None

    def epoch(self) -> Iterator[Batch]:
        b = self._held if self._held is not None else self._next()
        self._held = None
        if b is None:
            return
        self.epochs_started += 1
        current = self.current = b.epoch
        while True:
            if self._hand_out:
                self.feed.hand_out(b)
            yield b
            # Drop the reference before waiting for the next batch: the generator's frame
            # would otherwise keep the previous batch (and its ring slot) alive.
            del b
            nxt = self._next()
            if nxt is None:
                return
            if self.per_epoch and nxt.epoch != current:
                self._held = nxt
                return
            b = nxt
