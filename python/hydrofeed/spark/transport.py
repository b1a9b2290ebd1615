"""Feeding transport between Spark feeding tasks and the trainer on the same host.

First transport: Arrow IPC messages over a Unix stream socket, one socket per trainer
(``<run_dir>/rank<k>.sock``), served by a :class:`Hub` thread inside the trainer process.

The rest of :mod:`hydrofeed.spark` only sees two small interfaces, so the shared-memory ring
(crate ``ipc``) can replace this module without touching the cluster code:

- trainer side: ``Hub`` -- ``start()``, ``get(timeout) -> Item``, ``ack(conn_id, rows)``,
  ``send_results(conn_id, objs)``, ``terminate()``, ``end_of_feed()``, ``close()``;
- feeding side: :func:`open_channel` -> ``Channel`` -- ``send(batch)``, ``finish(timeout)``
  (returns the results of an inference partition), ``close()``.

Wire format (both directions): ``[u8 kind][u32 length][payload]``. Payloads: JSON for control,
``Schema.serialize()`` once per connection then ``RecordBatch.serialize()`` (Arrow IPC messages,
read back zero-copy from the received buffer), pickled lists for inference results.
Rejected: pickling rows (what TFoS does through ``multiprocessing.Manager`` queues; 5-10x slower
and unreadable by the Rust side) and one IPC *stream* per connection (we need control frames
interleaved with the batches).
"""

from __future__ import annotations

import json
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

# Defined in hydrofeed.exceptions; still importable from here.
from hydrofeed.exceptions import TransportError as TransportError

# Frame kinds.
HELLO = 1  # feeder -> hub: JSON {"mode": "train"|"infer"|"control", "partition": int}
WELCOME = 2  # hub -> feeder: JSON {"rank": int, "state": "running"|"terminating"}
SCHEMA = 3  # feeder -> hub: Arrow IPC schema message
BATCH = 4  # feeder -> hub: Arrow IPC record batch message
END = 5  # feeder -> hub: end of this partition
ACK = 6  # hub -> feeder: JSON {"rows": n} every row of the partition was consumed
RESULTS = 7  # hub -> feeder: pickled list of inference results (in row order)
ERROR = 8  # either way: JSON {"error": str}
EOF = 9  # control -> hub: end of feed (no more partitions will come)
FILES = 10  # control -> hub: JSON: attach to this feeder's ring (file mode, ``files.py``)

_HDR = struct.Struct("<BI")
_MAX_FRAME = 1 << 31
_POOL_MIN = 1 << 16  # frames at least this large are received into Arrow pool memory


def _recv_exact(sock: socket.socket, n: int) -> memoryview:
    # Arrow pool memory, not a bytearray: no zero-fill pass over the (multi-MB) batch and the
    # allocator reuses freed blocks instead of faulting in fresh pages for every batch. The
    # record batch read from it is zero-copy and keeps the buffer alive.
    view = memoryview(pa.allocate_buffer(n)).cast("B") if n >= _POOL_MIN else memoryview(bytearray(n))
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise TransportError(f"peer closed the connection after {got} of {n} bytes")
        got += k
    return view


def send_frame(sock: socket.socket, kind: int, payload: bytes | memoryview | pa.Buffer = b"") -> None:
    """Writes one frame (header + payload) to ``sock``."""
    n = len(payload) if not isinstance(payload, pa.Buffer) else payload.size
    sock.sendall(_HDR.pack(kind, n))
    if n:
        sock.sendall(payload)


def recv_frame(sock: socket.socket) -> tuple[int, memoryview]:
    """Reads one frame; raises :class:`TransportError` on EOF or a malformed header."""
    kind, n = _HDR.unpack(_recv_exact(sock, _HDR.size))
    if kind < HELLO or kind > FILES or n > _MAX_FRAME:
        raise TransportError(f"malformed frame header (kind {kind}, length {n})")
    return kind, (_recv_exact(sock, n) if n else memoryview(b""))


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


@dataclass
class _Conn:
    sock: socket.socket
    mode: str
    partition: int
    received: int = 0
    consumed: int = 0
    ended: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


