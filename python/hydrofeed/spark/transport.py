"""Feeding transport between Spark feeding tasks and the trainer on the same host.

One Unix stream socket per trainer (``<run_dir>/rank<k>.sock``), served by a :class:`Hub`
thread inside the trainer process. Batches travel as Arrow IPC, through shared memory where
both sides can: the feeding task creates one sealed ``memfd`` per connection, hands it to the
hub (SCM_RIGHTS, frame ``SHM``) and writes each batch into a slot of it as an IPC stream; the
socket then carries only where the batch lies (frame ``SLOT``), and the trainer reads it in
place. A slot comes back when the last Arrow buffer over it is released, so a batch the trainer
keeps is never written over: while it holds too much of the region, batches go over the socket
(frame ``BATCH``) instead. The memory goes with the last process mapping it (``kill -9``
included); nothing is created in ``/dev/shm``.

The rest of :mod:`hydrofeed.spark` only sees two small interfaces:

- trainer side: ``Hub`` -- ``start()``, ``get(timeout) -> Item``, ``ack(conn_id, rows)``,
  ``send_results(conn_id, objs)``, ``terminate()``, ``end_of_feed()``, ``close()``;
- feeding side: :func:`open_channel` -> ``Channel`` -- ``send(batch)``, ``finish(timeout)``
  (returns the results of an inference partition), ``close()``.

Wire format (both directions): ``[u8 kind][u32 length][payload]``. Payloads: JSON for control,
``Schema.serialize()`` before a socket batch, then ``RecordBatch.serialize()`` (Arrow IPC
messages, read back zero-copy from the received buffer), pickled lists for inference results.
Rejected: pickling rows (what TFoS does through ``multiprocessing.Manager`` queues; 5-10x slower
and unreadable by the Rust side) and one IPC *stream* per connection (we need control frames
interleaved with the batches).
"""

from __future__ import annotations

import collections
import fcntl
import json
import mmap
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
SHM = 11  # feeder -> hub: JSON {"size": n} with a memfd attached: the connection's shared memory
SLOT = 12  # feeder -> hub: struct (slot, offset, length): a batch in the shared memory (IPC stream)

_HDR = struct.Struct("<BI")
_SLOT = struct.Struct("<IQQ")
_FLAGS = 4096  # slot flags at the start of a region (at most this many batches in flight)
_ALIGN = 64  # slot offsets: Arrow's alignment
_REGION_MIN = 16 << 20
_REGION_MAX = 64 << 20
_REGION_BATCHES = 48  # a region holds this many batches the size of the first one
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


def _recv_header(sock: socket.socket, fds: list[int]) -> bytes:
    """A frame header, appending to ``fds`` the descriptors sent with it."""
    got = b""
    while len(got) < _HDR.size:
        data, anc, _, _ = sock.recvmsg(_HDR.size - len(got), socket.CMSG_SPACE(4 * 4))
        for level, typ, blob in anc:
            if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                fds.extend(struct.unpack(f"{len(blob) // 4}i", blob[: len(blob) - len(blob) % 4]))
        if not data:
            raise TransportError(f"peer closed the connection after {len(got)} of {_HDR.size} bytes")
        got += data
    return got


def recv_frame(sock: socket.socket, fds: list[int] | None = None) -> tuple[int, memoryview]:
    """Reads one frame; raises :class:`TransportError` on EOF or a malformed header. With
    ``fds``, descriptors sent with the frame are appended to it (otherwise the kernel drops them)."""
    header = _recv_header(sock, fds) if fds is not None else _recv_exact(sock, _HDR.size)
    kind, n = _HDR.unpack(header)
    if kind < HELLO or kind > SLOT or n > _MAX_FRAME:
        raise TransportError(f"malformed frame header (kind {kind}, length {n})")
    return kind, (_recv_exact(sock, n) if n else memoryview(b""))


def _json(obj: Any) -> bytes:
    return json.dumps(obj).encode()


# ----------------------------------------------------------------------------- shared memory

# Linux: anonymous sealed memory files and descriptor passing.
_SHM = hasattr(os, "memfd_create") and hasattr(fcntl, "F_ADD_SEALS") and hasattr(socket, "send_fds")


