"""The hub: the trainer's end of the rings Spark's feeding tasks on its host write.

One Unix stream socket per trainer (``<run_dir>/rank<k>.sock``), served by a :class:`Hub`
thread inside the trainer process. A feeding task dials it, says what it feeds (``HELLO``:
train or infer, its partition) and, once welcomed, makes a shared-memory ring and offers it on
the same socket: the ``ipc`` ring and ``tfbridge`` frames of the feeder's rings, through the
extension (:class:`hydrofeed._native.RingWriter` here, :class:`hydrofeed._native.RingReader`
in the hub; docs/arch/ring.md). One ring per connection, that is per partition: its Arrow
batches, then an end-of-split marker. The trainer answers on the ring's control channel: the
partition consumed (``A``), inference results (``R``, pickled lists, in row order), an error
(``E``). The ring is a sealed memfd that goes with the last process mapping it (``kill -9``
included); nothing is created in ``/dev/shm``.

The rest of :mod:`hydrofeed.spark` only sees two small interfaces:

- trainer side: ``Hub`` -- ``start()``, ``get(timeout) -> Item``, ``ack(conn_id, rows)``,
  ``send_results(conn_id, objs)``, ``terminate()``, ``end_of_feed()``, ``close()``;
- feeding side: :func:`open_channel` -> ``Channel`` -- ``send(batch)``, ``finish(timeout)``
  (returns the results of an inference partition), ``close()``.

Socket frames (the handshake and the driver's control connections; never data):
``[u8 kind][u32 length][JSON payload]``.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import queue
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from hydrofeed import _native
from hydrofeed.spark import rows as _rows
from hydrofeed.exceptions import FeedTimeoutError, HydrofeedError, PeerLostError

# Defined in hydrofeed.exceptions; still importable from here.
from hydrofeed.exceptions import TransportError as TransportError

logger = logging.getLogger(__name__)

# Socket frame kinds.
HELLO = 1  # feeder -> hub: JSON {"mode": "train"|"infer"|"control", "partition": int}
# hub -> feeder: JSON {"rank": int, "state": "running"|"terminating", "objects": bool}; the ring
# follows. "objects": the trainer takes rows as objects (no ``input_mapping``), so rows Spark
# holds pickled come as they are; else the feeding task sends them as Arrow columns.
WELCOME = 2
ACK = 6  # hub -> control connection: JSON {} the command was taken
ERROR = 8  # hub -> feeder: JSON {"error": str}, before a ring exists
EOF = 9  # control -> hub: end of feed (no more partitions will come)
FILES = 10  # control -> hub: JSON: attach to this feeder's ring (file mode, ``files.py``)
_KINDS = (HELLO, WELCOME, ACK, ERROR, EOF, FILES)

# Ring control messages, trainer -> feeding task: a kind byte, then the payload.
_CONSUMED = b"A"  # JSON {"rows": n}: every row of the partition was consumed (or answered)
_RESULTS = b"R"  # pickled list of results, the last piece of one send_results()
_RESULTS_PART = b"r"  # a piece of a pickled list that goes on in the next message
_FAILED = b"E"  # JSON {"error": str}
_PIECE = 60 * 1024  # a control message holds at most 64 KiB

_HDR = struct.Struct("<BI")
_MAX_FRAME = 1 << 20


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise TransportError(f"peer closed the connection after {got} of {n} bytes")
        got += k
    return bytes(buf)


def send_frame(sock: socket.socket, kind: int, payload: bytes = b"") -> None:
    """Writes one socket frame (header + payload) to ``sock``."""
    sock.sendall(_HDR.pack(kind, len(payload)) + payload)


def recv_frame(sock: socket.socket) -> tuple[int, bytes]:
    """Reads one socket frame; raises :class:`TransportError` on EOF or a malformed header."""
    kind, n = _HDR.unpack(_recv_exact(sock, _HDR.size))
    if kind not in _KINDS or n > _MAX_FRAME:
        raise TransportError(f"malformed frame header (kind {kind}, length {n})")
    return kind, (_recv_exact(sock, n) if n else b"")


def _json(obj: Any) -> bytes:
    return json.dumps(obj).encode()


# ----------------------------------------------------------------------------- trainer side


@dataclass
class Item:
    """One thing taken out of the hub's queue, in arrival order."""

    kind: str  # "batch" | "end_partition" | "end_of_feed" | "error" | "files" (message: JSON)
    conn_id: int = -1
    batch: pa.RecordBatch | None = None
    message: str = ""
    infer: bool = False  # rows of an inference partition: each needs a result
    # Rows that came pickled (``rows.pickled_frames``), unpickled: ``batch`` is then their
    # ``rows.objects_batch``. ``nbytes``: the size of what came through the ring.
    objs: list[Any] | None = None
    nbytes: int = 0
    pickled: bool = False  # ``batch`` is a frame of pickled rows (``rows.pickled_frames``)
    unpickle_s: float = 0.0  # the seconds get() took to make ``objs`` (not waiting for input)
    ahead: bool = False  # unpickled by a hub thread while the trainer was away


