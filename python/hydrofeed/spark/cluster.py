"""``TFCluster``: TensorFlowOnSpark's API on Spark barrier mode.

``run()`` starts one node per executor in a *barrier* stage (all start or none do), the nodes
exchange host/port/GPUs with ``BarrierTaskContext.allGather`` and build the cluster spec and
``TF_CONFIG`` themselves. The barrier job runs in a background thread of the driver so ``run()``
returns once every node is ready, as TFoS's does. ``train()``/``inference()`` feed RDDs and
DataFrames as Arrow record batches through :mod:`hydrofeed.spark.transport`; ``shutdown()`` ends
the feed, waits for the nodes and raises :class:`TrainerFailedError` naming the failing rank.

This module holds ``run()``, :class:`TFCluster` and the driver's cluster thread; what a feeding
task runs on a partition is in :mod:`hydrofeed.spark.tasks`, how a failed node is described in
:mod:`hydrofeed.spark.failures`, and ``train_files``' argument helpers in
:mod:`hydrofeed.spark.files`.
"""

from __future__ import annotations

import logging
import os
import secrets
import tempfile
import threading
import time
from typing import Any, Callable

# Defined in hydrofeed.exceptions; still importable from here.
from hydrofeed.exceptions import TrainerFailedError as TrainerFailedError
from hydrofeed.spark import failures as _failures
from hydrofeed.spark import node as _node
from hydrofeed.spark import tasks as _tasks
from hydrofeed.spark.control import Control, NodeState

logger = logging.getLogger(__name__)

#: Rows per Arrow record batch built by a feeding task from RDD rows.
FEED_BATCH_ROWS = int(os.environ.get("HYDROFEED_FEED_BATCH_ROWS", "1024"))


class InputMode:
    """How data reaches the trainers (TFoS values)."""

    TENSORFLOW = 0  #: the trainers read their own data (``hydrofeed.read``, tf.data, ...)
    SPARK = 1  #: Spark feeds RDD/DataFrame partitions with ``TFCluster.train``/``inference``