class _Region:
    """A feeding connection's shared memory: batches written by the feeding task, read in place
    by the trainer.

    An anonymous ``memfd`` (nothing in ``/dev/shm`` to leave behind: the memory goes when the
    last process mapping it does, ``kill -9`` included), sealed against shrinking and growing so
    that a peer cannot truncate it under the other's mapping. Layout: ``_FLAGS`` one-byte slot
    flags, then the data area. A batch is one contiguous slot of the data area, used as a ring:
    the feeding task allocates at its head and reclaims from its tail, in order, the slots whose
    flag the trainer set; the trainer sets a slot's flag when the last Arrow buffer over it is
    released (a batch the trainer keeps keeps its slot).
    """

    def __init__(self, mm: mmap.mmap, size: int) -> None:
        self.size = size
        self.view = memoryview(mm)  # it and `base` keep the mapping alive
        self.flags = self.view[:_FLAGS]
        self.base = pa.py_buffer(mm)

    @classmethod
    def create(cls, size: int) -> tuple[_Region, int]:
        """A new region and its file descriptor (the caller sends it, then closes it)."""
        fd = os.memfd_create("hydrofeed-feed", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(fd, size)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
            return cls(mmap.mmap(fd, size), size), fd
        except BaseException:
            os.close(fd)
            raise

    @classmethod
    def attach(cls, fd: int, size: int) -> _Region:
        """Maps a peer's region: only a sealed memfd of the size it says."""
        try:
            seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
            if seals & (fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW) != fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW:
                raise TransportError("the feeding task's shared memory is not sealed against resizing")
            if os.fstat(fd).st_size != size or size <= _FLAGS:
                raise TransportError(f"the feeding task's shared memory is {os.fstat(fd).st_size} bytes, it said {size}")
            return cls(mmap.mmap(fd, size), size)
        except OSError as e:
            raise TransportError(f"cannot map the feeding task's shared memory: {e}") from e
        finally:
            os.close(fd)

    def slot(self, slot: int, offset: int, length: int) -> pa.Buffer:
        """The trainer's view of a slot: its flag is set when the last buffer over it goes."""
        if offset < _FLAGS or length <= 0 or offset + length > self.size or not 0 <= slot < _FLAGS:
            raise TransportError(f"a batch at bytes {offset}..{offset + length} of a {self.size}-byte region (slot {slot})")
        return pa.foreign_buffer(self.base.address + offset, length, base=_Release(self, slot))


class _Release:
    """Sets a slot's flag when the trainer's last buffer over the slot is released."""

    __slots__ = ("region", "slot")

    def __init__(self, region: _Region, slot: int) -> None:
        self.region = region
        self.slot = slot

    def __del__(self) -> None:
        self.region.flags[self.slot] = 1


class _Slots:
    """The feeding task's side of a region: allocation at the head, reclaim from the tail."""

    def __init__(self, region: _Region) -> None:
        self.region = region
        self.head = _FLAGS  # next free byte of the data area
        self.busy: collections.deque[tuple[int, int, int]] = collections.deque()  # (slot, offset, end)
        self.next_slot = 0

    def _reclaim(self) -> None:
        flags = self.region.flags
        while self.busy and flags[self.busy[0][0]]:
            flags[self.busy[0][0]] = 0
            self.busy.popleft()

    def take(self, length: int) -> tuple[int, int] | None:
        """(slot, offset) of ``length`` free bytes, or None while the trainer holds too much."""
        self._reclaim()
        if len(self.busy) == _FLAGS:
            return None
        length = -(-length // _ALIGN) * _ALIGN
        size = self.region.size
        if not self.busy:
            offset = _FLAGS
        else:
            first, last = self.busy[0][1], self.busy[-1][1]
            if last >= first:  # in use: [first, head); free: [head, size) and [_FLAGS, first)
                offset = self.head if self.head + length <= size else _FLAGS
                if offset == _FLAGS and offset + length > first:
                    return None
            else:  # wrapped: free only [head, first)
                offset = self.head
                if offset + length > first:
                    return None
        if offset + length > size:
            return None
        slot = self.next_slot
        self.next_slot = (slot + 1) % _FLAGS
        self.busy.append((slot, offset, offset + length))
        self.head = offset + length
        return slot, offset

    def release(self, slot: int) -> None:
        """Frees a slot whose batch was sent some other way after all."""
        self.region.flags[slot] = 1


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
        fds: list[int] = []
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
            send_frame(sock, WELCOME, _json({"rank": self.rank, "state": state, "shm": _SHM}))
            with self._lock:
                conn_id = self._next_id
                self._next_id += 1
                c = _Conn(sock, mode, int(hello.get("partition", -1)))
                self._conns[conn_id] = c
            schema: pa.Schema | None = None
            region: _Region | None = None
            while not self._closed.is_set():
                kind, payload = recv_frame(sock, fds)
                if kind == SHM and len(fds) == 1 and region is None:
                    size = json.loads(bytes(payload)).get("size")
                    if not isinstance(size, int):
                        raise TransportError(f"shared memory of size {size!r}")
                    region = _Region.attach(fds.pop(), size)
                    continue
                if fds:  # descriptors nobody asked for (closed below)
                    raise TransportError(f"file descriptors sent with frame kind {kind}")
                if kind == SCHEMA:
                    schema = pa.ipc.read_schema(pa.py_buffer(payload))
                elif kind in (BATCH, SLOT):
                    if kind == SLOT:
                        if region is None:
                            raise TransportError("a shared-memory batch before the shared memory")
                        rb = pa.ipc.open_stream(region.slot(*_SLOT.unpack(payload))).read_next_batch()
                    elif schema is None:
                        raise TransportError("record batch before schema")
                    else:
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
        except (TransportError, OSError, ValueError, AttributeError, pa.ArrowInvalid) as e:
            with self._lock:
                self._conns.pop(conn_id, None)
            try:
                send_frame(sock, ERROR, _json({"error": f"trainer rank {self.rank}: bad feed: {e}"}))
            except OSError:
                pass
            sock.close()
        finally:
            for fd in fds:  # sent with a frame that failed
                os.close(fd)


# ----------------------------------------------------------------------------- feeding side


class Channel:
    """A feeding task's connection to one trainer's hub."""

    def __init__(
        self, path: str, mode: str, partition: int, connect_timeout: float = 30.0, shared_memory: bool = True
    ) -> None:
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
        # Batches go through shared memory where both sides can (else, or while the trainer
        # holds the whole region, over the socket).
        self._shm: bool = shared_memory and bool(info.get("shm")) and _SHM
        self._slots: _Slots | None = None

    def send(self, batch: pa.RecordBatch, ipc: pa.Buffer | None = None) -> None:
        """Sends one record batch: into the shared memory where it fits, else over the socket
        (the schema before the first one). ``ipc``: the batch's Arrow IPC message if the caller
        has it already (Spark-encoded DataFrame batches): over the socket it is sent as it is
        instead of serializing the batch again."""
        try:
            if self._shm and self._send_shared(batch):
                return
            if self._schema is None or not batch.schema.equals(self._schema):
                self._schema = batch.schema
                send_frame(self.sock, SCHEMA, batch.schema.serialize())
            send_frame(self.sock, BATCH, ipc if ipc is not None else batch.serialize())
        except OSError as e:
            raise TransportError(self._peer_error(f"trainer rank {self.rank} went away while feeding: {e}")) from e

    def _send_shared(self, batch: pa.RecordBatch) -> bool:
        """Writes the batch into the shared memory as an IPC stream and sends where it lies;
        False where it does not fit now (the caller sends it over the socket)."""
        need = len(batch.schema.serialize()) + pa.ipc.get_record_batch_size(batch) + 8 + _ALIGN
        if self._slots is None:
            size = min(max(_REGION_MIN, _REGION_BATCHES * need), _REGION_MAX)
            try:
                region, fd = _Region.create(_FLAGS + size)
            except OSError:
                self._shm = False
                return False
            try:
                socket.send_fds(self.sock, [_HDR.pack(SHM, len(p := _json({"size": region.size}))) + p], [fd])
            finally:
                os.close(fd)
            self._slots = _Slots(region)
        got = self._slots.take(need)
        if got is None:
            return False
        slot, offset = got
        sink = pa.FixedSizeBufferWriter(pa.py_buffer(self._slots.region.view[offset : offset + need]))
        try:
            with pa.ipc.new_stream(sink, batch.schema) as w:
                w.write_batch(batch)
        except (pa.ArrowInvalid, OSError):  # larger than its size said: over the socket instead
            self._slots.release(slot)
            return False
        send_frame(self.sock, SLOT, _SLOT.pack(slot, offset, sink.tell()))
        return True

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


def open_channel(
    path: str, mode: str, partition: int, connect_timeout: float = 30.0, shared_memory: bool = True
) -> Channel:
    """Connects a feeding task to the hub listening on ``path``; ``shared_memory=False`` sends
    every batch over the socket."""
    return Channel(path, mode, partition, connect_timeout, shared_memory)


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
