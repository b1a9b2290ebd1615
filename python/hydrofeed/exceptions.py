"""Every exception and warning class of hydrofeed, in one module.

::

    HydrofeedError                      base of every hydrofeed error
     +-- DataError                      corrupt or unreadable input
     +-- SchemaError                    schema mismatch, missing column, no tensor layout
     +-- FeedTimeoutError               a wait passed its deadline
     +-- PeerLostError                  the feeder (or trainer) process is gone
     |    +-- TransportError            (Spark) a feeding socket's peer failed or went away
     +-- CoordinatorError               a coordinator protocol or state error
     +-- RingExhaustedError             held batches fill the ring (on_ring_pressure="raise")
     +-- NoCudaDeviceError              a GPU path asked for where there is no CUDA device
     +-- TrainerFailedError             (Spark) a node of the cluster failed
     +-- FeedFilesError                 (Spark) a file feed's feeder or coordinator failed
     +-- ArgumentError                  (Spark) a bad argument (also ValueError, AssertionError)
    RingPressureWarning (UserWarning)   held batches were copied out of the ring

The first nine are made by the compiled module (``hydrofeed._native``, where Rust raises them)
and re-exported here as they are: ``except hydrofeed.DataError`` catches what the Rust code
raises. The Spark ones are Python classes. All of them are also ``hydrofeed.<Name>``.

Outside this tree, a missing file raises ``FileNotFoundError``, refused access
``PermissionError`` and a bad argument ``ValueError`` (the Spark API's :class:`ArgumentError`
is one); ``RuntimeError`` (not a subclass of these) is only raised for "internal error, please
report".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hydrofeed._native import (
    CoordinatorError,
    DataError,
    FeedTimeoutError,
    HydrofeedError,
    NoCudaDeviceError,
    PeerLostError,
    RingExhaustedError,
    RingPressureWarning,
    SchemaError,
)

if TYPE_CHECKING:
    from hydrofeed.spark.control import NodeState

__all__ = [
    "ArgumentError",
    "CoordinatorError",
    "DataError",
    "FeedFilesError",
    "FeedTimeoutError",
    "HydrofeedError",
    "NoCudaDeviceError",
    "PeerLostError",
    "RingExhaustedError",
    "RingPressureWarning",
    "SchemaError",
    "TrainerFailedError",
    "TransportError",
]

# -- the native classes -----------------------------------------------------------------------
# Rust creates these classes; their docstrings are set here, next to the Python ones, so that
# ``help(hydrofeed.DataError)`` says when it is raised.

HydrofeedError.__doc__ = """Base of every hydrofeed error: ``except hydrofeed.HydrofeedError``
catches all of them.

Raised as itself where no subclass fits: a ``DataFeed`` or ``read()`` result used in another
process than the one that made it (a ``fork()`` child), a corrupt ring, an error the feeder
reports without a class, a failed copy out of the ring, and ``hydrofeed.tf.dataset`` asked for
more epochs than the feed has.
"""

DataError.__doc__ = """Corrupt or unreadable input; the message names file, split and byte offset.

Raised while iterating :func:`hydrofeed.read` (``on_error="raise"``, the default) and by
``DataFeed.next()`` / ``batches()`` when the feeder hit such input: a record, page or block
that does not decode, an I/O or HDFS error while reading, a bad frame from the feeder.
``on_error="skip"`` (``hydrofeed serve --skip-errors``) skips and counts bad records instead.
"""

NoCudaDeviceError.__doc__ = """A GPU path (``batches(device="cuda:N")``, ``hydrofeed.gpu``,
``launch --gpus``) was asked for where there is no CUDA driver, no GPU, or not that one; the
message says which. The CPU path never raises it.
"""

SchemaError.__doc__ = """A schema mismatch, a missing column, or a column that has no tensor
layout.

Raised by :func:`hydrofeed.read` and the feeder (through ``DataFeed``) when files disagree with
each other or with the given ``schema``, when ``columns`` names a column the input lacks, and
when a batch column's Arrow type has no numpy/tensor layout.
"""

FeedTimeoutError.__doc__ = """A wait passed its deadline; the message names the peer and the
stage.

