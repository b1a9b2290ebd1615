"""``DataFeed``: the trainer's end of a feed.

A feeder (``hydrofeed serve``, or the feeder daemon a launcher starts) listens on a Unix
socket; ``DataFeed`` attaches to it, tells it the batch size, and reads batches out of a
shared-memory ring. ``batches()`` is the fast path (numpy views of ring memory, no copy);
``next_batch()`` / ``should_stop()`` / ``batch_results()`` / ``terminate()`` follow
TensorFlowOnSpark's ``TFNode.DataFeed`` so existing training loops run unchanged.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from hydrofeed import _tensorboard, images
from hydrofeed._native import SOCKET_ENV, Batch, Feed
from hydrofeed._tfos import BOUNDARY, END, GOT, Cutter, Part

__all__ = ["SOCKET_ENV", "REJOIN_ENV", "DataFeed"]

#: Seconds a trainer waits for a restarted feeder (``hydrofeed launch`` sets it).
REJOIN_ENV = "HYDROFEED_REJOIN_TIMEOUT"



def summary_line(
    rank: int,
    rows: int,
    steps: int,
    clocks: tuple[float | None, float | None],
    streamed: int,
    waited: float,
    through: str,
) -> str:
    """The line a rank prints at the end of its feed (under ``hydrofeed launch`` and Spark):
    ``clocks`` is (the first ask for a batch, the first batch), ``streamed`` the rows after the
    first batch, ``waited`` the seconds spent waiting for input after it, ``through`` what the
    data came through."""
    now = time.monotonic()
    start, first = clocks
    first = first if first is not None else now
    elapsed = now - first
    return (
        f"hydrofeed rank {rank}: {rows} rows, {steps} steps; first batch after "
        f"{first - (start or first):.2f} s, then {elapsed:.2f} s: "
        f"{streamed / elapsed if elapsed > 0 else 0:,.0f} rows/s; waited for input "
        f"{min(100.0, 100 * waited / elapsed) if elapsed > 0 else 0:.0f}% of the time; {through}"
    )

class DataFeed:
    """Batches from this node's feeder: the trainer's one feed API.

    Under Spark (``ctx.get_data_feed()``, ``TFNode.DataFeed(ctx.mgr)``) the feed is a
    :class:`hydrofeed.spark.SparkDataFeed`, a ``DataFeed`` whose batches come from Spark's
    feeding tasks (or, in file mode, from this node's feeder): the same ``next_batch``,
    ``batches``, ``batch_results``, ``terminate``, ``state`` and ``metrics``.

    Args:
        address: the feeder's socket; default: the ``HYDROFEED_FEED_SOCKET`` environment
            variable (set by ``hydrofeed launch``, the Spark integration, or by hand).
        batch_size: rows per batch the feeder sends (it rebatches to this size); without it,
            the size given to :meth:`batches` (told to the feeder before the first batch), else
            the job's (``hydrofeed launch --batch-size``) or the feeder's default.
        timeout: seconds any single wait may last before :class:`hydrofeed.FeedTimeoutError`.
        connect_timeout: seconds to wait for the feeder to come up.
        input_mapping: TFoS compatibility: ``{column: name}``; ``next_batch`` then returns a
            dict ``{name: array}`` instead of a list of rows.
        on_ring_pressure: what happens when batches this process still holds pin more than
            half of the ring (the ring frees space in order, so kept batches would stop the
            feeder): ``"copy"`` (default) copies them out of the ring once and warns once
            (:class:`hydrofeed.RingPressureWarning`); ``"raise"`` raises
            :class:`hydrofeed.RingExhaustedError` instead.
        rejoin_timeout: when the feeder dies, seconds to wait for a restarted one to take this
            trainer back (it reports the rows it read after its last ack, so none comes twice)
            instead of raising :class:`hydrofeed.PeerLostError`. Default: ``0`` (raise), or
            ``$HYDROFEED_REJOIN_TIMEOUT``, which ``hydrofeed launch`` sets: it restarts a
            feeder that was killed.

    Batch lifetime: a batch's arrays view ring memory until the last of them is collected.
    Keep :meth:`hydrofeed.Batch.copy` (or ``np.array(...)``) of data you mean to keep.

    A ``DataFeed`` belongs to the process that made it: using it in a ``fork()`` child raises
    :class:`hydrofeed.HydrofeedError` (make a new one there).
    """

    def __init__(
        self,
        address: str | None = None,
        batch_size: int | None = None,
        timeout: float = 600.0,
        connect_timeout: float = 60.0,
        input_mapping: Mapping[str, str] | None = None,
        on_ring_pressure: str = "copy",
        rejoin_timeout: float | None = None,
    ) -> None:
        if rejoin_timeout is None:
            rejoin_timeout = float(os.environ.get(REJOIN_ENV) or 0)
        if address is None:
            address = os.environ.get(SOCKET_ENV)
            if not address:
                raise ValueError(
                    f"no feeder address: pass DataFeed(address=...) or set {SOCKET_ENV} "
                    "(hydrofeed launch and the Spark integration set it)"
                )
        self.address = address
        self.input_mapping = dict(input_mapping) if input_mapping is not None else None
        self._feed = Feed(
            address,
            batch_size=batch_size,
            timeout=timeout,
            connect_timeout=connect_timeout,
            on_ring_pressure=on_ring_pressure,
            rejoin_timeout=rejoin_timeout,
        )
        # TFoS path: ring batches received and not yet handed out, cut by next_batch.
        self._cut = Cutter()
        # The job's batch size, once the coordinator said it (steps_per_epoch()).
        self._job_batch_size: int | None = None
        # (epoch, steps left) where a resumed run began, once asked (False: not asked yet).
        self._resumed_at: tuple[int, int] | None | bool = False
        self._stop = False
        self._results: list[Any] = []
        self._device: Any = None  # hydrofeed.gpu.DeviceFeed, once batches(device=...) ran
        self._device_t0 = 0.0
        # The summary's clocks: the first next() call, the first batch; the ring wait and
        # rows at the first batch.
        self._t_start: float | None = None
        self._t_first: float | None = None
        self._wait0 = 0.0
        self._rows0 = 0
        self._summarized = False
        # Every few seconds of feed time (never per batch): the GPU's utilisation for the
        # feeder's metrics, and on the chief the TensorBoard points. `_tick_due` is None while
        # there is nothing to do.
        self._tb_dir = os.environ.get(_tensorboard.TENSORBOARD_ENV) or None
        self._tb: _tensorboard.ScalarWriter | None = None
        self._tick_due: float | None = None
        self._last_point = (0.0, 0, 0.0)  # (monotonic time, rows, wait seconds) of the last point

    # -- fast path -------------------------------------------------------------------------

    def next(self, timeout: float | None = None, hand_out: bool = True) -> Batch | None:
        """The next batch, or ``None`` at end-of-feed.

        A batch is consumed (acked to the feeder, in :meth:`state` and in the state ``hydrofeed
        launch --state-out`` writes) once it is handed out to the trainer's code: when this
        returns it. With ``hand_out=False`` (an adapter that reads ahead) it is handed out by
        :meth:`hand_out`; a batch read and never handed out comes again in a resumed run."""
        b: Batch | None = self._take(lambda: self._feed.next(timeout, hand_out))
        return b

    def hand_out(self, batch: Batch | int) -> None:
        """Counts ``batch`` (or its ``ticket``), and every batch read before it, as handed to
        the trainer's code: consumed. Published in the ring's shared memory at once, so the
        feeder knows it without a message, even if this process is killed next. Any thread."""
        self._feed.hand_out(batch if isinstance(batch, int) else batch.ticket)

    def _take(self, fetch: Any) -> Any:
        """``fetch()`` (the next host or device batch), with the summary's clocks and the end of
        the feed kept in one place for both."""
        if self._t_start is None:
            self._t_start = time.monotonic()
        b = fetch()
        if b is None:
            self._stop = True
            self._end_metrics()
            self._summary()
        elif self._t_first is None:
            self._first_batch(len(b))
        elif self._tick_due is not None and time.monotonic() >= self._tick_due:
            self._tick()
        return b

    def _first_batch(self, rows: int) -> None:
        """The summary's clock starts at the first batch: the wait before it is start-up."""
        self._t_first = time.monotonic()
        self._wait0 = float(self._feed.metrics()["wait_seconds"])
        self._rows0 = rows
        self._last_point = (self._t_first, rows, 0.0)
        if self._tb_dir is not None or self._device is not None:
            self._tick_due = self._t_first + _tensorboard.every()

    def _waited(self, m: dict[str, Any]) -> float:
        """Seconds waited for input since the first batch: on the ring, and for GPU copies."""
        wait = float(m.get("wait_seconds", 0.0)) - self._wait0
        gpu = m.get("gpu")
        if gpu:
            wait += float(gpu["copy_wait_s"])
        return max(wait, 0.0)

    def _tick(self) -> None:
        """Every few seconds: the GPU's figures to the feeder (its Prometheus text), and the
        chief's TensorBoard points."""
        m = self.metrics()
        self._tick_due = time.monotonic() + _tensorboard.every()
        gpu = m.get("gpu")
        if gpu:
            u = gpu.get("utilization")
            util = int(u) if isinstance(u, int) and 0 <= u <= 100 else None
            self._feed.set_device_figures(float(gpu["copy_wait_s"]), util)
        if self._tb_dir is not None:
            self._point(m)

    def _point(self, m: dict[str, Any]) -> None:
        """One TensorBoard point per scalar at this step: rows/s and the share of the time
        waited for input since the last point, the GPU's utilisation."""
        now = time.monotonic()
        rows, wait = int(m.get("rows", 0)), self._waited(m)
        t0, rows0, wait0 = self._last_point
        dt = now - t0
        if dt <= 0:
            return
        values = {
            "feed/rows_per_s": max(rows - rows0, 0) / dt,
            "feed/wait_fraction": min(1.0, max(wait - wait0, 0.0) / dt),
        }
        gpu = m.get("gpu")
        if gpu and gpu.get("utilization") is not None:
            values["feed/gpu_utilization"] = float(gpu["utilization"])
        try:
            if self._tb is None and self._tb_dir is not None:
                self._tb = _tensorboard.ScalarWriter(self._tb_dir)
            if self._tb is not None:
                self._tb.scalars(int(m.get("batches", 0)), values)
        except (ImportError, OSError) as e:
            # Never the training's failure: say it once and stop writing.
            print(f"hydrofeed: no TensorBoard scalars ({_tensorboard.TENSORBOARD_ENV}={self._tb_dir}): {e}",
                  file=sys.stderr, flush=True)
            self._tb_dir = None
            return
        self._last_point = (now, rows, wait)

    def _end_metrics(self) -> None:
        """At the end of the feed (or of reading it): the last TensorBoard point, the file
        closed."""
        if self._tick_due is None:
            return
        self._tick_due = None
        if self._tb_dir is not None:
            self._point(self.metrics())
        if self._tb is not None:
            self._tb.close()
            self._tb = None

    def _summary(self) -> None:
        """One line at the end of the feed, under ``hydrofeed launch`` and Spark (where
        ``HYDROFEED_RANK`` is set; ``HYDROFEED_SUMMARY=0`` silences it): where this rank's time
        went."""
        if self._summarized or "HYDROFEED_RANK" not in os.environ:
            return
        self._summarized = True
        if os.environ.get("HYDROFEED_SUMMARY") == "0":
            return
        m = self.metrics()
        rows = int(m.get("rows", 0))
        gpu = m.get("gpu")
        line = summary_line(
            m["rank"],
            rows,
            int(m.get("batches", 0)),
            (self._t_start, self._t_first),
            max(rows - self._rows0, 0),
            self._waited(m),
            f"{int(m.get('bytes', 0)) / 1e6:,.1f} MB through the ring",
        )
        if gpu:
            util = gpu.get("utilization")
            line += f"; GPU {gpu['device']} ({gpu['path']} copies)"
            if util is not None:
                line += f", {util}% busy at the end"
        print(line, file=sys.stderr, flush=True)

    def batches(self, batch_size: int | None = None, device: Any = None) -> Iterator[Any]:
        """Yields batches until end-of-feed.

        Each :class:`hydrofeed.Batch` maps column names to read-only numpy arrays that view the
        ring memory (fixed-size lists are 2-D, variable lists :class:`hydrofeed.Ragged`,
        strings ``pyarrow`` arrays); an array keeps its ring slot alive until it is collected.
        Every numpy array also offers ``__dlpack__``, so ``torch.from_dlpack(batch["x"])`` and
        ``tf.experimental.dlpack`` take it without a copy. ``batch_size``, on a feed made
        without one, is told to the feeder before the first batch (it rebatches to it); it must
        match a size given to the constructor, and under ``hydrofeed launch --batch-size N`` it
        must be ``N`` (else the first batch raises, naming ``--batch-size``).

        ``device="cuda:N"`` (or a ``torch.device``, a JAX GPU device, an ordinal): batches are
        staged into that GPU's memory and yielded as :class:`hydrofeed.gpu.DeviceBatch` es of
        DLPack tensors (see :mod:`hydrofeed.gpu`); :class:`hydrofeed.NoCudaDeviceError` on a
        host without one. A feed whose images are decoded on the GPU (an image spec with
        ``gpu``) yields dicts instead, each such column a ``torch.uint8`` tensor
        ``(N, H, W, 3)`` on that device (:mod:`hydrofeed.images`).
        """
        if batch_size is not None:
            self._ask_batch_size(batch_size)
        if device is not None:
            dev = self.device_feed(device)
            gpu_images: bool | None = None
            while (d := self._take(dev.next)) is not None:
                if gpu_images is None:
                    gpu_images = bool(images.columns(self.schema))
                yield images.decode(d, self.schema, dev.device) if gpu_images else d
                del d
            return
        while True:
            b = self.next()
            if b is None:
                return
            yield b

    def device_feed(self, device: Any = "cuda") -> Any:
        """The :class:`hydrofeed.gpu.DeviceFeed` staging this feed's batches on ``device``
        (made at the first call, then the same one): ``next()`` returns the next
        :class:`hydrofeed.gpu.DeviceBatch` or ``None``."""
        from hydrofeed.gpu import DeviceFeed, cuda_ordinal

        ordinal = cuda_ordinal(device)
        if self._device is None:
            self._device = DeviceFeed(self._feed, ordinal)
            self._device_t0 = time.monotonic()
            if self._t_first is not None and self._tick_due is None:
                self._tick_due = self._device_t0 + _tensorboard.every()
        elif self._device.device != f"cuda:{ordinal}":
            raise ValueError(
                f"this DataFeed already stages its batches on {self._device.device}; "
                f"device={device!r} differs (one feed, one GPU)"
            )
        return self._device

    def __iter__(self) -> Iterator[Batch]:
        return self.batches()

    def _ask_batch_size(self, batch_size: int) -> None:
        """Tells the feeder the batch size before the first batch; afterwards checks it against
        the size the feed has (asked, or the job's as the coordinator said)."""
        if self._job_batch_size is not None and batch_size == self._job_batch_size:
            if self._feed.batch_size in (None, batch_size):
                return
        self._feed.ask_batch_size(batch_size)

    # -- TensorFlowOnSpark-compatible API --------------------------------------------------

    def _parts(self, batch_size: int, glue: bool = True) -> list[Part]:
        """Receives until ``batch_size`` rows are pending (or the feed or an inference
        partition ended), then cuts them (``glue``: see :meth:`hydrofeed._tfos.Cutter.take`)."""
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        while self._cut.rows < batch_size and not self._stop:
            got = self._receive()
            if got == END or (got == BOUNDARY and self._cut.rows):
                break
        return self._cut.take(batch_size, glue)

    def next_batch(self, batch_size: int) -> Any:
        """Up to ``batch_size`` rows (fewer only at the end of the feed, and, for inference, at
        the end of a partition, so results can flow back while Spark schedules the next one).

        Without ``input_mapping``: a list of rows. With ``input_mapping``: a dict ``{name:
        numpy array}`` (dense columns stacked, e.g. ``(n, 784)``). Returns an empty batch once
        the feed ended; :meth:`should_stop` then says so.
        """
        return self._convert(self._parts(batch_size))

    def should_stop(self) -> bool:
        """True once the feed ended (end-of-feed, ``terminate()``) and no rows are pending."""
        return self._stop and self._cut.rows == 0

    def _receive(self) -> int:
        """One ring batch into the cutter; handed out (consumed) once every one of its rows
        was returned by ``next_batch`` (a partly returned one comes again whole in a resumed
        run)."""
        b = self.next(hand_out=False)
        if b is None:
            return END
        ticket = b.ticket

        def handed(rows: int, last: bool) -> None:
            if last:
                self._feed.hand_out(ticket)

        self._cut.push(b.to_arrow(), handed)
        return GOT

    def _convert(self, parts: list[Part]) -> Any:
        """Rows as tuples of Python objects (as TFoS hands out), or with ``input_mapping`` a
        dict of numpy columns."""
        import pyarrow as pa

        schema = parts[0].batch.schema if parts else self._feed.schema
        if schema is None:
            return {} if self.input_mapping is not None else []
        table = pa.Table.from_batches([p.batch for p in parts], schema=schema)
        if self.input_mapping is not None:
            return {name: _column_numpy(table, col) for col, name in self.input_mapping.items()}
        cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
        return list(zip(*cols, strict=True))

    def batch_results(self, results: Sequence[Any]) -> None:
        """Hands back inference results for the rows just read (TFoS inference mode).

        The results are kept in :attr:`results`; the feeder is told how many arrived.
        """
        self._results.extend(results)
        self._feed.send_results(len(results))

    @property
    def results(self) -> list[Any]:
        """Results handed to :meth:`batch_results` so far."""
        return self._results

    def terminate(self) -> None:
        """Stops the feed: tells the feeder, closes the ring. Pending rows are dropped."""
        self._stop = True
        self._cut.clear()
        self._end_metrics()
        if self._device is not None:
            self._device.close()
        self._feed.close()

    def close(self) -> None:
        """:meth:`terminate`."""
        self.terminate()

    def __enter__(self) -> DataFeed:
        return self

    def __exit__(self, *exc: object) -> None:
        self.terminate()

    # -- introspection ---------------------------------------------------------------------

    @property
    def schema(self) -> Any:
        """The stream's ``pyarrow.Schema`` (``None`` until the first batch arrived)."""
        return self._feed.schema

    def state(self, timeout: float = 30.0) -> dict[str, Any]:
        """The job's resumable position: a small JSON-serialisable dict.

        Under ``hydrofeed launch`` (``HYDROFEED_COORDINATOR`` set): acks every batch handed
        out so far (returned by :meth:`next`, :meth:`batches`, :meth:`next_batch`, or yielded by
        an adapter; batches an adapter or tf.data read ahead are not), waits until the
        coordinator recorded them, and returns the coordinator's
        state (seed, epochs, batch size, completed steps, rows acked per open epoch). Save it
        with ``json.dump`` and pass it to ``hydrofeed launch --resume state.json`` (or
        ``HYDROFEED_RESUME``), with any number of workers: the new run hands out exactly the
        rows not acked yet. The state includes every batch this rank was handed; the other
        ranks' batches are in once they called ``state()`` too: at a checkpoint, call it on
        every rank after the same synchronous step, then save the one of rank 0 after a
        barrier (``tf.distribute`` checkpoints are such a barrier).

        Under the fixed order (``--order fixed``, the default) the state holds each rank's
        position in its stream, a few segments of about 80 bytes each: resumed with the same
        number of workers (every rank saved after the same step), every rank's stream goes on at
        exactly the next row it would have had; with another number, the rows not consumed yet
        are dealt again in equal shares, each once (docs/arch/order.md).

        Without a coordinator (``hydrofeed serve``): the position only (``epoch``, ``split``,
        ``rows`` delivered, ``done``); it cannot resume a feed.
        """
        addr = os.environ.get("HYDROFEED_COORDINATOR")
        if not addr:
            return dict(self._feed.state())
        import json

        self._feed.flush_acks()
        rows = int(self._feed.metrics()["rows_handed"])
        text = Feed.coordinator_state(
            addr,
            os.environ.get("HYDROFEED_TOKEN", ""),
            int(os.environ.get("HYDROFEED_RANK", "0")),
            rows,
            timeout,
        )
        return dict(json.loads(text))

    def steps_per_epoch(self, timeout: float = 30.0) -> int | None:
        """Batches this rank gets in each whole epoch, under ``hydrofeed launch`` (every rank
        gets the same number): asked of the coordinator once the job's batch size is settled
        (the first call waits for the feed's schema). In a run resumed mid-epoch this is still
        the whole epoch's count (what Keras' ``steps_per_epoch`` and ``BackupAndRestore``'s
        step counter expect); that first epoch has ``steps_per_epoch() - initial_step()``.
        ``None`` where it is not one number: without a coordinator (``hydrofeed serve`` feeds
        until the data ends) and under ``--remainder wrap`` (epochs differ by a step).
        """
        addr = os.environ.get("HYDROFEED_COORDINATOR")
        if not addr:
            return None
        import json

        self._feed.wait_schema()
        st = json.loads(
            Feed.coordinator_state(
                addr,
                os.environ.get("HYDROFEED_TOKEN", ""),
                int(os.environ.get("HYDROFEED_RANK", "0")),
                0,
                timeout,
            )
        )
        self._job_batch_size = int(st["batch_size"])
        if st["remainder"] == "wrap":
            return None
        from hydrofeed.spark.files import steps_per_epoch

        workers = int(os.environ.get("HYDROFEED_NUM_WORKERS", "1"))
        return steps_per_epoch(int(st["total_rows"]), workers, int(st["batch_size"]), st["remainder"])

    def initial_epoch(self, timeout: float = 30.0) -> int:
        """The epoch this run's feed begins with: 0, or in a run resumed from a state (``hydrofeed
        launch --resume``) the epoch it resumed in (``model.fit(initial_epoch=...)``)."""
        r = self._resumed(timeout)
        return 0 if r is None else r[0]

    def initial_step(self, timeout: float = 30.0) -> int | None:
        """The step at which this run's first epoch (:meth:`initial_epoch`) starts: 0, or in a
        run resumed mid-epoch the steps this rank had taken of that epoch, so that epoch has
        ``steps_per_epoch() - initial_step()`` batches and the next ones ``steps_per_epoch()``
        (Keras' ``initial_step``; see ``hydrofeed.tf.BackupAndRestore``). Asked of the
        coordinator (which resumed each rank's quota of that epoch) once. ``None`` under
        ``--remainder wrap`` in a resumed run (no whole-epoch count to start from)."""
        r = self._resumed(timeout)
        if r is None:
            return 0
        spe = self.steps_per_epoch(timeout)
        return None if spe is None else max(0, spe - r[1])

    def _resumed(self, timeout: float = 30.0) -> tuple[int, int] | None:
        """``(epoch, steps left)`` of the epoch a resumed run began in (the coordinator's
        word, asked once); ``None`` for a run that did not resume or has no coordinator."""
        if self._resumed_at is not False:
            return self._resumed_at  # type: ignore[return-value]
        addr = os.environ.get("HYDROFEED_COORDINATOR")
        r = None
        if addr:
            r = Feed.coordinator_resumed(addr, os.environ.get("HYDROFEED_TOKEN", ""), timeout)
        self._resumed_at = r
        return r

    def flush_acks(self) -> None:
        """Tells the feeder now that every batch handed out so far was consumed (it forwards
        the rows to the coordinator). An optimisation, never needed for correctness: each
        batch handed out is published in the ring's shared memory, which the feeder reads on
        its own (also after this process exited or was killed); ``next()`` also acks every
        50 ms and when it blocks."""
        self._feed.flush_acks()

    def metrics(self) -> dict[str, Any]:
        """Counters: rows, batches, frames, bytes, seconds waiting on the ring, results,
        frames acked, the feeder pid; ``rank`` and ``workers`` under ``hydrofeed launch``;
        ``gpu`` (the staging's counters, :meth:`hydrofeed.gpu.DeviceFeed.metrics`, with the
        GPU's utilisation from NVML) once batches went to a GPU."""
        m = dict(self._feed.metrics())
        if self._device is not None:
            g = dict(self._device.metrics())
            try:
                from hydrofeed.gpu import gpu_utilization

                g["utilization"] = gpu_utilization(_nvml_index(int(g["device"].split(":")[1])))
            except Exception:  # noqa: BLE001 (NVML is optional: the counters stand alone)
                g["utilization"] = None
            # The share of the time since staging began that next() spent waiting for input
            # (the ring) or for a copy: what the GPU may have idled for.
            elapsed = time.monotonic() - self._device_t0
            waited = float(m.get("wait_seconds", 0.0)) + float(g["copy_wait_s"])
            g["input_wait_fraction"] = round(min(1.0, waited / elapsed), 4) if elapsed > 0 else 0.0
            m["gpu"] = g
        if "HYDROFEED_RANK" in os.environ:
            m["rank"] = int(os.environ["HYDROFEED_RANK"])
            m["workers"] = int(os.environ.get("HYDROFEED_NUM_WORKERS", "1"))
        return m

    @property
    def feeder_pid(self) -> int:
        """The feeder process id."""
        return int(self._feed.peer_pid)


def _nvml_index(ordinal: int) -> int:
    """The NVML index of CUDA ordinal ``ordinal`` (through ``CUDA_VISIBLE_DEVICES`` when it
    lists indices; ``hydrofeed launch --gpus`` sets it so)."""
    vis = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    ids = [v.strip() for v in vis.split(",") if v.strip()]
    if ordinal < len(ids) and ids[ordinal].isdigit():
        return int(ids[ordinal])
    return ordinal


def _column_numpy(table: Any, name: str) -> Any:
    """A column of a pyarrow table as numpy (fixed-size lists as N-D arrays)."""
    import pyarrow as pa

    col = table.column(name).combine_chunks()
    t = col.type
    if pa.types.is_fixed_size_list(t):
        shape = [len(col)]
        while pa.types.is_fixed_size_list(t):
            shape.append(t.list_size)
            t = t.value_type
        flat = col.flatten()
        while pa.types.is_fixed_size_list(flat.type):
            flat = flat.flatten()
        return flat.to_numpy(zero_copy_only=False).reshape(shape)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return col.to_pylist()
    return col.to_numpy(zero_copy_only=False)

