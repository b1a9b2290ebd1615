"""Driver-side control server: node supervisors report here, the driver commands them.

One TCP connection per node supervisor, JSON lines, authenticated by the cluster's random
token. Node -> driver: ``hello`` (meta), ``ready`` (tb_port), ``exit`` (code, stopped, tail),
``feeder_exit`` (job, code, tail: file mode). Driver -> node: ``eof`` (end of feed), ``stop``,
``files`` (file mode: start a feeder). A connection that closes without ``exit`` means
the supervisor itself died (executor lost): reported as a lost node.

It is also where the nodes meet: each barrier task sends its host, reserved port and GPUs
(``_gather``) and gets every task's back once all arrived, in place of
``BarrierTaskContext.allGather`` (a fixed second). Beyond that the driver needs a channel for
status and end-of-feed, which Spark does not offer for finished barrier tasks.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

logger = logging.getLogger(__name__)


@dataclass
class NodeState:
    """What the driver knows about one node of one generation."""

    rank: int
    meta: dict[str, Any]
    sock: socket.socket
    ready: bool = False
    tb_port: int = 0
    exit_code: int | None = None
    exited: bool = False
    stopped: bool = False  # the driver asked it to stop (not a failure of its own)
    lost: bool = False
    tail: list[str] = field(default_factory=list)
    order: int = 0  # arrival order of the exit report
    pid: int = 0  # the supervisor's pid on its host
    feeders: dict[str, dict[str, Any]] = field(default_factory=dict)  # file-feed job -> {"code", "tail"}

    @property
    def failed(self) -> bool:
        """Exited on its own with an error, or vanished."""
        return self.exited and (self.lost or (self.exit_code != 0 and not self.stopped))


class Control:
    """The server; ``on_failure(gen, rank)`` is called (once per node) when a node fails."""

    def __init__(self, token: str, on_failure: Callable[[int, int], None] | None = None) -> None:
        self.token = token
        self.on_failure = on_failure
        self._srv = socket.create_server(("", 0), backlog=128)
        self._srv.settimeout(0.2)
        self.port = self._srv.getsockname()[1]
        self.cond = threading.Condition()
        self.nodes: dict[int, dict[int, NodeState]] = {}
        self.gathers: dict[int, dict[int, dict[str, Any]]] = {}  # gen -> rank -> meta (the rendezvous)
        self._exits = 0
        self._closed = False
        self._thread = threading.Thread(target=self._accept, name="hydrofeed-control", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Closes the server and every node connection (supervisors then stop their trainers)."""
        self._closed = True
        self._thread.join(2)
        self._srv.close()
        with self.cond:
            for gen in self.nodes.values():
                for n in gen.values():
                    try:
                        n.sock.close()
                    except OSError:
                        pass

    def send(self, gen: int, rank: int, msg: dict[str, Any]) -> bool:
        """Sends ``msg`` to a node; False if it is gone."""
        with self.cond:
            n = self.nodes.get(gen, {}).get(rank)
            if n is None or n.exited:
                return False
            if msg.get("t") == "stop":
                n.stopped = True
        try:
            n.sock.sendall((json.dumps(msg) + "\n").encode())
            return True
        except OSError:
            return False

    def stop_all(self, gen: int, except_rank: int | None = None) -> None:
        """Asks every node of ``gen`` (but one) to stop."""
        with self.cond:
            ranks = [r for r in self.nodes.get(gen, {}) if r != except_rank]
        for r in ranks:
            self.send(gen, r, {"t": "stop"})

    def wait_for(self, pred: Callable[[], bool], timeout: float) -> bool:
        """Waits (under the lock) until ``pred()``; False on timeout."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while not pred():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(min(left, 0.5))
            return True

    def gen_nodes(self, gen: int) -> dict[int, NodeState]:
        """The nodes of one generation (call under ``cond`` for a stable view)."""
        return self.nodes.setdefault(gen, {})

    # -- internals
    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._srv.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            threading.Thread(target=self._serve, args=(conn,), name="hydrofeed-control-conn", daemon=True).start()

    def _gather(self, conn: socket.socket, msg: dict[str, Any]) -> None:
        """The rendezvous of one barrier task: answers every task's meta once all ``n`` arrived.

        Replaces ``BarrierTaskContext.allGather``, which costs a fixed second (Spark polls its
        RPC future with ``Thread.sleep(1000)``)."""
        gen, rank, n = int(msg["gen"]), int(msg["rank"]), int(msg["n"])
        timeout = float(msg.get("timeout", 600))
        with self.cond:
            metas = self.gathers.setdefault(gen, {})
            metas[rank] = msg["meta"]
            self.cond.notify_all()
        ok = self.wait_for(lambda: len(self.gathers.get(gen, {})) >= n or self._closed, timeout)
        with self.cond:
            got = [self.gathers[gen][r] for r in sorted(self.gathers.get(gen, {}))]
        reply = {"metas": got} if ok and len(got) >= n else {"error": f"only {len(got)} of {n} nodes arrived within {timeout}s"}
        conn.sendall((json.dumps(reply) + "\n").encode())

    def _serve(self, conn: socket.socket) -> None:
        f = conn.makefile("rb")
        node: NodeState | None = None
        gen = -1
        try:
            hello = json.loads(f.readline() or b"{}")
            if hello.get("t") == "gather" and hello.get("token") == self.token:
                self._gather(conn, hello)
                return
            if hello.get("t") != "hello" or hello.get("token") != self.token:
                logger.warning("control: rejected a connection without this cluster's token")
                conn.close()
                return
            gen, rank = int(hello["gen"]), int(hello["rank"])
            node = NodeState(rank, hello["meta"], conn, pid=int(hello.get("pid", 0)))
            with self.cond:
                self.gen_nodes(gen)[rank] = node
                self.cond.notify_all()
            for line in f:
                msg = json.loads(line)
                with self.cond:
                    if msg["t"] == "ready":
                        node.ready, node.tb_port = True, int(msg.get("tb_port", 0))
                    elif msg["t"] == "exit":
                        node.exit_code = msg["code"]
                        node.stopped = node.stopped or bool(msg.get("stopped"))
                        node.tail = list(msg.get("tail", []))
                        self._exits += 1
                        node.order = self._exits
                        node.exited = True
                    elif msg["t"] == "feeder_exit":
                        node.feeders[str(msg["job"])] = {
                            "code": int(msg["code"]),
                            "stopped": bool(msg.get("stopped")),
                            "tail": list(msg.get("tail", [])),
                        }
                    self.cond.notify_all()
                if msg["t"] == "exit":
                    break
        except (OSError, ValueError, KeyError) as e:
            logger.debug("control connection error: %s", e)
        finally:
            if node is not None:
                with self.cond:
                    if not node.exited:
                        node.lost = not self._closed
                        node.exited = True
                        self._exits += 1
                        node.order = self._exits
                    failed = node.failed
                    self.cond.notify_all()
                if failed and self.on_failure is not None:
                    self.on_failure(gen, node.rank)
            try:
                conn.close()
            except OSError:
                pass