class TFCluster:
    """A started cluster (what ``run()`` returns); TFoS's attributes and methods."""

    sc: Any = None  #: SparkContext
    defaultFS: str = ""  #: default filesystem, e.g. ``file://`` or ``hdfs://nn:8020``
    working_dir: str = ""  #: the driver's working directory
    num_executors: int = 0  #: number of nodes (one per executor)
    nodeRDD: Any = None  #: ``sc.parallelize(range(num_executors), num_executors)``
    cluster_id: str = ""  #: unique id of this cluster
    cluster_info: list[dict[str, Any]] = []  #: one dict per node: executor_id, host, port, job_name, task_index, gpus, tb_port
    cluster_meta: dict[str, Any] = {}  #: id, cluster_template, num_executors, default_fs, working_dir, server_addr, ...
    input_mode: int = InputMode.TENSORFLOW
    queues: list[str] = ["input", "output", "error"]  #: TFoS compatibility only
    server: Any = None  #: the driver's control server (TFoS: reservation.Server)

    def __init__(self) -> None:
        self._gen = 0
        self._gen_ready = threading.Condition()
        self._ready_gen = -1
        self._error: BaseException | None = None
        self._done = False
        self._shutting_down = False
        self._thread: threading.Thread | None = None
        self._max_restarts = 0
        self._map_fun: Callable[..., Any] | None = None
        self._tb_url: str | None = None

    # ------------------------------------------------------------------ feeding

    def train(self, dataRDD: Any, num_epochs: int = 1, feed_timeout: float = 600, qname: str = "input") -> None:
        """Feeds an RDD or a DataFrame ``num_epochs`` times into the trainers (InputMode.SPARK).

        Returns when every row was taken by a trainer. ``num_epochs=0`` means 10, as in TFoS."""
        assert self.input_mode == InputMode.SPARK, "TFCluster.train() requires InputMode.SPARK"
        assert qname in self.queues, f"Unknown queue: {qname}"
        assert num_epochs >= 0, "num_epochs cannot be negative"
        if num_epochs == 0:
            num_epochs = 10
        try:
            from pyspark.streaming import DStream
        except ImportError:  # pragma: no cover
            DStream = None  # type: ignore[assignment,misc]
        if DStream is not None and isinstance(dataRDD, DStream):
            dataRDD.foreachRDD(lambda rdd: self._feed_with_restarts(lambda: self._feed_rdd(rdd, 1, feed_timeout)))
            return
        if _tasks.is_dataframe(dataRDD):
            self._feed_with_restarts(lambda: self._feed_df(dataRDD, num_epochs, feed_timeout))
        else:
            self._feed_with_restarts(lambda: self._feed_rdd(dataRDD, num_epochs, feed_timeout))

    def inference(self, dataRDD: Any, feed_timeout: float = 600, qname: str = "input") -> Any:
        """Returns an RDD with one result per input row, in order, computed by the trainers'
        ``feed.batch_results``. Lazy, like any RDD. DataFrames travel as Arrow."""
        assert self.input_mode == InputMode.SPARK, "TFCluster.inference() requires InputMode.SPARK"
        assert qname in self.queues, f"Unknown queue: {qname}"
        self._raise_if_failed()
        fn = _tasks.feed_fn(self.cluster_id, self._gen, "infer", feed_timeout, FEED_BATCH_ROWS)
        if _tasks.is_dataframe(dataRDD):
            batches, schema = _tasks.arrow_batches(dataRDD)
            return batches.mapPartitionsWithIndex(lambda i, it: fn(i, _tasks.decode(it, schema), arrow=True))
        return dataRDD.mapPartitionsWithIndex(lambda i, it: fn(i, it, arrow=False))

    def train_files(
        self,
        uri: str,
        format: str | None = None,
        columns: list[str] | None = None,
        num_epochs: int = 1,
        shuffle: bool = True,
        seed: int | None = None,
        batch_size: int = 256,
        remainder: str = "drop",
        feed_timeout: float = 600,
        resume: Any = None,
        allow_changed_input: bool = False,
        skip_errors: bool = False,
        memory_mb: int = 512,
        decode_threads: int = 0,
        schema: Any = None,
        shuffle_buffer: int = 0,
        cycle_length: int | None = None,
        order: str | None = None,
        tls: bool = True,
        snapshot: int | str | None = None,
    ) -> dict[str, Any]:
        """File mode: feeders on the executors read ``uri`` (local or ``hdfs://``; a file,
        directory or glob of Parquet, ORC, Avro or TFRecord) and stream it through a shared-memory
        ring into each node's ``DataFeed``; Spark moves no data.

        A coordinator in the driver deals row ranges so that every worker gets exactly the same
        number of ``batch_size`` batches per epoch (``remainder``: ``drop`` the rows that do not
        fill a step on every worker, ``pad`` with rows of the epoch again, or ``wrap`` into the
        next epoch), ``num_epochs`` times (0 means 10, as in ``train``); ``shuffle`` orders the
        splits (files, row groups, stripes, blocks) by ``seed`` per epoch. ``resume``: a state
        from ``feed.state()`` on a trainer (dict, JSON text or a path) or returned by an earlier
        call: only the rows not consumed yet are fed. The state holds a fingerprint of its input
        (every file's path, size and modification time): a resume over files that changed is
        refused naming the first, unless ``allow_changed_input``, which resumes over the files
        that did not change exactly once and reads changed and new files whole. ``schema`` (a
        ``pyarrow.Schema``): read with it, as ``hydrofeed.read(schema=)`` does (TFRecord: instead
        of inferring it; Avro: the reader schema). Returns the final state (every row acked).

        ``order`` (``"fixed"``, the default with ``remainder="drop"``, or ``"dynamic"``): under the
        fixed order every worker's rows and their order follow from ``seed``, run after run, and
        ``resume`` continues each worker's stream at the exact row; ``shuffle_buffer`` rows are
        mixed at a time from ``cycle_length`` (default 8) parts of each worker's share read in
        parallel (docs/arch/order.md).

        ``tls``: the coordinator's gRPC (feeders and trainers on the executors to the driver)
        is TLS with a CA made for the job, as well as the job token; ``False``: plain gRPC with
        the token alone. On a secure HDFS the driver obtains delegation tokens for ``uri`` and
        gives them to the coordinator and the feeders (docs/hdfs.md).

        ``uri`` may be a Delta Lake table (a directory holding ``_delta_log/``): its live files
        at ``snapshot`` (a version or an RFC 3339 time; default the newest when the coordinator
        plans), which every feeder reads and a ``resume`` reads again (docs/formats.md, "Tables").

        Raises :class:`TrainerFailedError` if a node fails, :class:`hydrofeed.spark.files.FeedFilesError`
        if a feeder or the coordinator fails (naming the rank, host, file and byte offset), and
        ``TimeoutError`` if no row was consumed for ``feed_timeout`` seconds. With
        ``max_restarts``, a restarted gang resumes from the rows consumed before the failure."""
        from hydrofeed.spark import files as _files

        assert self.input_mode == InputMode.SPARK, "TFCluster.train_files() requires InputMode.SPARK (nodes with a data feed)"
        if format is not None and format not in _files.FORMATS:
            raise ValueError(f"format must be one of {_files.FORMATS}, not {format!r}")
        if remainder not in _files.REMAINDERS:
            raise ValueError(f"remainder must be one of {_files.REMAINDERS}, not {remainder!r}")
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if num_epochs < 0:
            raise ValueError("num_epochs cannot be negative")
        if isinstance(columns, str):
            columns = [c.strip() for c in columns.split(",") if c.strip()]
        opts = {
            "uri": uri,
            "format": format,
            "columns": list(columns) if columns else None,
            "epochs": num_epochs or 10,
            "shuffle": bool(shuffle),
            "seed": int(seed) if seed is not None else (secrets.randbits(63) if shuffle else 0),
            "batch_size": int(batch_size),
            "remainder": remainder,
            "feed_timeout": float(feed_timeout),
            "skip_errors": bool(skip_errors),
            "memory_mb": int(memory_mb),
            "decode_threads": int(decode_threads),
            "schema": _files.schema_text(schema) if schema is not None else None,
            "order": _files.order_args(order, shuffle_buffer, cycle_length),
            "tls": bool(tls),
            "allow_changed_input": bool(allow_changed_input),
            "snapshot": None if snapshot is None else str(snapshot),
        }
        state = _files.state_text(resume)
        while True:
            gen = self._gen
            holder: dict[str, str | None] = {"state": state}
            try:
                return self._feed_files(opts, holder)
            except Exception as e:
                outcome = self._await_outcome(gen, timeout=60.0) if not isinstance(e, (_files.FeedFilesError, TimeoutError)) else "failed"
                if outcome == "restarted":
                    state = holder["state"] or state
                    logger.warning(
                        "hydrofeed: cluster restarted after a failure; the file feed resumes from the rows consumed before it: %s",
                        _files.state_summary(state),
                    )
                    continue
                if self._error is not None and not isinstance(e, _files.FeedFilesError):
                    raise self._error from e
                raise

    def _feed_files(self, o: dict[str, Any], holder: dict[str, str | None]) -> dict[str, Any]:
        """One file feed on the current generation; ``holder["state"]`` gets the coordinator's
        state if it is interrupted (for a restart)."""
        import json

        from hydrofeed.spark import files as _files

        self._raise_if_failed()
        gen = self._gen
        ranks = self._feeding_ranks()
        ctl = self.server
        job = secrets.token_hex(4)
        resume_path = None
        if holder["state"]:
            fd, resume_path = tempfile.mkstemp(prefix="hydrofeed-resume-", suffix=".json")
            with os.fdopen(fd, "w") as f:
                f.write(holder["state"])
        tokens = _files.hdfs_delegation_tokens(self.sc, o["uri"])
        try:
            coord = _files.Coordinator(
                o["uri"], len(ranks), o["batch_size"], o["epochs"], o["seed"], o["shuffle"], o["remainder"],
                host=self.cluster_meta["driver_addr"][0], resume=resume_path, fmt=o["format"], schema=o.get("schema"),
                order=o.get("order"), hdfs_tokens=tokens, tls=o["tls"],
                allow_changed_input=o.get("allow_changed_input", False), snapshot=o.get("snapshot"),
            )  # fmt: skip
        finally:
            if resume_path:
                os.unlink(resume_path)
        logger.info("hydrofeed: file feed %s of %s to %d workers (coordinator %s)", job, o["uri"], len(ranks), coord.addr)
        finished = False
        coord.notify_exit(ctl.cond)
        try:
            for i, r in enumerate(ranks):
                msg = {"t": "files", "job": job, "coordinator": coord.addr, "token": coord.token, "input": o["uri"],
                       "data_rank": i, "workers": len(ranks), "hdfs_tokens": tokens,
                       "tls_ca": coord.tls_ca, "snapshot": coord.snapshot}  # fmt: skip
                msg.update({k: o[k] for k in ("format", "columns", "batch_size", "feed_timeout", "skip_errors", "memory_mb", "decode_threads", "schema")})
                ctl.send(gen, r, msg)
            t0 = last_t = time.monotonic()
            last_acked = -1
            next_probe = t0
            def feeders_done() -> bool:
                nodes = ctl.gen_nodes(gen)
                return all(r in nodes and nodes[r].feeders.get(job, {}).get("code") == 0 for r in ranks)

            while True:
                code = coord.poll()
                if code is None and feeders_done():
                    # Every feeder left after its end of feed, so every row was acked and no
                    # call to the coordinator is in flight: no need to wait for its linger.
                    coord.interrupt()
                    code = 0 if coord.state() else coord.poll()
                if code == 0:
                    finished = True
                    break
                self._check_file_feed(gen, job, coord, code)
                now = time.monotonic()
                if now >= next_probe:
                    next_probe = now + 5.0
                    acked = coord.rows_acked()
                    if acked is not None and acked != last_acked:
                        if last_acked >= 0:
                            logger.info("hydrofeed: file feed %s: %d rows consumed, %.0f rows/s", job, acked, acked / max(now - t0, 1e-9))
                        last_acked, last_t = acked, now
                    elif now - last_t > o["feed_timeout"]:
                        raise TimeoutError(
                            f"hydrofeed: file feed of {o['uri']}: no row consumed for feed_timeout={o['feed_timeout']}s "
                            f"({max(last_acked, 0)} rows so far); the trainers stopped reading?"
                        )
                ctl.wait_for(
                    lambda: coord.poll() is not None or feeders_done() or self._gen != gen or self._failed_node_locked(gen) is not None,
                    0.2,
                )
            state: dict[str, Any] = json.loads(coord.state() or "{}")
            if not state.get("finished"):
                raise _files.FeedFilesError(f"hydrofeed: the coordinator of file feed {job} stopped before the end of the feed: {state}")
            # The feeders leave once their trainer read the end of this feed.
            ctl.wait_for(lambda: all(job in ctl.gen_nodes(gen)[r].feeders for r in ranks if r in ctl.gen_nodes(gen)), 30)
            logger.info("hydrofeed: file feed %s done in %.1fs", job, time.monotonic() - t0)
            return state
        finally:
            if not finished:
                holder["state"] = coord.interrupt() or holder["state"]
            coord.close()

    def _check_file_feed(self, gen: int, job: str, coord: Any, code: int | None) -> None:
        """Raises if a feeder, the coordinator or a node of the feed failed."""
        from hydrofeed.spark import files as _files

        ctl = self.server

        def failed_feeder() -> tuple[int, dict[str, Any]] | None:
            for r, n in sorted(ctl.gen_nodes(gen).items()):
                f = n.feeders.get(job)
                if f is not None and f["code"] != 0 and not f["stopped"]:
                    return r, f
            return None

        with ctl.cond:
            bad = failed_feeder()
            node = self._failed_node_locked(gen)
        if bad is None and node is not None:
            # The trainer usually fails *because* its feeder did (PeerLostError): give the
            # feeder's report, which names the file and offset, a moment to arrive.
            ctl.wait_for(lambda: failed_feeder() is not None, 2.0)
            with ctl.cond:
                bad = failed_feeder()
        if bad is not None and node is not None and not _failures.lost_its_feeder(node):
            bad = None  # the trainer failed (killed, raised) and its feeder saw it go: blame the trainer
        if bad is not None:
            r, f = bad
            m = ctl.gen_nodes(gen)[r].meta
            errs = [x for x in f["tail"] if "rror" in x]
            why = _failures.error_summary(f["tail"]) or (errs[-1] if errs else f"exit code {f['code']}")
            tail = "\n".join("    " + x for x in f["tail"][-15:])
            raise _files.FeedFilesError(
                f"hydrofeed: the feeder of rank {r} ({m.get('job_name')}:{m.get('task_index')} on {m.get('host')}) "
                f"failed (stage: reading/decoding {coord.uri}): {why}; last output lines:\n{tail}"
            )
        if node is not None:
            raise TrainerFailedError(node, _failures.describe(node))
        if self._gen != gen:
            raise RuntimeError("hydrofeed: the cluster restarted during the file feed")
        if code is not None:
            tail = "\n".join("    " + x for x in list(coord.tail)[-15:])
            raise _files.FeedFilesError(f"hydrofeed: the coordinator exited with code {code} (stage: coordinating the file feed); last output lines:\n{tail}")

    def _feed_rdd(self, rdd: Any, num_epochs: int, feed_timeout: float) -> None:
        fn = _tasks.feed_fn(self.cluster_id, self._gen, "train", feed_timeout, FEED_BATCH_ROWS)
        union = rdd if num_epochs == 1 else self.sc.union([rdd] * num_epochs)
        self._run_feed_job(lambda: union.mapPartitionsWithIndex(lambda i, it: fn(i, it, arrow=False)).count())

    def _feed_df(self, df: Any, num_epochs: int, feed_timeout: float) -> None:
        fn = _tasks.feed_fn(self.cluster_id, self._gen, "train", feed_timeout, FEED_BATCH_ROWS)
        batches, schema = _tasks.arrow_batches(df)
        if num_epochs == 1:
            self._run_feed_job(lambda: batches.mapPartitionsWithIndex(lambda i, it: fn(i, _tasks.decode(it, schema), arrow=True)).count())
            return
        # Spark's Arrow encoding of the rows (JVM, per element for array columns) is most of the
        # cost of feeding a DataFrame: encode once, feed the encoded batches num_epochs times.
        from pyspark import StorageLevel

        batches.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            union = self.sc.union([batches] * num_epochs)
            self._run_feed_job(lambda: union.mapPartitionsWithIndex(lambda i, it: fn(i, _tasks.decode(it, schema), arrow=True)).count())
        finally:
            batches.unpersist(blocking=False)

    def _run_feed_job(self, job: Callable[[], Any]) -> None:
        """Runs a feeding job in a job group that is cancelled at once if a node fails."""
        self._raise_if_failed()
        group = f"hydrofeed-feed-{self.cluster_id}-{secrets.token_hex(4)}"
        self.sc.setJobGroup(group, "hydrofeed feed" + (f" (TensorBoard {self._tb_url})" if self._tb_url else ""), True)
        gen = self._gen
        stop = threading.Event()

        def watch() -> None:
            while not stop.wait(0.2):
                if self._failed_node(gen) is not None or self._error is not None:
                    self.sc.cancelJobGroup(group)
                    return

        w = threading.Thread(target=watch, daemon=True)
        w.start()
        try:
            job()
        finally:
            stop.set()
            w.join()
            self.sc.setLocalProperty("spark.jobGroup.id", None)

    def _feed_with_restarts(self, feed: Callable[[], None]) -> None:
        while True:
            gen = self._gen
            try:
                feed()
                return
            except Exception as e:
                # A node failure surfaces in the feeding job as a lost socket or a cancelled job.
                # Wait (briefly) for the cluster thread to decide: restart or give up.
                outcome = self._await_outcome(gen, timeout=60.0)
                if outcome == "restarted":
                    logger.warning("hydrofeed: cluster restarted after a failure; feeding again from the first epoch")
                    continue
                if self._error is not None:
                    raise self._error from e
                failed = self._failed_node(gen)
                if failed is not None:
                    raise TrainerFailedError(failed, _failures.describe(failed)) from e
                raise

    def _await_outcome(self, gen: int, timeout: float) -> str:
        start = time.monotonic()
        deadline = start + timeout
        with self._gen_ready:
            while time.monotonic() < deadline:
                if self._ready_gen > gen:
                    return "restarted"
                if self._error is not None or self._done:
                    return "failed"
                # The feeding task may see a lost socket before the node's exit report arrives:
                # give the report a few seconds before blaming the job itself.
                if time.monotonic() - start > 3.0 and self._failed_node(gen) is None and not self._any_exited(gen):
                    return "healthy"  # the job failed for a reason of its own
                self._gen_ready.wait(0.2)
        return "failed"

    # ------------------------------------------------------------------ shutdown

    def shutdown(self, ssc: Any = None, grace_secs: float = 0, timeout: float = 259200) -> None:
        """Ends the feed, waits for the trainers, stops ps/evaluator nodes, and raises
        :class:`TrainerFailedError` if a node failed (``timeout`` < 0: wait forever)."""
        logger.info("Waiting for TensorFlow nodes to complete...")
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        if ssc is not None:
            ssc.stop(stopSparkContext=False, stopGraceFully=True)
        ctl = self.server
        try:
            if self.input_mode == InputMode.SPARK:
                self._send_eof()
            # Wait for worker/chief nodes of the current generation (restarts may happen meanwhile).
            while True:
                gen = self._gen
                feeding = self._feeding_ranks()
                def settled(gen: int = gen, feeding: list[int] = feeding) -> bool:
                    if self._error is not None or self._done or self._gen != gen:
                        return True
                    nodes = ctl.gen_nodes(gen)
                    failed = self._failed_node_locked(gen)
                    if failed is not None and gen >= self._max_restarts:
                        return True  # no restart left: report now, stop the rest
                    all_done = all(nodes.get(r) is not None and nodes[r].exited for r in feeding)
                    return all_done and failed is None  # else a restart is coming: wait for it

                ok = ctl.wait_for(settled, _left(deadline))
                if not ok:
                    raise TimeoutError(f"hydrofeed: nodes still running after shutdown timeout={timeout}s; stopping them")
                if self._gen != gen and self._error is None:
                    if self.input_mode == InputMode.SPARK:
                        self._send_eof()
                    continue
                break
            if grace_secs > 0 and self._error is None:
                time.sleep(grace_secs)
            self._shutting_down = True
            for r in self._ranks_of(("ps", "evaluator")):
                ctl.send(self._gen, r, {"t": "stop"})
            if self._thread is not None:
                self._thread.join(_left(deadline) if deadline else None)
                if self._thread.is_alive():
                    raise TimeoutError(f"hydrofeed: cluster did not stop within shutdown timeout={timeout}s")
            if self._error is not None:
                raise self._error
        except BaseException:
            self._shutting_down = True
            ctl.stop_all(self._gen)
            if self._thread is not None:
                self._thread.join(30)
            raise
        finally:
            self._shutting_down = True
            if not (self._thread and self._thread.is_alive()):
                ctl.close()
        logger.info("Shutting down cluster")

    def tensorboard_url(self) -> str | None:
        """``http://host:port`` of the TensorBoard started on the chief, if any."""
        return self._tb_url

    # ------------------------------------------------------------------ internals

    def _send_eof(self) -> None:
        for r in self._feeding_ranks():
            self.server.send(self._gen, r, {"t": "eof"})

    def _feeding_ranks(self) -> list[int]:
        """Every node but ps/evaluator (the master node may have any name, e.g. "chief")."""
        tmpl = self.cluster_meta["cluster_template"]
        return sorted(r for j, ids in tmpl.items() if j not in _node.NON_FEEDING_JOBS for r in ids)

    def _ranks_of(self, jobs: tuple[str, ...]) -> list[int]:
        tmpl = self.cluster_meta["cluster_template"]
        return sorted(r for j in jobs for r in tmpl.get(j, []))

    def _any_exited(self, gen: int) -> bool:
        return any(n.exited for n in self.server.gen_nodes(gen).values())

    def _failed_node_locked(self, gen: int) -> NodeState | None:
        failed = [n for n in self.server.gen_nodes(gen).values() if n.failed]
        return min(failed, key=lambda n: n.order) if failed else None

    def _failed_node(self, gen: int) -> NodeState | None:
        with self.server.cond:
            return self._failed_node_locked(gen)

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise self._error
        n = self._failed_node(self._gen)
        if n is not None:
            raise TrainerFailedError(n, _failures.describe(n))

    def _on_node_failure(self, gen: int, rank: int) -> None:
        # Gang semantics: one node failing stops the others at once (they may be blocked in a
        # collective op with it and would never finish on their own).
        logger.error("hydrofeed: node rank %d failed (generation %d): stopping the other nodes", rank, gen)
        self.server.stop_all(gen, except_rank=rank)

    def _loop(self, map_fun: Callable[..., Any], tf_args: Any) -> None:
        from pyspark import cloudpickle

        fn_bytes = cloudpickle.dumps(map_fun)
        ctl = self.server
        n = self.num_executors
        for attempt in range(self._max_restarts + 1):
            gen = attempt
            self._gen = gen
            job_error: BaseException | None = None
            self.sc.setJobGroup(f"hydrofeed-nodes-{self.cluster_id}-{gen}", f"hydrofeed nodes (generation {gen})", True)
            try:
                metas = self.nodeRDD.barrier().mapPartitions(
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
            failed = self._failed_node(gen)
            if failed is None and job_error is None:
                self._done = True
                break
            err: BaseException = (
                TrainerFailedError(failed, _failures.describe(failed))
                if failed is not None
                else RuntimeError(f"hydrofeed: the barrier stage of generation {gen} failed: {job_error}")
            )
            if attempt < self._max_restarts and not self._shutting_down:
                logger.warning("hydrofeed: %s -- restarting the cluster (%d of %d)", err, attempt + 1, self._max_restarts)
                ctl.stop_all(gen)
                continue
            self._error = err
            logger.error("%s", err)
            break
        with self._gen_ready:
            self._gen_ready.notify_all()


def _left(deadline: float | None) -> float:
    return float("inf") if deadline is None else max(0.0, deadline - time.monotonic())


def run(
    sc: Any,
    map_fun: Callable[..., Any],
    tf_args: Any,
    num_executors: int,
    num_ps: int = 0,
    tensorboard: bool = False,
    input_mode: int = InputMode.SPARK,
    log_dir: str | None = None,
    driver_ps_nodes: bool = False,
    master_node: str | None = None,
    reservation_timeout: float = 600,
    queues: list[str] | None = None,
    eval_node: bool = False,
    release_port: bool = True,
    max_restarts: int = 0,
) -> TFCluster:
    """Starts the cluster and runs ``map_fun(tf_args, ctx)`` on every node (TFoS ``TFCluster.run``).

    ``num_executors`` nodes: ``num_ps`` parameter servers, one ``master_node`` (e.g. ``"chief"``)
    if named, one evaluator if ``eval_node``, the rest workers. ``max_restarts``: how many times
    the whole gang is restarted after a node fails (map_fun should resume from its checkpoint).
    """
    queues = list(queues) if queues is not None else ["input", "output", "error"]
    if driver_ps_nodes:
        raise NotImplementedError(
            "driver_ps_nodes is not supported: barrier mode starts every node as a Spark task; "
            "add the ps count to num_executors instead"
        )
    if eval_node and input_mode != InputMode.TENSORFLOW:
        raise ValueError("running evaluator nodes is only supported in InputMode.TENSORFLOW")
    num_master = 1 if master_node else 0
    num_eval = 1 if eval_node else 0
    num_workers = max(num_executors - num_ps - num_eval - num_master, 0)
    if num_ps + num_master + num_eval + num_workers != num_executors:
        raise ValueError(f"TensorFlow cluster requires {num_ps + num_master + num_eval + num_workers} nodes, but only {num_executors} executors available")
    if num_master + num_workers == 0:
        raise ValueError("TensorFlow cluster requires at least one worker or master/chief node")
    executors = list(range(num_executors))
    template: dict[str, list[int]] = {}
    if num_ps:
        template["ps"], executors = executors[:num_ps], executors[num_ps:]
    if master_node:
        template[master_node], executors = executors[:1], executors[1:]
    if eval_node:
        template["evaluator"], executors = executors[:1], executors[1:]
    if num_workers:
        template["worker"] = executors[:num_workers]
    logger.info("cluster_template: %s", template)

    default_fs = sc._jsc.hadoopConfiguration().get("fs.defaultFS")
    if default_fs.startswith("file://") and len(default_fs) > 7 and default_fs.endswith("/"):
        default_fs = default_fs[:-1]

    cluster = TFCluster()
    cluster.sc = sc
    cluster.defaultFS = default_fs
    cluster.working_dir = os.getcwd()
    cluster.num_executors = num_executors
    cluster.input_mode = input_mode
    cluster.queues = queues
    cluster.cluster_id = secrets.token_hex(6)
    cluster._max_restarts = max_restarts
    token = secrets.token_hex(16)
    cluster.server = Control(token, on_failure=cluster._on_node_failure)
    driver_host = os.environ.get("SPARK_LOCAL_IP") or sc.getConf().get("spark.driver.host") or _node.local_host()
    cluster.cluster_meta = {
        "id": cluster.cluster_id,
        "cluster_template": template,
        "num_executors": num_executors,
        "default_fs": default_fs,
        "working_dir": cluster.working_dir,
        "server_addr": (driver_host, cluster.server.port),
        "driver_addr": (driver_host, cluster.server.port),
        "token": token,
        "release_port": release_port,
        "input_mode": input_mode,
        "reservation_timeout": reservation_timeout,
        "tensorboard": tensorboard,
        "log_dir": log_dir,
    }
    cluster.nodeRDD = sc.parallelize(range(num_executors), num_executors)
    cluster._thread = threading.Thread(target=cluster._loop, args=(map_fun, tf_args), name="hydrofeed-cluster", daemon=True)
    cluster._thread.start()

    # Wait for every node of some generation to be ready (or for the cluster to give up).
    ctl = cluster.server

    def ready_gen() -> int | None:
        g = cluster._gen
        nodes = ctl.gen_nodes(g)
        if len(nodes) == num_executors and all(x.ready for x in nodes.values()):
            return g
        return None

    ok = ctl.wait_for(lambda: ready_gen() is not None or cluster._error is not None or cluster._done, reservation_timeout)
    if cluster._error is not None:
        cluster.server.close()
        raise cluster._error
    if not ok:
        ctl.stop_all(cluster._gen)
        sc.cancelJobGroup(f"hydrofeed-nodes-{cluster.cluster_id}-{cluster._gen}")
        raise TimeoutError(
            f"hydrofeed: {num_executors} nodes did not all start within reservation_timeout={reservation_timeout}s; "
            "does the application have that many free task slots (barrier mode needs them all at once)?"
        )
    with ctl.cond:
        g = cluster._gen
        cluster.cluster_info = sorted(
            (dict(x.meta, tb_port=x.tb_port, supervisor_pid=x.pid) for x in ctl.gen_nodes(g).values()), key=lambda m: m["executor_id"]
        )
    cluster._ready_gen = g
    threading.Thread(target=_track_ready, args=(cluster,), daemon=True).start()
    for info in cluster.cluster_info:
        if info.get("tb_port"):
            cluster._tb_url = f"http://{info['host']}:{info['tb_port']}"
            logger.info("TensorBoard running at: %s", cluster._tb_url)
            sc.setJobDescription(f"hydrofeed cluster {cluster.cluster_id}, TensorBoard at {cluster._tb_url}")
    if tensorboard and cluster._tb_url is None:
        logger.warning("hydrofeed: tensorboard=True but no TensorBoard started (is the tensorboard package installed on the executors?)")
    logger.info("hydrofeed: all %d nodes started (cluster %s)", num_executors, cluster.cluster_id)
    return cluster


def _track_ready(cluster: TFCluster) -> None:
    """Follows restarts: marks each new generation ready and refreshes ``cluster_info``."""
    ctl = cluster.server
    while not cluster._done and cluster._error is None and not ctl._closed:
        g = cluster._ready_gen + 1

        def ready() -> bool:
            nodes = ctl.gen_nodes(g)
            return (
                len(nodes) == cluster.num_executors and all(x.ready for x in nodes.values())
            ) or cluster._done or cluster._error is not None

        if ctl.wait_for(ready, 1.0) and not cluster._done and cluster._error is None:
            with ctl.cond:
                cluster.cluster_info = sorted(
                    (dict(x.meta, tb_port=x.tb_port, supervisor_pid=x.pid) for x in ctl.gen_nodes(g).values()), key=lambda m: m["executor_id"]
                )
            with cluster._gen_ready:
                cluster._ready_gen = g
                cluster._gen_ready.notify_all()
    with cluster._gen_ready:
        cluster._gen_ready.notify_all()
