"""Splitting one feed into per-epoch iterations (Keras and torch iterate a dataset per epoch)."""

from __future__ import annotations

from collections.abc import Iterator

from hydrofeed._native import Batch
from hydrofeed.feed import DataFeed


class EpochIterator:
    """Yields the batches of one feed epoch per call of :meth:`epoch`.

    The first batch of the next epoch is held over, so nothing is lost between epochs; once the
    feed ended, :meth:`epoch` yields nothing.
    """

    def __init__(self, feed: DataFeed, per_epoch: bool = True) -> None:
        self.feed = feed
        self.per_epoch = per_epoch
        self._held: Batch | None = None

    def epoch(self) -> Iterator[Batch]:
        first = self._held if self._held is not None else self.feed.next()
        self._held = None
        if first is None:
            return
        current = first.epoch
        yield first
        while True:
            b = self.feed.next()
            if b is None:
                return
            if self.per_epoch and b.epoch != current:
                self._held = b
                return
            yield b