@dataclass
class _Conn:
    ring: Any  # hydrofeed._native.RingReader
    mode: str
    partition: int
    received: int = 0
    consumed: int = 0
    pickled: int = 0  # frames of pickled rows queued, not yet unpickled: their rows not counted yet
    ended: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


def _tell(ring: Any, kind: bytes, payload: bytes) -> None:
    """A control message to a feeding task; one that went away is not told."""
    try:
        ring.send(kind + payload)
    except (PeerLostError, OSError):
        pass


class Hub:
    """Listens on ``path`` inside the trainer process and queues what feeding tasks send.

    ``max_queued`` bounds the number of record batches held (backpressure: a feeding task waits
    for ring space once the queue and its ring are full, memory stays flat). A frame of pickled
    rows waits in its ring slot, as bytes, until the trainer takes it: :meth:`get` unpickles it
    in the trainer's thread, so the objects are made just before the trainer touches them,
    while they are in the caches, the collector has few live ones to walk, and no thread of
    the hub competes with the trainer for the GIL (``benches/README.md``, Spark). While the
    trainer is away from its feed (``taking`` false: its model step, which may release the
    GIL), the hub's threads unpickle up to ``OBJECT_FRAMES_AHEAD`` frames ahead instead, so
    that work overlaps the step.
    """

    #: Frames of pickled rows the hub's threads unpickle ahead while the trainer is away.
    OBJECT_FRAMES_AHEAD = 2

    def __init__(self, path: str, rank: int, max_queued: int = 16) -> None:
        self.path = path
        self.rank = rank
        self._q: queue.Queue[Item] = queue.Queue(max_queued)
        self._conns: dict[int, _Conn] = {}
        self._next_id = 0
        self._lock = threading.Lock()
        self._ahead = threading.Semaphore(self.OBJECT_FRAMES_AHEAD)
        #: Whether the trainer's thread is in its feed, taking rows (set by the DataFeed).
        self.taking = False
        self._terminating = threading.Event()
        self._closed = threading.Event()
        self.eof_received = threading.Event()
        self._srv: socket.socket | None = None
        self._thread: threading.Thread | None = None
        #: What the trainer's feed takes rows as, told to every feeding task that connects:
        #: objects (TFoS's rows), or numpy columns (``input_mapping``, ``batches()``).
        self.wants_objects = True

    # -- lifecycle
    def start(self) -> None:
        """Binds the socket and starts accepting feeding connections."""
        if os.path.exists(self.path):
            os.unlink(self.path)
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(self.path)
        os.chmod(self.path, 0o600)  # same user only
        srv.listen(64)
        srv.settimeout(0.2)
        self._srv = srv
        self._thread = threading.Thread(target=self._accept_loop, name="hydrofeed-hub", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stops accepting, drops every connection and removes the socket file."""
        self._closed.set()
        if self._thread is not None:
            self._thread.join(2)
        with self._lock:
            conns = list(self._conns.values())
            self._conns.clear()
        for c in conns:
            _tell(c.ring, _FAILED, _json({"error": f"trainer rank {self.rank} closed its feed"}))
            c.ring.close()
        if self._srv is not None:
            self._srv.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    # -- consumer API (the DataFeed calls these)
    def get(self, timeout: float) -> Item | None:
        """Next item, or None after ``timeout`` seconds. A frame of pickled rows is unpickled
        here, in the caller's thread, into ``objs``; one that cannot be fails its feeding task
        (its connection is dropped, with what it still has queued) and is skipped."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                item = self._q.get(timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                return None
            if item.ahead:
                self._ahead.release()
            if not item.pickled or item.objs is not None:
                return item
            if self._unpickle(item):
                return item

    def _unpickle(self, item: Item) -> bool:
        """Makes the rows of a frame of pickled rows into ``item.objs``; False where its
        connection is gone or the frame cannot be unpickled (the feeding task is then told)."""
        with self._lock:
            c = self._conns.get(item.conn_id)
        if c is None or item.batch is None:  # failed meanwhile: what it had queued goes with it
            return False
        t = time.monotonic()
        try:
            objs = _rows.unpickle_frame(item.batch)
        except Exception as e:  # noqa: BLE001 - told to the feeding task, which fails its Spark task
            with self._lock:
                self._conns.pop(item.conn_id, None)
            error = f"unpickling the rows of partition {c.partition}: {type(e).__name__}: {e}"
            logger.warning("trainer rank %d: %s", self.rank, error)
            _tell(c.ring, _FAILED, _json({"error": f"trainer rank {self.rank}: bad feed: {error}"}))
            c.ring.close()
            return False
        item.objs, item.batch = objs, _rows.objects_batch(len(objs))
        item.unpickle_s = time.monotonic() - t
        with c.lock:
            c.pickled = max(c.pickled - 1, 0)  # (terminate() may have zeroed it meanwhile)
            c.received += len(objs)
        self._finish_if_done(item.conn_id, c)  # (a frame of empty lists: no row to take)
        return True

    def ack(self, conn_id: int, rows: int) -> None:
        """Marks ``rows`` rows of connection ``conn_id`` as consumed; acks a finished partition."""
        with self._lock:
            c = self._conns.get(conn_id)
        if c is None:
            return
        with c.lock:
            c.consumed += rows
        if c.mode == "train":
            self._finish_if_done(conn_id, c)

    def send_results(self, conn_id: int, objs: list[Any]) -> None:
        """Sends inference results for rows of ``conn_id`` (in row order)."""
        with self._lock:
            c = self._conns.get(conn_id)
        if c is None:
            return
        data = pickle.dumps(objs, protocol=5)
        with c.lock:
            for k in range(0, max(len(data) - _PIECE, 0), _PIECE):
                _tell(c.ring, _RESULTS_PART, data[k : k + _PIECE])
            _tell(c.ring, _RESULTS, data[(max(len(data) - 1, 0) // _PIECE) * _PIECE :])
            c.consumed += len(objs)
        self._finish_if_done(conn_id, c)

    def terminate(self) -> None:
        """Ignore everything that still arrives (TFoS ``DataFeed.terminate``)."""
        self._terminating.set()
        while True:
            try:
                item = self._q.get_nowait()
            except queue.Empty:
                break
            if item.ahead:
                self._ahead.release()
        with self._lock:
            conns = list(self._conns.items())
        for cid, c in conns:
            if c.mode == "train":
                with c.lock:
                    c.consumed, c.pickled = c.received, 0
                self._finish_if_done(cid, c)

    def end_of_feed(self) -> None:
        """Queues the end-of-feed marker (after everything already queued)."""
        self.eof_received.set()
        self._put(Item("end_of_feed"))

    def drain_until_end_of_feed(self) -> None:
        """After ``map_fun`` returned: keep accepting (and ignoring) partitions Spark still
        schedules, as TFoS's manager does, until the driver ends the feed."""
        self.terminate()
        while not self.eof_received.wait(0.2) and not self._closed.is_set():
            pass

    # -- internals
    def _finish_if_done(self, conn_id: int, c: _Conn) -> None:
        """Acks the partition of ``c`` once it ended and all its rows were taken (train) or
        answered (infer)."""
        with c.lock:
            done = c.ended and not c.pickled and c.consumed >= c.received
        if done:
            self._finish(conn_id, c)

    def _finish(self, conn_id: int, c: _Conn) -> None:
        with self._lock:
            if self._conns.pop(conn_id, None) is None:
                return
        _tell(c.ring, _CONSUMED, _json({"rows": c.received}))
        c.ring.close()

    def _put(self, item: Item) -> bool:
        while not self._closed.is_set():
            if self._terminating.is_set() and item.kind == "batch":
                return False
            try:
                self._q.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def _accept_loop(self) -> None:
        assert self._srv is not None
        while not self._closed.is_set():
            try:
                sock, _ = self._srv.accept()
            except TimeoutError:
                continue
            except OSError:
                break
            sock.settimeout(10.0)
            threading.Thread(target=self._serve, args=(sock,), name="hydrofeed-hub-conn", daemon=True).start()

    def _control(self, sock: socket.socket) -> None:
        """A control connection of the driver's (end of feed, a file feed): one command."""
        kind, payload = recv_frame(sock)
        if kind == EOF:
            self.end_of_feed()
        elif kind == FILES:
            if self._terminating.is_set():
                raise TransportError("its map_fun returned or called terminate(): it takes no file feed")
            self._put(Item("files", message=payload.decode()))
        else:
            raise TransportError(f"unexpected frame kind {kind} on a control connection")
        send_frame(sock, ACK, _json({}))

    def _serve(self, sock: socket.socket) -> None:
        ring: Any = None
        try:
            try:
                kind, payload = recv_frame(sock)
                if kind != HELLO:
                    raise TransportError(f"expected HELLO, got frame kind {kind}")
                hello = json.loads(payload)
                mode = hello.get("mode", "train")
                if mode == "control":
                    self._control(sock)
                    return
                if mode not in ("train", "infer"):
                    raise TransportError(f"a feeding connection of mode {mode!r}")
                if self._terminating.is_set() and mode == "infer":
                    raise TransportError("its map_fun called terminate() or returned: it cannot answer inference rows")
                state = "terminating" if self._terminating.is_set() and mode == "train" else "running"
                send_frame(sock, WELCOME, _json({"rank": self.rank, "state": state, "objects": self.wants_objects}))
                sock.setblocking(True)  # the ring's control channel is a blocking socket
                ring = self._take_ring(sock)
                if ring is None:
                    return
            except (TransportError, OSError, ValueError, AttributeError) as e:
                try:
                    send_frame(sock, ERROR, _json({"error": f"trainer rank {self.rank}: bad feed: {e}"}))
                except OSError:
                    pass
                return
            except HydrofeedError as e:  # its ring refused (unsealed, malformed, too large)
                logger.warning("trainer rank %d: a feeding task's ring refused: %s", self.rank, e)
                return
            finally:
                sock.close()  # the ring holds its own copy of the connection
            self._read(ring, mode, int(hello.get("partition", -1)))
        except (PeerLostError, FeedTimeoutError, ValueError) as e:
            if ring is not None:
                _tell(ring, _FAILED, _json({"error": f"trainer rank {self.rank}: bad feed: {e}"}))
                ring.close()

    def _take_ring(self, sock: socket.socket) -> Any:
        """The ring the feeding task offers with its first batch (Spark may take long to
        compute it); None if the hub closed meanwhile."""
        while not self._closed.is_set():
            try:
                return _native.RingReader(sock.fileno(), 1.0)
            except FeedTimeoutError:
                continue
            except PeerLostError:  # it hung up without feeding (a partition skipped)
                return None
        return None

    def _read(self, ring: Any, mode: str, partition: int) -> None:
        """Queues one partition's batches from its ring until its end."""
        with self._lock:
            conn_id = self._next_id
            self._next_id += 1
            c = _Conn(ring, mode, partition)
            self._conns[conn_id] = c
        try:
            while not self._closed.is_set():
                got = ring.next(0.2)
                if got is None:
                    continue
                if isinstance(got, str):  # the end of the partition
                    with c.lock:
                        c.ended = True
                        rows = c.received + c.pickled
                    if mode == "infer" and rows > 0:
                        self._put(Item("end_partition", conn_id, infer=True))
                    self._finish_if_done(conn_id, c)  # (results sent before the end was read)
                    return
                rb: pa.RecordBatch = got
                if self._terminating.is_set() and mode == "train":
                    continue  # dropped: terminate() counts the partition consumed
                # A frame of pickled rows is queued as it is (a view of its ring slot): the
                # trainer's get() unpickles it and counts its rows then.
                pickled = _rows.is_pickled(rb)
                item = Item("batch", conn_id, rb, infer=mode == "infer", nbytes=rb.nbytes, pickled=pickled)
                with c.lock:
                    if pickled:
                        c.pickled += 1
                    else:
                        c.received += rb.num_rows
                if pickled and not self.taking and self._ahead.acquire(blocking=False):
                    item.ahead = True  # the trainer is away: made here, overlapping its step
                    if not self._unpickle(item):
                        self._ahead.release()
                        return  # its feeding task was told why
                    item.unpickle_s = 0.0  # not the trainer's time
                if not self._put(item):
                    if item.ahead:
                        self._ahead.release()
                    with c.lock:
                        if item.objs is not None:
                            c.consumed += len(item.objs)
                        elif pickled:
                            c.pickled -= 1
                        else:
                            c.consumed += rb.num_rows
        except BaseException:
            with self._lock:
                self._conns.pop(conn_id, None)
            raise


# ----------------------------------------------------------------------------- feeding side


class Channel:
    """A feeding task's connection to one trainer's hub."""

    def __init__(self, path: str, mode: str, partition: int, connect_timeout: float = 30.0) -> None:
        self.path = path
        self.mode = mode
        deadline = time.monotonic() + connect_timeout
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(path)
                break
            except (FileNotFoundError, ConnectionRefusedError) as e:
                sock.close()
                if time.monotonic() > deadline:
                    raise TransportError(f"no trainer listening on {path}: {e}") from e
                time.sleep(0.1)
        try:
            sock.settimeout(max(connect_timeout, 1.0))
            send_frame(sock, HELLO, _json({"mode": mode, "partition": partition}))
            kind, payload = recv_frame(sock)
            if kind == ERROR:
                raise TransportError(json.loads(payload)["error"])
            if kind != WELCOME:
                raise TransportError(f"expected WELCOME from {path}, got frame kind {kind}")
            info = json.loads(payload)
            self.rank: int = info["rank"]
            self.terminating: bool = info["state"] == "terminating"
            self.objects: bool = info.get("objects", True)
            sock.setblocking(True)  # the ring's control channel is a blocking socket
            self._ring = _native.RingWriter(sock.fileno())
        except (OSError, PeerLostError, FeedTimeoutError) as e:
            raise TransportError(f"trainer at {path} refused the feed: {e}") from e
        finally:
            sock.close()  # the ring holds its own copy of the connection
        self.sent = 0

    def send(self, batch: pa.RecordBatch | _rows.PickledChunk, ipc: pa.Buffer | None = None) -> None:
        """Puts one record batch, or a chunk of pickled elements forwarded as they are, into
        the ring (split by rows where it is larger than the ring's largest frame). ``ipc``: the
        batch's Arrow IPC message where the caller has it (Spark-encoded DataFrame batches);
        unused, the batch's buffers are copied into the ring either way."""
        del ipc
        try:
            if isinstance(batch, _rows.PickledChunk):
                fits = self._ring.send_pickled(batch.blobs, batch.batched)
            else:
                fits = self._ring.send(batch)
        except (PeerLostError, FeedTimeoutError) as e:
            raise TransportError(self._peer_error(f"trainer rank {self.rank} went away while feeding: {e}")) from e
        if fits:
            self.sent += batch.num_rows
            return
        if batch.num_rows < 2:
            raise TransportError(
                f"one row of {batch.nbytes:,} bytes is larger than the ring to trainer rank {self.rank} holds"
            )
        half = batch.num_rows // 2
        self.send(batch.slice(0, half))
        self.send(batch.slice(half))

    def _peer_error(self, default: str) -> str:
        # The hub may have said why before closing.
        try:
            while (msg := self._ring.control(0.5)) is not None:
                if msg[:1] == _FAILED:
                    said: str = json.loads(msg[1:])["error"]
                    return said
        except (PeerLostError, ValueError):
            pass
        return default

    def finish(self, timeout: float) -> list[Any]:
        """Ends the partition and waits until the trainer consumed it (train) or answered every
        row (infer). Returns the inference results in row order."""
        try:
            self._ring.end(timeout)
        except (PeerLostError, FeedTimeoutError) as e:
            raise TransportError(self._peer_error(f"trainer rank {self.rank} went away: {e}")) from e
        results: list[Any] = []
        piece = b""
        deadline = time.monotonic() + timeout
        while True:
            try:
                msg = self._ring.control(1.0)
            except PeerLostError as e:
                raise TransportError(f"trainer rank {self.rank} went away before consuming the partition: {e}") from e
            if msg is None:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"Timeout while feeding partition: trainer rank {self.rank} did not consume it "
                        f"within feed_timeout={timeout}s"
                    ) from None
                continue
            kind, payload = msg[:1], msg[1:]
            if kind == _RESULTS_PART:
                piece += payload
            elif kind == _RESULTS:
                results.extend(pickle.loads(piece + payload))
                piece = b""
            elif kind == _CONSUMED:
                return results
            elif kind == _FAILED:
                raise TransportError(json.loads(payload)["error"])
            else:
                raise TransportError(f"unexpected message {kind!r} from trainer rank {self.rank}")

    def close(self) -> None:
        """Closes the ring."""
        self._ring.close()


def open_channel(path: str, mode: str, partition: int, connect_timeout: float = 30.0) -> Channel:
    """Connects a feeding task to the hub listening on ``path``."""
    return Channel(path, mode, partition, connect_timeout)


def _control(path: str, kind: int, payload: bytes, timeout: float) -> None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
        send_frame(sock, HELLO, _json({"mode": "control"}))
        send_frame(sock, kind, payload)
        k, reply = recv_frame(sock)
        if k == ERROR:
            raise TransportError(json.loads(reply)["error"])
    finally:
        sock.close()


def send_end_of_feed(path: str, timeout: float = 10.0) -> None:
    """Tells the hub on ``path`` that no more partitions will come."""
    _control(path, EOF, b"", timeout)


def send_files(path: str, msg: dict[str, Any], timeout: float = 10.0) -> None:
    """Tells the hub on ``path`` to read from a feeder's ring next (file mode)."""
    _control(path, FILES, _json(msg), timeout)
