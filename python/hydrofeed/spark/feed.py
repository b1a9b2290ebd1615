"""The ``DataFeed`` of a Spark-fed trainer (InputMode.SPARK), TFoS's ``TFNode.DataFeed``.

:class:`SparkDataFeed` is a :class:`hydrofeed.DataFeed`: the same ``next_batch`` (the one
cutter), ``batches``, ``batch_results``, ``terminate``, ``state`` and ``metrics``; this module
says only how its batches are received and what its rows look like. It reads from a hub
(:mod:`hydrofeed.spark.hub`): anything with ``get(timeout) -> Item | None``,
``ack(conn_id, rows)``, ``send_results(conn_id, objs)`` and ``terminate()``. A ``files`` item
(``TFCluster.train_files``) switches it to the shared-memory ring of this node's feeder until
that feed's end; then it goes back to the hub (more ``train()``/``train_files()``, or the end
of feed).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
import pyarrow as pa

from hydrofeed._tfos import BOUNDARY, END, GOT, Cutter, Handed, Part
from hydrofeed.exceptions import HydrofeedError
from hydrofeed.feed import DataFeed
from hydrofeed.spark import rows as _rows

logger = logging.getLogger(__name__)

_POLL_S = 0.1


@dataclass
class _Fed:
    """Where a trainer's time went on the rows Spark's tasks fed it (``train(rdd|df)``): the
    figures of the summary line at the end of the feed (file mode's ring feed prints its own)."""

    start: float | None = None  # the first ask for rows
    first: float | None = None  # the first batch
    first_rows: int = 0  # rows of the first batch
    waited: float = 0.0  # in the hub's queue, after the first batch
    unpickled: float = 0.0  # making objects of pickled rows (in the hub's get, not waiting)
    rows: int = 0
    steps: int = 0
    bytes: int = 0
    said: bool = False


class SparkDataFeed(DataFeed):
    """``next_batch(n)`` -> list of rows (or dict of numpy columns with ``input_mapping``),
    ``should_stop()``, ``batch_results(results)``, ``terminate()`` -- TFoS's methods and meaning.

    A :class:`hydrofeed.DataFeed` fed by Spark's tasks: what reads a feeder's ring (``next()``,
    ``hand_out()``, ``device_feed()``, ``steps_per_epoch()``, ``feeder_pid``) works while a
    file feed (``TFCluster.train_files``) is on and says so by name otherwise; ``metrics()``
    counts what Spark's tasks fed.

    Blocking waits poll every 100 ms so Ctrl-C and the supervisor's SIGTERM are honoured; the
    wait for data ends with the end-of-feed marker that ``TFCluster.shutdown()`` sends (or the
    trainer is stopped when the driver goes away), so it never waits forever.
    """

    def __init__(  # noqa: PLW0231 - no feeder to attach to: DataFeed.__init__ dials one
        self, hub: Any, train_mode: bool = True, input_mapping: dict[str, str] | None = None
    ) -> None:
        if hub is None:
            raise RuntimeError(
                "this node has no data feed: get_data_feed() is only available on worker/chief nodes "
                "of a cluster started with input_mode=InputMode.SPARK"
            )
        self._hub = hub
        # Rows as objects, or numpy columns: feeding tasks send what this feed takes.
        hub.wants_objects = input_mapping is None
        self.train_mode = train_mode
        self.input_mapping = input_mapping
        self.input_tensors = [t for _, t in sorted(input_mapping.items())] if input_mapping else None
        self._stop = False
        self._cut = Cutter()
        self._pending: deque[list[int]] = deque()  # [conn_id, rows awaiting results] (inference)
        self.rows_delivered = 0
        # Numpy columns of the received batch the last cut came from, converted once per batch
        # instead of once per next_batch.
        self._np_batch: pa.RecordBatch | None = None
        self._np_cols: list[Any] = []
        self._ring: DataFeed | None = None  # this node's feeder (file mode)
        self._last_ring: DataFeed | None = None
        self._fed = _Fed()

    @property
    def done_feeding(self) -> bool:
        """TFoS's attribute: the end-of-feed marker was seen (or ``terminate()`` called)."""
        return self._stop

    # -- TFoS API
    def next_batch(self, batch_size: int) -> Any:
        """Up to ``batch_size`` rows; fewer at end of feed (and, for inference, at the end of a
        partition, so results can flow back while Spark schedules the next one)."""
        if self.input_tensors is not None and self._ring is not None and self._cut.rows == 0:
            cols = self._ring_columns(batch_size)
            if cols is not None:
                return cols
        # Rows convert per received batch, with its own types (a partition's), not glued.
        return self._convert(self._parts(batch_size, glue=False))

    def _parts(self, batch_size: int, glue: bool = True) -> list[Part]:
        """:meth:`DataFeed._parts`, counted: rows delivered, and a step where Spark's tasks fed
        any of them."""
        fed = self._fed.rows
        self._hub.taking = True  # frames of pickled rows are unpickled in this thread meanwhile
        try:
            parts = super()._parts(batch_size, glue)
        finally:
            self._hub.taking = False
        self.rows_delivered += sum(p.batch.num_rows for p in parts)
        self._fed.steps += self._fed.rows > fed
        return parts

    def batch_results(self, results: Any) -> None:
        """Returns one result per row of the previous ``next_batch`` (inference), in order."""
        results = list(results)
        i = 0
        while i < len(results):
            if not self._pending:
                raise ValueError(f"batch_results() got {len(results)} results but only {i} rows are waiting for one")
            entry = self._pending[0]
            k = min(entry[1], len(results) - i)
            self._hub.send_results(entry[0], results[i : i + k])
            entry[1] -= k
            i += k
            if entry[1] == 0:
                self._pending.popleft()

    def terminate(self) -> None:
        """Ignore the rest of the data (partitions still scheduled by Spark are skipped; a file
        feed is read to its end and dropped, so the other ranks' steps still complete)."""
        logger.info("terminate() invoked")
        self._cut.clear()
        self._hub.terminate()
        if self._ring is not None:
            ring, self._ring = self._ring, None
            threading.Thread(target=_drain, args=(ring,), name="hydrofeed-ring-drain", daemon=True).start()

    def finish_files(self) -> None:
        """Reads an active file feed to its end, dropping the rows (``map_fun`` returned): its
        last batches count as consumed, so the coordinator can finish and ``train_files``
        returns."""
        if self._ring is not None:
            ring, self._ring = self._ring, None
            self._cut.clear()
            _drain(ring)
            self._last_ring = ring

    def state(self, timeout: float = 30.0) -> dict[str, Any]:
        """File mode: the coordinator's resumable state (see :meth:`hydrofeed.DataFeed.state`);
        pass it to ``TFCluster.train_files(resume=...)``."""
        ring = self._files
        if ring is None:
            raise RuntimeError("state() needs a file feed (TFCluster.train_files); Spark-fed RDDs have no resumable position")
        return ring.state(timeout)

    # -- fast path
    def batches(self, batch_size: int | None = None, device: Any = None) -> Iterator[Any]:
        """Yields dicts of numpy columns (by column name) of ``batch_size`` rows until end of
        feed (fewer at its end). ``device``: the file feed's batches staged on a GPU, as
        :meth:`hydrofeed.DataFeed.batches` does (needs a file feed)."""
        if device is not None:
            yield from self._file_ring("batches(device=...)").batches(batch_size, device)
            return
        if batch_size is None:
            raise ValueError("batches() of a Spark-fed DataFeed needs batch_size: Spark's tasks send the rows of their partitions")
        self._hub.wants_objects = False
        while not self._stop:
            for p in self._parts(batch_size):
                rb = p.batch if p.objs is None else _rows.rows_to_batch(p.objs)
                yield {
                    name: _rows.column_to_numpy(rb.column(i), rb.schema.field(i))
                    for i, name in enumerate(rb.schema.names)
                }

    # -- what reads a feeder's ring: the file feed's, while one is on
    @property
    def _files(self) -> DataFeed | None:
        """The file feed on now, else the last one (its state and metrics stay readable)."""
        return self._ring or self._last_ring

    def _file_ring(self, what: str) -> DataFeed:
        ring = self._files
        if ring is None:
            raise HydrofeedError(
                f"{what} reads this node's feeder, which a Spark-fed DataFeed has only while a file feed "
                "(TFCluster.train_files) is on, from its first batch: rows fed by Spark's tasks come "
                "through next_batch() and batches()"
            )
        return ring

    def next(self, timeout: float | None = None, hand_out: bool = True) -> Any:
        """The file feed's next ring batch (:meth:`hydrofeed.DataFeed.next`)."""
        return self._file_ring("next()").next(timeout, hand_out)

    def hand_out(self, batch: Any) -> None:
        """:meth:`hydrofeed.DataFeed.hand_out` on the file feed."""
        self._file_ring("hand_out()").hand_out(batch)

    def device_feed(self, device: Any = "cuda") -> Any:
        """:meth:`hydrofeed.DataFeed.device_feed` of the file feed."""
        return self._file_ring("device_feed()").device_feed(device)

    def steps_per_epoch(self, timeout: float = 30.0) -> int | None:
        """:meth:`hydrofeed.DataFeed.steps_per_epoch` of the file feed."""
        return self._file_ring("steps_per_epoch()").steps_per_epoch(timeout)

    def initial_epoch(self, timeout: float = 30.0) -> int:
        """:meth:`hydrofeed.DataFeed.initial_epoch` of the file feed."""
        return self._file_ring("initial_epoch()").initial_epoch(timeout)

    def initial_step(self, timeout: float = 30.0) -> int | None:
        """:meth:`hydrofeed.DataFeed.initial_step` of the file feed."""
        return self._file_ring("initial_step()").initial_step(timeout)

    def flush_acks(self) -> None:
        """Acks the file feed's batches handed out so far (rows fed by Spark's tasks are
        acked to them as they are handed out)."""
        ring = self._files
        if ring is not None:
            ring.flush_acks()

    @property
    def schema(self) -> Any:
        """The file feed's ``pyarrow.Schema`` (``None`` without one: Spark's partitions may
        each have their own)."""
        ring = self._files
        return None if ring is None else ring.schema

    @property
    def results(self) -> list[Any]:
        """Not kept: the results of ``batch_results`` go back to the feeding task of their
        rows (``TFCluster.inference`` returns them)."""
        raise HydrofeedError("a Spark-fed DataFeed sends its results back to Spark: TFCluster.inference() returns them")

    @property
    def feeder_pid(self) -> int:
        """The file feed's feeder process id."""
        return self._file_ring("feeder_pid").feeder_pid

    def metrics(self) -> dict[str, Any]:
        """What Spark's tasks fed: rows, steps (batches with any of them), bytes; ``files``:
        the file feed's :meth:`hydrofeed.DataFeed.metrics`, while one is (or was) on."""
        f = self._fed
        m: dict[str, Any] = {"rows": f.rows, "steps": f.steps, "bytes": f.bytes, "rows_delivered": self.rows_delivered}
        rank = getattr(self._hub, "rank", None)
        if rank is not None:
            m["rank"] = rank
        ring = self._files
        if ring is not None:
            m["files"] = ring.metrics()
        return m

    # -- internals
    def _convert(self, parts: list[Part]) -> Any:
        """Rows shaped as they were fed (:mod:`hydrofeed.spark.rows`), or with
        ``input_mapping`` a dict of numpy columns."""
        if self.input_tensors is None:
            out: list[Any] = []
            for p in parts:
                if p.objs is not None:  # rows that came pickled: the objects themselves
                    out.extend(p.objs)
                    continue
                rb = p.batch
                objs = _rows.object_columns(rb.schema)
                need = {i for i in range(rb.num_columns) if i not in objs} if objs else None
                out.extend(_rows.batch_to_rows(rb, self._columns(p, need), objs))
            return out
        if not parts:
            return {t: [] for t in self.input_tensors}
        mapping = self.input_mapping or {}
        cols: list[dict[str, Any]] = []
        for p in parts:
            if p.objs is not None:
                cols.append(_rows.batch_to_columns(_rows.rows_to_batch(p.objs), mapping))
                continue
            idx = _rows.mapping_indices(p.batch.schema, mapping)
            cols.append(_rows.batch_to_columns(p.batch, mapping, self._columns(p, {j for _, j in idx})))
        return {t: _concat([c[t] for c in cols]) for t in self.input_tensors}

    def _columns(self, part: Part, need: Any = None) -> list[Any] | None:
        """Numpy columns of a part that is a slice of one received batch, sliced from that
        batch's columns (converted once); None: convert the part as a batch of its own."""
        whole = part.whole
        if whole is None:
            return None
        if self._np_batch is not whole:
            self._np_batch, self._np_cols = whole, _rows.numpy_columns(whole)
        rows = part.batch.num_rows
        cols = _rows.slice_columns(whole, self._np_cols, part.off, rows, need)
        if part.off + rows >= whole.num_rows:
            # its last rows: do not hold the batch (a ring slot in file mode) any longer
            self._np_batch, self._np_cols = None, []
        return cols

    def _ring_columns(self, batch_size: int) -> dict[str, Any] | None:
        """File mode, ``input_mapping``, a ring batch of exactly ``batch_size`` rows (the
        coordinator's batch size): its numpy columns as they lie in shared memory, no copy
        (each array holds its ring slot until collected). None: take the general path."""
        ring = self._ring
        if ring is None:
            return None
        b = ring.next()
        if b is None:  # this file feed ended; _receive goes back to the hub
            self._last_ring, self._ring = ring, None
            return None
        mapping = self.input_mapping or {}
        if b.num_rows == batch_size and all(c in b for c in mapping):
            out = {t: b[c] for c, t in mapping.items()}
            if all(isinstance(v, np.ndarray) for v in out.values()):
                self.rows_delivered += batch_size
                return out
        self._cut.push(b.to_arrow())  # the ring DataFeed acks its batches itself
        return None

    def _summary(self) -> None:
        """One line on stderr at the end of the feed, as ``hydrofeed launch`` and file mode
        print (``HYDROFEED_SUMMARY=0`` silences it); only where Spark's tasks fed rows."""
        if self._fed.said or not self._fed.rows or os.environ.get("HYDROFEED_SUMMARY") == "0":
            return
        from hydrofeed.feed import summary_line

        f = self._fed
        f.said = True
        line = summary_line(
            getattr(self._hub, "rank", 0),
            f.rows,
            f.steps,
            (f.start, f.first),
            f.rows - f.first_rows,
            f.waited,
            f"{f.bytes / 1e6:,.1f} MB fed by Spark's tasks"
            + (f"; {f.unpickled:.1f} s making objects of pickled rows" if f.unpickled else ""),
        )
        print(line, file=sys.stderr, flush=True)

    def _receive(self) -> int:
        """One batch into the cutter: from this node's feeder while a file feed is on, else
        from the hub (Spark's feeding tasks), whose other items say what comes next."""
        while True:
            if self._ring is not None:
                b = self._ring.next()
                if b is None:  # this file feed ended (every epoch); the hub says what is next
                    logger.info("file feed ended after %d rows", self._ring.metrics().get("rows", 0))
                    self._last_ring, self._ring = self._ring, None
                    continue
                self._cut.push(b.to_arrow())  # the ring DataFeed acks its batches itself
                return GOT
            # Rows already gathered go out in this call: consumed now, so a feeding task whose
            # last rows they are returns while this batch waits for the next partition's.
            self._cut.commit()
            t = time.monotonic()
            self._fed.start = self._fed.start or t
            item = self._hub.get(_POLL_S)
            if self._fed.first is not None:
                self._fed.waited += time.monotonic() - t - (item.unpickle_s if item is not None else 0.0)
            if item is None:
                continue
            self._fed.unpickled += item.unpickle_s
            if item.kind == "end_of_feed":
                logger.info("next_batch() got end of feed")
                self._stop = True
                self._summary()
                return END
            if item.kind == "end_partition":
                return BOUNDARY
            if item.kind == "error":
                raise RuntimeError(item.message)
            if item.kind == "files":
                from hydrofeed.spark.files import open_ring

                self._ring = open_ring(json.loads(item.message))
                continue
            if item.batch is None:
                continue
            if self._fed.first is None:
                self._fed.first, self._fed.first_rows = time.monotonic(), item.batch.num_rows
            self._fed.bytes += item.nbytes or item.batch.nbytes
            self._cut.push(item.batch, self._handed_fn(item.conn_id, item.infer), item.objs)
            return GOT

    def _handed_fn(self, conn: int, infer: bool) -> Handed:
        """What happens as rows of a feeding task's batch are handed out: acked to it (train),
        or waiting for their results (inference). Whether a row needs a result depends on
        how it was fed (``train()`` or ``inference()``), not on ``train_mode``: TFoS's own
        examples train with ``DataFeed(mgr, False)``."""

        def handed(rows: int, last: bool) -> None:
            self._fed.rows += rows
            if not infer:
                self._hub.ack(conn, rows)
            elif self._pending and self._pending[-1][0] == conn:
                self._pending[-1][1] += rows
            else:
                self._pending.append([conn, rows])

        return handed


def _drain(ring: DataFeed) -> None:
    try:
        while ring.next() is not None:
            pass
    except Exception as e:  # noqa: BLE001 - the feed is being abandoned anyway
        logger.warning("draining the file feed after terminate(): %s", e)


def _concat(parts: list[Any]) -> Any:
    if all(isinstance(p, np.ndarray) for p in parts):
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
    out: list[Any] = []
    for p in parts:
        out.extend(list(p))
    return out