class Hub:
    """Listens on ``path`` inside the trainer process and queues what feeding tasks send.

    ``max_queued`` bounds the number of record batches held (backpressure: a feeding task blocks
    in ``sendall`` once the queue and the socket buffers are full, memory stays flat).
    """

    def __init__(self, path: str, rank: int, max_queued: int = 16) -> None:
        self.path = path
        self.rank = rank
        self._q: queue.Queue[Item] = queue.Queue(max_queued)
        self._conns: dict[int, _Conn] = {}
        self._next_id = 0
        self._lock = threading.Lock()
        self._terminating = threading.Event()
        self._closed = threading.Event()
        self.eof_received = threading.Event()
        self._srv: socket.socket | None = None
        self._thread: threading.Thread | None = None

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
        for c in conns:
            try:
                send_frame(c.sock, ERROR, _json({"error": f"trainer rank {self.rank} closed its feed"}))
            except OSError:
                pass
            c.sock.close()
        if self._srv is not None:
            self._srv.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    # -- consumer API (the DataFeed calls these)
    def get(self, timeout: float) -> Item | None:
        """Next item, or None after ``timeout`` seconds."""
        try:
            return self._q.get(timeout=timeout)
        except queue.Empty:
            return None

    def ack(self, conn_id: int, rows: int) -> None:
        """Marks ``rows`` rows of connection ``conn_id`` as consumed; acks a finished partition."""
        with self._lock:
            c = self._conns.get(conn_id)
        if c is None:
            return
        with c.lock:
            c.consumed += rows
            done = c.ended and c.mode == "train" and c.consumed >= c.received
        if done:
            self._finish(conn_id, c)

    def send_results(self, conn_id: int, objs: list[Any]) -> None:
        """Sends inference results for rows of ``conn_id`` (in row order)."""
        with self._lock:
            c = self._conns.get(conn_id)
        if c is None:
            return
        with c.lock:
            send_frame(c.sock, RESULTS, pickle.dumps(objs, protocol=5))
            c.consumed += len(objs)
            done = c.ended and c.consumed >= c.received
        if done:
            self._finish(conn_id, c)

    def terminate(self) -> None:
        """Ignore everything that still arrives (TFoS ``DataFeed.terminate``)."""
        self._terminating.set()
        while True:
            try:
                self._q.get_nowait()
            except queue.Empty:
                break
        with self._lock:
            conns = list(self._conns.items())
        for cid, c in conns:
            if c.mode == "train":
                with c.lock:
                    c.consumed = c.received
                    done = c.ended
                if done:
                    self._finish(cid, c)

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
    def _finish(self, conn_id: int, c: _Conn) -> None:
        with self._lock:
            if self._conns.pop(conn_id, None) is None:
                return
        try:
            send_frame(c.sock, ACK, _json({"rows": c.received}))
        except OSError:
            pass
        c.sock.close()

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
            sock.settimeout(None)
            threading.Thread(target=self._serve, args=(sock,), name="hydrofeed-hub-conn", daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        conn_id = -1
        try:
            kind, payload = recv_frame(sock)
            if kind != HELLO:
                raise TransportError(f"expected HELLO, got frame kind {kind}")
            hello = json.loads(bytes(payload))
            mode = hello.get("mode", "train")
            if mode == "control":
                kind, payload = recv_frame(sock)
                if kind == EOF:
                    self.end_of_feed()
                elif kind == FILES:
                    if self._terminating.is_set():
                        raise TransportError("its map_fun returned or called terminate(): it takes no file feed")
                    self._put(Item("files", message=bytes(payload).decode()))
                send_frame(sock, ACK, _json({"rows": 0}))
                sock.close()
                return
            if self._terminating.is_set() and mode == "infer":
                raise TransportError("its map_fun called terminate() or returned: it cannot answer inference rows")
            state = "terminating" if self._terminating.is_set() and mode == "train" else "running"
            send_frame(sock, WELCOME, _json({"rank": self.rank, "state": state}))
            with self._lock:
                conn_id = self._next_id
                self._next_id += 1
                c = _Conn(sock, mode, int(hello.get("partition", -1)))
                self._conns[conn_id] = c
            schema: pa.Schema | None = None
            while not self._closed.is_set():
                kind, payload = recv_frame(sock)
                if kind == SCHEMA:
                    schema = pa.ipc.read_schema(pa.py_buffer(payload))
                elif kind == BATCH:
                    if schema is None:
                        raise TransportError("record batch before schema")
                    rb = pa.ipc.read_record_batch(pa.py_buffer(payload), schema)
                    with c.lock:
                        c.received += rb.num_rows
                    if self._terminating.is_set() and mode == "train":
                        with c.lock:
                            c.consumed += rb.num_rows
                        continue
                    if not self._put(Item("batch", conn_id, rb, infer=mode == "infer")):
                        with c.lock:
                            c.consumed += rb.num_rows
                elif kind == END:
                    with c.lock:
                        c.ended = True
                        done = c.consumed >= c.received and (mode == "train" or c.received == 0)
                    if mode == "infer" and c.received > 0:
                        self._put(Item("end_partition", conn_id, infer=True))
                    if done:
                        self._finish(conn_id, c)
                    return
                else:
                    raise TransportError(f"unexpected frame kind {kind} from a feeding task")
        except (TransportError, OSError, ValueError, pa.ArrowInvalid) as e:
            with self._lock:
                self._conns.pop(conn_id, None)
            try:
                send_frame(sock, ERROR, _json({"error": f"trainer rank {self.rank}: bad feed: {e}"}))
            except OSError:
                pass
            sock.close()


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
        self.sock = sock
        try:
            send_frame(sock, HELLO, _json({"mode": mode, "partition": partition}))
            kind, payload = recv_frame(sock)
            if kind == ERROR:
                raise TransportError(json.loads(bytes(payload))["error"])
            if kind != WELCOME:
                raise TransportError(f"expected WELCOME from {path}, got frame kind {kind}")
        except BaseException:
            sock.close()
            raise
        info = json.loads(bytes(payload))
        self.rank: int = info["rank"]
        self.terminating: bool = info["state"] == "terminating"
        self._schema: pa.Schema | None = None

    def send(self, batch: pa.RecordBatch, ipc: pa.Buffer | None = None) -> None:
        """Sends one record batch (and the schema before the first one). ``ipc``: the batch's
        Arrow IPC message if the caller has it already (Spark-encoded DataFrame batches): sent
        as it is instead of serializing the batch again."""
        try:
            if self._schema is None or not batch.schema.equals(self._schema):
                self._schema = batch.schema
                send_frame(self.sock, SCHEMA, batch.schema.serialize())
            send_frame(self.sock, BATCH, ipc if ipc is not None else batch.serialize())
        except OSError as e:
            raise TransportError(self._peer_error(f"trainer rank {self.rank} went away while feeding: {e}")) from e

    def _peer_error(self, default: str) -> str:
        # The hub may have said why before closing.
        try:
            self.sock.settimeout(0.5)
            kind, payload = recv_frame(self.sock)
            if kind == ERROR:
                said: str = json.loads(bytes(payload))["error"]
                return said
        except (OSError, TransportError, ValueError):
            pass
        return default

    def finish(self, timeout: float) -> list[Any]:
        """Ends the partition and waits until the trainer consumed it (train) or answered every
        row (infer). Returns the inference results in row order."""
        try:
            send_frame(self.sock, END)
        except OSError as e:
            raise TransportError(self._peer_error(f"trainer rank {self.rank} went away: {e}")) from e
        results: list[Any] = []
        deadline = time.monotonic() + timeout
        self.sock.settimeout(1.0)
        while True:
            try:
                kind, payload = recv_frame(self.sock)
            except TimeoutError:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"Timeout while feeding partition: trainer rank {self.rank} did not consume it "
                        f"within feed_timeout={timeout}s"
                    ) from None
                continue
            except (OSError, TransportError) as e:
                raise TransportError(f"trainer rank {self.rank} went away before consuming the partition: {e}") from e
            if kind == RESULTS:
                results.extend(pickle.loads(payload))
            elif kind == ACK:
                return results
            elif kind == ERROR:
                raise TransportError(json.loads(bytes(payload))["error"])
            else:
                raise TransportError(f"unexpected frame kind {kind} from trainer rank {self.rank}")

    def close(self) -> None:
        """Closes the socket."""
        self.sock.close()


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
            raise TransportError(json.loads(bytes(reply))["error"])
    finally:
        sock.close()


def send_end_of_feed(path: str, timeout: float = 10.0) -> None:
    """Tells the hub on ``path`` that no more partitions will come."""
    _control(path, EOF, b"", timeout)


def send_files(path: str, msg: dict[str, Any], timeout: float = 10.0) -> None:
    """Tells the hub on ``path`` to read from a feeder's ring next (file mode)."""
    _control(path, FILES, _json(msg), timeout)