Raised by ``DataFeed`` when no batch came within ``timeout`` seconds, when the feeder did not
come up within ``connect_timeout``, and by waits with a ``timeout`` argument
(``wait_schema``, ``state``, ``steps_per_epoch``).
"""

PeerLostError.__doc__ = """The peer process (feeder or trainer) died or disconnected.

Raised by ``DataFeed`` when its feeder is gone (killed, crashed, refused the connection) and
no restarted feeder took the trainer back within ``rejoin_timeout``. The Spark feeding
socket's :class:`TransportError` is a subclass.
"""

CoordinatorError.__doc__ = """A coordinator protocol or state error, or a lost coordinator.

Raised where a coordinator error reaches this process through the compiled module (a
coordinator state that cannot be read, a request it refuses), and by ``DataFeed.next()`` /
``batches()`` when the feeder lost its coordinator: it did not answer for the feeder's
``--coordinator-timeout`` (killed, its host down, its port closed); the message is the
feeder's, naming the coordinator's address and the stage ("coordinator at HOST:PORT
unreachable for 60 s while acking (lease 12): ..."). A coordinator that does not answer
``DataFeed.state()`` / ``steps_per_epoch()`` in time raises :class:`FeedTimeoutError` instead.
"""

RingExhaustedError.__doc__ = """Batches this trainer holds fill the ring.

Raised by ``DataFeed.next()`` / ``batches()`` on a feed made with
``on_ring_pressure="raise"`` when batches the process still holds pin more than half of the
ring (the ring frees space in order, so the feeder would stop). Keep copies
(``Batch.copy()``) of batches you keep.
"""

RingPressureWarning.__doc__ = """Batches this trainer holds pinned too much of the ring and were
copied out of it.

Warned once per feed by ``DataFeed.next()`` / ``batches()`` under
``on_ring_pressure="copy"`` (the default) when held batches pin more than half of the ring.
The framework adapters (``hydrofeed.tf``, ``torch``, ``jax``) copy without this warning.
"""


# -- the Python classes -------------------------------------------------------------------------


class TrainerFailedError(HydrofeedError, RuntimeError):
    """A node of the cluster failed; carries its rank, role, host, exit status and output tail.

    Raised on the driver by ``TFCluster.train()``, ``inference()``, ``train_files()``,
    ``shutdown()`` and ``run()`` (``hydrofeed.spark.cluster``) when a node's trainer exited
    with an error, was killed, or its executor was lost, and no restart is left.
    """

    rank: int | None
    job_name: str | None
    task_index: int | None
    host: str | None
    exit_code: int | None
    log_tail: list[str]

    def __init__(self, node: NodeState | None, message: str) -> None:
        super().__init__(message)
        self.rank = node.rank if node else None
        self.job_name = node.meta.get("job_name") if node else None
        self.task_index = node.meta.get("task_index") if node else None
        self.host = node.meta.get("host") if node else None
        self.exit_code = node.exit_code if node else None
        self.log_tail = list(node.tail) if node else []


class TransportError(PeerLostError, ConnectionError):
    """The peer on the other end of a feeding socket failed or went away.

    Raised in Spark feeding tasks and trainers (``hydrofeed.spark.hub``) when the trainer's
    hub or the feeding task closes the connection, reports an error, or sends a malformed
    frame.
    """


class FeedFilesError(HydrofeedError, RuntimeError):
    """The file feed failed: a feeder or the coordinator exited with an error (the message
    names the rank, host and stage, and carries the process's last output lines).

    Raised on the driver by ``TFCluster.train_files()`` (``hydrofeed.spark.files``), also when
    the coordinator does not start or stops before the end of the feed, and by
    ``hydrofeed.spark.files.total_rows`` when ``hydrofeed inspect`` fails.
    """


class ArgumentError(HydrofeedError, ValueError, AssertionError):
    """A bad argument to the Spark API; the message names the argument and what it may be.

    Raised on the driver by ``hydrofeed.spark.TFCluster.run()`` (node counts, roles),
    ``TFCluster.train()``, ``inference()`` and ``train_files()`` (the input mode, the queue,
    ``num_epochs``, ``format``, ``remainder``, ``batch_size``, ``order``, ``shuffle_buffer``)
    and ``hydrofeed.spark.files.steps_per_epoch`` (``remainder``). A ``ValueError``; also an
    ``AssertionError``, which TensorFlowOnSpark raises for the same misuse (it checks with
    ``assert``), so code written for it catches this too.
    """
