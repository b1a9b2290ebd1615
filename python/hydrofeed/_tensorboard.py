"""The feed's scalars for TensorBoard (``feed/wait_fraction``, ``feed/rows_per_s``,
``feed/gpu_utilization``), written by the chief's :class:`hydrofeed.DataFeed`.

An event file of TensorBoard's own format, written with the ``tensorboard`` package's record
writer and protos. Not its ``EventFileWriter`` (nor ``torch.utils.tensorboard``, which uses
it): that opens files through ``tf.io.gfile``, which imports TensorFlow wherever it is
installed, seconds of start-up and its log noise in a PyTorch or JAX trainer. Not
``tf.summary``: it needs TensorFlow. A few scalars every few seconds need neither a thread nor
a queue: each point is written and flushed at once.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

#: TensorBoard log directory of the job (``hydrofeed launch --tensorboard DIR``, the Spark
#: cluster's ``log_dir`` under ``tensorboard=True``): the chief's feed writes its scalars into
#: ``<dir>/hydrofeed``, a run of its own beside the model's.
TENSORBOARD_ENV = "HYDROFEED_TENSORBOARD_DIR"
#: Seconds between two points (and between two GPU utilisation samples); default 10.
EVERY_ENV = "HYDROFEED_METRICS_EVERY"
#: The run (subdirectory of the log directory) the feed writes.
RUN = "hydrofeed"


def every() -> float:
    """Seconds between two points: ``$HYDROFEED_METRICS_EVERY``, else 10."""
    try:
        v = float(os.environ.get(EVERY_ENV) or 10.0)
    except ValueError:
        return 10.0
    return v if v > 0 else 10.0


class ScalarWriter:
    """One event file in ``<logdir>/hydrofeed``; :meth:`scalars` appends a step's points."""

    def __init__(self, logdir: str) -> None:
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.record_writer import RecordWriter

        self._event: Any = event_pb2.Event
        self._summary: Any = summary_pb2.Summary
        d = os.path.join(logdir, RUN)
        os.makedirs(d, exist_ok=True)
        name = f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}.hydrofeed"
        self.path = os.path.join(d, name)
        self._file = open(self.path, "wb")  # noqa: SIM115 (closed by close())
        self._records = RecordWriter(self._file)
        self._write(self._event(wall_time=time.time(), file_version="brain.Event:2"))

    def _write(self, ev: Any) -> None:
        self._records.write(ev.SerializeToString())
        self._file.flush()

    def scalars(self, step: int, values: dict[str, float]) -> None:
        """Points of ``step`` (TensorBoard's x axis), one per tag."""
        s = self._summary(value=[self._summary.Value(tag=k, simple_value=float(v)) for k, v in values.items()])
        self._write(self._event(wall_time=time.time(), step=int(step), summary=s))

    def close(self) -> None:
        self._file.close()
