"""TensorFlowOnSpark's ``next_batch(n)``, written once for every feed.

A trainer's feed receives batches (the feeder's ring batches under ``hydrofeed launch`` and
Spark's file mode, a feeding task's batches under ``TFCluster.train(rdd|df)``) in the sizes
they were sent, and TFoS's loop asks for ``n`` rows at a time. :class:`hydrofeed.DataFeed`
pushes every received batch into a :class:`Cutter` over the extension's
:class:`~hydrofeed._native.Rebatcher` (the one cutter of the project, the same type that cuts
the feeder's batches) with what must happen as its rows are handed out (acked to the feeder,
to a feeding task, or waiting for inference results), and cuts ``n`` rows at a time; its
Spark-fed kind (:class:`hydrofeed.spark.SparkDataFeed`) says only how batches are received
and what rows look like.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hydrofeed._native import Rebatcher

#: What :meth:`hydrofeed.DataFeed._receive` found.
GOT, BOUNDARY, END = 0, 1, 2

#: Called as rows of a pushed batch are handed out: (rows, whether they were its last).
Handed = Callable[[int, bool], None]


@dataclass
class _Pushed:
    whole: Any  # the pyarrow.RecordBatch as received
    handed: Handed | None
    objs: list[Any] | None  # the Python rows `whole` stands for (see `Cutter.push`)
    off: int = 0  # rows of it taken out so far
    said: int = 0  # rows of it `handed` was called for (ahead of `off` after `commit`)


@dataclass
class Part:
    """Rows of one schema taken by one cut: ``batch``; where it is a slice of one received
    batch, that batch (``whole``) and the slice's first row (``off``), so numpy columns
    converted once per received batch can be sliced instead of converted again; ``objs``, the
    Python rows the cut took where batches stood for rows kept as objects."""

    batch: Any
    whole: Any = None
    off: int = 0
    objs: list[Any] | None = None


class Cutter:
    """Received batches in, cuts of ``n`` rows out (in parts of one schema each), each
    received batch's ``handed`` called with the rows handed out of it."""

    def __init__(self) -> None:
        self._r = Rebatcher()
        self._pushed: dict[int, _Pushed] = {}
        self._tag = 0

    @property
    def rows(self) -> int:
        """Rows received and not handed out."""
        return int(self._r.rows)

    def push(self, batch: Any, handed: Handed | None = None, objs: list[Any] | None = None) -> None:
        """Appends a received ``pyarrow.RecordBatch`` (an empty one is dropped). ``objs``: the
        batch stands for these Python rows (one per row of it, a batch without data): the
        cutter counts and cuts the batch, and each part carries the rows it took."""
        if batch.num_rows == 0:
            return
        self._tag += 1
        self._pushed[self._tag] = _Pushed(batch, handed, objs)
        self._r.push(batch, self._tag)

    def take(self, n: int, glue: bool = True) -> list[Part]:
        """Up to ``n`` rows (fewer when fewer are pending), in parts of one schema each.

        ``glue=False``: one part per received batch the cut takes rows of, never glued: each
        converts on its own, with the types of its own batch (a Spark partition's: a column
        with nulls in one partition and none in the next stays as each was fed), from numpy
        columns converted once per received batch."""
        parts: list[Part] = []
        got = 0
        while got < n:
            want = n - got
            if not glue and self._pushed:
                front = next(iter(self._pushed.values()))
                want = min(want, front.whole.num_rows - front.off)
            cut = self._r.take(want)
            if cut is None:
                break
            batch, tags = cut
            first = None
            objs: list[Any] | None = None
            for tag, rows in tags:
                p = self._pushed[tag]
                first = first or (p, p.off)
                if p.objs is not None:
                    objs = (objs or []) + p.objs[p.off : p.off + rows]
                p.off += rows
                if p.off >= p.whole.num_rows:
                    del self._pushed[tag]
                self._say(p, p.off)
            if len(tags) == 1 and first is not None:
                parts.append(Part(batch, first[0].whole, first[1], objs))
            else:
                parts.append(Part(batch, objs=objs))
            got += batch.num_rows
        return parts

    def commit(self) -> None:
        """Calls ``handed`` now for every row pending, which the caller promises to take out
        in this cut: a Spark feeding task waits until its last rows are consumed, and the rows
        of a batch being gathered are (its task may return while the batch waits for rows of
        the next partition, as TFoS's queue takes them)."""
        for p in list(self._pushed.values()):
            self._say(p, p.whole.num_rows)

    @staticmethod
    def _say(p: _Pushed, upto: int) -> None:
        if upto > p.said:
            rows, p.said = upto - p.said, upto
            if p.handed is not None:
                p.handed(rows, upto >= p.whole.num_rows)

    def clear(self) -> None:
        """Drops every row not handed out (their ``handed`` is never called)."""
        self._r.clear()
        self._pushed.clear()
