"""Gang restarts: the cluster's nodes live and die together, and start again together.

A :class:`Gang` runs the nodes as one barrier job per *generation* in a thread of the driver.
When a node fails, the others are stopped at once (they may be blocked in a collective op with
it); with ``max_restarts`` the whole gang is started again as a new barrier job (generation
``g + 1``, a new run directory), up to ``max_restarts`` times, else the failure becomes the
cluster's error. Feeding on the driver follows the generations: a feed that a failure broke
waits for the gang's decision (:meth:`Gang.await_outcome`) and feeds the new gang again
(:meth:`Gang.feed_with_restarts`; file mode resumes instead, :func:`hydrofeed.spark.files.train_files`).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Literal

from hydrofeed.exceptions import TrainerFailedError
from hydrofeed.spark import failures as _failures
from hydrofeed.spark import node as _node
from hydrofeed.spark.control import Control, NodeState

logger = logging.getLogger(__name__)

#: What became of a generation after a feed broke (:meth:`Gang.await_outcome`).
Outcome = Literal["restarted", "failed", "healthy"]


class Gang:
    """The nodes of one cluster across its generations, and the driver's thread that runs them.

    ``server`` is the cluster's control server (made here: a failing node stops the others).
    :meth:`start` starts the thread, :meth:`wait_started` waits for the first generation."""

    def __init__(self, sc: Any, token: str, max_restarts: int) -> None:
        self.sc = sc
        self.max_restarts = max_restarts
        self.server = Control(token, on_failure=self._on_node_failure)
        #: The current generation (the attempt the barrier job runs now).
        self.gen = 0
        #: The newest generation whose every node was ready; ``gen_ready`` is notified with it.
        self.ready_gen = -1
        self.gen_ready = threading.Condition()
        #: Why the cluster gave up (no restart left), once it did.
        self.error: BaseException | None = None
        #: Every node of the last generation finished without a failure.
        self.done = False
        #: ``shutdown()`` began: a failure from now on is not restarted.
        self.shutting_down = False
        self.thread: threading.Thread | None = None
        self.cluster_meta: dict[str, Any] = {}
        self._node_rdd: Any = None
        self._on_ready: Callable[[list[dict[str, Any]]], None] = lambda infos: None

    # ------------------------------------------------------------------ the cluster thread

    def start(
        self,
        node_rdd: Any,
        cluster_meta: dict[str, Any],
        map_fun: Callable[..., Any],
        tf_args: Any,
        on_ready: Callable[[list[dict[str, Any]]], None],
    ) -> None:
        """Starts the thread that runs the barrier job of every generation. ``on_ready`` gets
        the nodes' infos (``TFCluster.cluster_info``) of each generation once all are ready."""
        self._node_rdd = node_rdd
        self.cluster_meta = cluster_meta
        self._on_ready = on_ready
        self.thread = threading.Thread(target=self._loop, args=(map_fun, tf_args), name="hydrofeed-cluster", daemon=True)
        self.thread.start()

    def _loop(self, map_fun: Callable[..., Any], tf_args: Any) -> None:
        from pyspark import cloudpickle

        fn_bytes = cloudpickle.dumps(map_fun)
        ctl = self.server
        n = self.cluster_meta["num_executors"]
        cluster_id = self.cluster_meta["id"]
        for attempt in range(self.max_restarts + 1):
            gen = attempt
            self.gen = gen
            job_error: BaseException | None = None
            self.sc.setJobGroup(f"hydrofeed-nodes-{cluster_id}-{gen}", f"hydrofeed nodes (generation {gen})", True)
            try:
                metas = self._node_rdd.barrier().mapPartitions(
                    _node.barrier_node_fn(self.cluster_meta, fn_bytes, tf_args, gen)
                ).collect()
                del metas
            except Exception as e:  # a barrier task failed (TF mode) or the stage could not start
                job_error = e
            if job_error is not None:
                ctl.stop_all(gen)
            # Wait until every node of this generation has reported its exit (or vanished).
            started = ctl.wait_for(lambda: len(ctl.gen_nodes(gen)) == n, 0 if job_error else 60)
            if started:
                ctl.wait_for(lambda: all(x.exited for x in ctl.gen_nodes(gen).values()), float("inf") if job_error is None else 60)
            failed = self.failed_node(gen)
            if failed is None and job_error is None:
                self.done = True
                break
            err: BaseException = (
                TrainerFailedError(failed, _failures.describe(failed))
                if failed is not None
                else RuntimeError(f"hydrofeed: the barrier stage of generation {gen} failed: {job_error}")
            )
            if attempt < self.max_restarts and not self.shutting_down:
                logger.warning("hydrofeed: %s -- restarting the cluster (%d of %d)", err, attempt + 1, self.max_restarts)
                ctl.stop_all(gen)
                continue
            self.error = err
            logger.error("%s", err)
            break
        with self.gen_ready:
            self.gen_ready.notify_all()

    def _on_node_failure(self, gen: int, rank: int) -> None:
        # Gang semantics: one node failing stops the others at once (they may be blocked in a
        # collective op with it and would never finish on their own).
        logger.error("hydrofeed: node rank %d failed (generation %d): stopping the other nodes", rank, gen)
        self.server.stop_all(gen, except_rank=rank)

    # ------------------------------------------------------------------ readiness

    def _node_infos(self, gen: int) -> list[dict[str, Any]]:
        """``TFCluster.cluster_info`` of a generation (call with ``server.cond`` held)."""
        return sorted(
            (dict(x.meta, tb_port=x.tb_port, supervisor_pid=x.pid) for x in self.server.gen_nodes(gen).values()),
            key=lambda m: m["executor_id"],
        )

    def wait_started(self, reservation_timeout: float) -> None:
        """Waits until every node of some generation is ready (``run()`` returns then), then
        follows the restarts in a thread of its own. Raises the cluster's error if it gave up,
        ``TimeoutError`` if the nodes did not all start within ``reservation_timeout``."""
        ctl = self.server
        num_executors = self.cluster_meta["num_executors"]

        def ready_gen() -> int | None:
            g = self.gen
            nodes = ctl.gen_nodes(g)
            if len(nodes) == num_executors and all(x.ready for x in nodes.values()):
                return g
            return None

        ok = ctl.wait_for(lambda: ready_gen() is not None or self.error is not None or self.done, reservation_timeout)
        if self.error is not None:
            ctl.close()
            raise self.error
        if not ok:
            ctl.stop_all(self.gen)
            self.sc.cancelJobGroup(f"hydrofeed-nodes-{self.cluster_meta['id']}-{self.gen}")
            raise TimeoutError(
                f"hydrofeed: {num_executors} nodes did not all start within reservation_timeout={reservation_timeout}s; "
                "does the application have that many free task slots (barrier mode needs them all at once)?"
            )
        with ctl.cond:
            g = self.gen
            self._on_ready(self._node_infos(g))
        self.ready_gen = g
        threading.Thread(target=self._track_ready, daemon=True).start()

    def _track_ready(self) -> None:
        """Follows restarts: marks each new generation ready and hands its nodes' infos on."""
        ctl = self.server
        while not self.done and self.error is None and not ctl._closed:
            g = self.ready_gen + 1

            def ready() -> bool:
                nodes = ctl.gen_nodes(g)
                return (
                    len(nodes) == self.cluster_meta["num_executors"] and all(x.ready for x in nodes.values())
                ) or self.done or self.error is not None

            if ctl.wait_for(ready, 1.0) and not self.done and self.error is None:
                with ctl.cond:
                    self._on_ready(self._node_infos(g))
                with self.gen_ready:
                    self.ready_gen = g
                    self.gen_ready.notify_all()
        with self.gen_ready:
            self.gen_ready.notify_all()

    # ------------------------------------------------------------------ failures and restarts

    def await_outcome(self, gen: int, timeout: float) -> Outcome:
        """After a feed on generation ``gen`` broke: ``"restarted"`` once a newer generation is
        ready, ``"failed"`` if the cluster gave up (or no decision came within ``timeout``),
        ``"healthy"`` if no node failed (the feed broke for a reason of its own)."""
        start = time.monotonic()
        deadline = start + timeout
        with self.gen_ready:
            while time.monotonic() < deadline:
                if self.ready_gen > gen:
                    return "restarted"
                if self.error is not None or self.done:
                    return "failed"
                # The feeding task may see a lost socket before the node's exit report arrives:
                # give the report a few seconds before blaming the job itself.
                if time.monotonic() - start > 3.0 and self.failed_node(gen) is None and not self._any_exited(gen):
                    return "healthy"  # the job failed for a reason of its own
                self.gen_ready.wait(0.2)
        return "failed"

    def feed_with_restarts(self, feed: Callable[[], None]) -> None:
        """Runs ``feed``; if a failure broke it and the gang restarted, runs it again whole."""
        while True:
            gen = self.gen
            try:
                feed()
                return
            except Exception as e:
                # A node failure surfaces in the feeding job as a lost socket or a cancelled job.
                # Wait (briefly) for the cluster thread to decide: restart or give up.
                outcome = self.await_outcome(gen, timeout=60.0)
                if outcome == "restarted":
                    logger.warning("hydrofeed: cluster restarted after a failure; feeding again from the first epoch")
                    continue
                if self.error is not None:
                    raise self.error from e
                failed = self.failed_node(gen)
                if failed is not None:
                    raise TrainerFailedError(failed, _failures.describe(failed)) from e
                raise

    def wait_settled(self, gen: int, timeout: float) -> bool:
        """Waits until every feeding node of generation ``gen`` exited, the cluster gave up or
        finished, or a restart replaced ``gen``; a failed node with a restart left waits for the
        restart. ``False`` if that did not happen within ``timeout``."""
        ctl = self.server
        feeding = self.feeding_ranks()

        def settled() -> bool:
            if self.error is not None or self.done or self.gen != gen:
                return True
            nodes = ctl.gen_nodes(gen)
            failed = self.failed_node_locked(gen)
            if failed is not None and gen >= self.max_restarts:
                return True  # no restart left: report now, stop the rest
            all_done = all(nodes.get(r) is not None and nodes[r].exited for r in feeding)
            return all_done and failed is None  # else a restart is coming: wait for it

        return ctl.wait_for(settled, timeout)

    def failed_node_locked(self, gen: int) -> NodeState | None:
        """The first node of ``gen`` that failed (call with ``server.cond`` held)."""
        failed = [n for n in self.server.gen_nodes(gen).values() if n.failed]
        return min(failed, key=lambda n: n.order) if failed else None

    def failed_node(self, gen: int) -> NodeState | None:
        """The first node of ``gen`` that failed."""
        with self.server.cond:
            return self.failed_node_locked(gen)

    def _any_exited(self, gen: int) -> bool:
        return any(n.exited for n in self.server.gen_nodes(gen).values())

    def raise_if_failed(self) -> None:
        """Raises the cluster's error, or :class:`TrainerFailedError` for a failed node of the
        current generation."""
        if self.error is not None:
            raise self.error
        n = self.failed_node(self.gen)
        if n is not None:
            raise TrainerFailedError(n, _failures.describe(n))

    # ------------------------------------------------------------------ roles

    def feeding_ranks(self) -> list[int]:
        """Every node but ps/evaluator (the master node may have any name, e.g. "chief")."""
        tmpl = self.cluster_meta["cluster_template"]
        return sorted(r for j, ids in tmpl.items() if j not in _node.NON_FEEDING_JOBS for r in ids)

    def ranks_of(self, jobs: tuple[str, ...]) -> list[int]:
        """The nodes of the given jobs (e.g. ``("ps", "evaluator")``)."""
        tmpl = self.cluster_meta["cluster_template"]
        return sorted(r for j in jobs for r in tmpl.get(j, []))
