"""``TFCluster``: TensorFlowOnSpark's API on Spark barrier mode.

``run()`` starts one node per executor in a *barrier* stage (all start or none do); the nodes
exchange host/port/GPUs through the driver's control server (each barrier task sends its own to
:class:`~hydrofeed.spark.control.Control` and gets every task's back once all arrived; in place
of ``BarrierTaskContext.allGather``, which costs a fixed second; a one-node cluster has nothing
to gather) and build the cluster spec and ``TF_CONFIG`` themselves. The barrier job runs in a
background thread of the driver so ``run()`` returns once every node is ready, as TFoS's does.
``train()``/``inference()`` feed RDDs and DataFrames as Arrow record batches through
:mod:`hydrofeed.spark.hub`; ``shutdown()`` ends the feed, waits for the nodes and raises
:class:`TrainerFailedError` naming the failing rank.

This module holds the TFoS-compatible front: ``run()``, :class:`TFCluster` and
:class:`InputMode`. The nodes' barrier job, its thread and the gang restarts are in
:mod:`hydrofeed.spark.gang`; what a feeding task runs on a partition is in
:mod:`hydrofeed.spark.tasks`, how a failed node is described in :mod:`hydrofeed.spark.failures`,
and file mode's driver (``train_files``) in :mod:`hydrofeed.spark.files`.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import time
from typing import Any, Callable

from hydrofeed.exceptions import ArgumentError

# Defined in hydrofeed.exceptions; still importable from here.
from hydrofeed.exceptions import TrainerFailedError as TrainerFailedError
from hydrofeed.spark import node as _node
from hydrofeed.spark import tasks as _tasks
from hydrofeed.spark.gang import Gang

logger = logging.getLogger(__name__)

#: Rows per Arrow record batch built by a feeding task from RDD rows.
FEED_BATCH_ROWS = int(os.environ.get("HYDROFEED_FEED_BATCH_ROWS", "1024"))


class InputMode:
    """How data reaches the trainers (TFoS values)."""

    TENSORFLOW = 0  #: the trainers read their own data (``hydrofeed.read``, tf.data, ...)
    SPARK = 1  #: Spark feeds RDD/DataFrame partitions with ``TFCluster.train``/``inference``


class TFCluster:
    """A started cluster (what ``run()`` returns); TFoS's attributes and methods."""

    #: The nodes and their restarts (set by ``run()``).
    _gang: Gang

    def __init__(self) -> None:
        self.sc: Any = None  #: SparkContext
        self.defaultFS: str = ""  #: default filesystem, e.g. ``file://`` or ``hdfs://nn:8020``
        self.working_dir: str = ""  #: the driver's working directory
        self.num_executors: int = 0  #: number of nodes (one per executor)
        self.nodeRDD: Any = None  #: ``sc.parallelize(range(num_executors), num_executors)``
        self.cluster_id: str = ""  #: unique id of this cluster
        #: one dict per node: executor_id, host, port, job_name, task_index, gpus, tb_port
        self.cluster_info: list[dict[str, Any]] = []
        #: id, cluster_template, num_executors, default_fs, working_dir, server_addr, ...
        self.cluster_meta: dict[str, Any] = {}
        self.input_mode: int = InputMode.TENSORFLOW
        self.queues: list[str] = ["input", "output", "error"]  #: TFoS compatibility only
        self.server: Any = None  #: the driver's control server (TFoS: reservation.Server)
        self._tb_url: str | None = None

    # ------------------------------------------------------------------ feeding

    def _check_feed(self, method: str, qname: str) -> None:
        if self.input_mode != InputMode.SPARK:
            raise ArgumentError(f"TFCluster.{method}() requires InputMode.SPARK")
        if qname not in self.queues:
            raise ArgumentError(f"Unknown queue: {qname}")

    def train(self, dataRDD: Any, num_epochs: int = 1, feed_timeout: float = 600, qname: str = "input") -> None:
        """Feeds an RDD or a DataFrame ``num_epochs`` times into the trainers (InputMode.SPARK).

        Returns when every row was taken by a trainer. ``num_epochs=0`` means 10, as in TFoS.
        Raises :class:`~hydrofeed.exceptions.ArgumentError` (an ``AssertionError`` as well, as
        TFoS's checks) in another input mode, for an unknown ``qname`` or a negative
        ``num_epochs``."""
        self._check_feed("train", qname)
        if num_epochs < 0:
            raise ArgumentError("num_epochs cannot be negative")
        if num_epochs == 0:
            num_epochs = 10
        try:
            from pyspark.streaming import DStream
        except ImportError:  # pragma: no cover
            DStream = None  # type: ignore[assignment,misc]
        if DStream is not None and isinstance(dataRDD, DStream):
            dataRDD.foreachRDD(lambda rdd: self._gang.feed_with_restarts(lambda: self._feed_rdd(rdd, 1, feed_timeout)))
            return
        if _tasks.is_dataframe(dataRDD):
            self._gang.feed_with_restarts(lambda: self._feed_df(dataRDD, num_epochs, feed_timeout))
        else:
            self._gang.feed_with_restarts(lambda: self._feed_rdd(dataRDD, num_epochs, feed_timeout))

    def inference(self, dataRDD: Any, feed_timeout: float = 600, qname: str = "input") -> Any:
        """Returns an RDD with one result per input row, in order, computed by the trainers'
        ``feed.batch_results``. Lazy, like any RDD. DataFrames travel as Arrow."""
        self._check_feed("inference", qname)
        self._gang.raise_if_failed()
        fn = _tasks.feed_fn(self.cluster_id, self._gang.gen, "infer", feed_timeout, FEED_BATCH_ROWS)
        if _tasks.is_dataframe(dataRDD):
            batches, schema = _tasks.arrow_batches(dataRDD)
            return batches.mapPartitionsWithIndex(lambda i, it: fn(i, _tasks.decode(it, schema), _tasks.ARROW))
        return dataRDD.mapPartitionsWithIndex(lambda i, it: fn(i, it, _tasks.ROWS))

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
        filter: str | None = None,
        images: str | None = None,
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

        ``filter``: only the rows this SQL predicate holds for are fed (as ``hydrofeed.read(filter=)``,
        docs/formats.md "Filters"); the coordinator counts them once, equal steps and exactly-once
        count them, and a ``resume`` must give the same filter.
        ``images``: image columns decoded by the feeders into ``uint8`` tensor columns, as
        ``hydrofeed.read(images=)`` (docs/formats.md, "Images").

        Raises :class:`TrainerFailedError` if a node fails, :class:`hydrofeed.spark.files.FeedFilesError`
        if a feeder or the coordinator fails (naming the rank, host, file and byte offset), and
        ``TimeoutError`` if no row was consumed for ``feed_timeout`` seconds, and
        :class:`~hydrofeed.exceptions.ArgumentError` (a ``ValueError``) for a bad argument. With
        ``max_restarts``, a restarted gang resumes from the rows consumed before the failure
        (:func:`hydrofeed.spark.files.train_files` is the driver's loop)."""
        from hydrofeed.spark import files as _files

        if self.input_mode != InputMode.SPARK:
            raise ArgumentError("TFCluster.train_files() requires InputMode.SPARK (nodes with a data feed)")
        options = _files.FileFeedOptions.of(
            uri, format=format, columns=columns, num_epochs=num_epochs, shuffle=shuffle, seed=seed,
            batch_size=batch_size, remainder=remainder, feed_timeout=feed_timeout,
            allow_changed_input=allow_changed_input, skip_errors=skip_errors, memory_mb=memory_mb,
            decode_threads=decode_threads, schema=schema, shuffle_buffer=shuffle_buffer,
            cycle_length=cycle_length, order=order, tls=tls, snapshot=snapshot, filter=filter, images=images,
        )  # fmt: skip
        return _files.train_files(self._gang, options, resume)

    def _feed_rdd(self, rdd: Any, num_epochs: int, feed_timeout: float) -> None:
        fn = _tasks.feed_fn(self.cluster_id, self._gang.gen, "train", feed_timeout, FEED_BATCH_ROWS)
        form = _tasks.ROWS
        pickled = _tasks.pickled_source(rdd)
        if pickled is not None:
            rdd, batched = pickled
            form = _tasks.PICKLED_LISTS if batched else _tasks.PICKLED_ROWS
        union = rdd if num_epochs == 1 else self.sc.union([rdd] * num_epochs)
        self._run_feed_job(lambda: union.mapPartitionsWithIndex(lambda i, it: fn(i, it, form)).count())

    def _feed_df(self, df: Any, num_epochs: int, feed_timeout: float) -> None:
        fn = _tasks.feed_fn(self.cluster_id, self._gang.gen, "train", feed_timeout, FEED_BATCH_ROWS)
        batches, schema = _tasks.arrow_batches(df)
        if num_epochs == 1:
            self._run_feed_job(lambda: batches.mapPartitionsWithIndex(lambda i, it: fn(i, _tasks.decode(it, schema), _tasks.ARROW)).count())
            return
        # Spark's Arrow encoding of the rows (JVM, per element for array columns) is most of the
        # cost of feeding a DataFrame: encode once, feed the encoded batches num_epochs times.
        from pyspark import StorageLevel

        batches.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            union = self.sc.union([batches] * num_epochs)
            self._run_feed_job(lambda: union.mapPartitionsWithIndex(lambda i, it: fn(i, _tasks.decode(it, schema), _tasks.ARROW)).count())
        finally:
            batches.unpersist(blocking=False)

    def _run_feed_job(self, job: Callable[[], Any]) -> None:
        """Runs a feeding job in a job group that is cancelled at once if a node fails."""
        g = self._gang
        g.raise_if_failed()
        group = f"hydrofeed-feed-{self.cluster_id}-{secrets.token_hex(4)}"
        self.sc.setJobGroup(group, "hydrofeed feed" + (f" (TensorBoard {self._tb_url})" if self._tb_url else ""), True)
        gen = g.gen
        stop = threading.Event()

        def watch() -> None:
            while not stop.wait(0.2):
                if g.failed_node(gen) is not None or g.error is not None:
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

    # ------------------------------------------------------------------ shutdown

    def shutdown(self, ssc: Any = None, grace_secs: float = 0, timeout: float = 259200) -> None:
        """Ends the feed, waits for the trainers, stops ps/evaluator nodes, and raises
        :class:`TrainerFailedError` if a node failed (``timeout`` < 0: wait forever)."""
        logger.info("Waiting for TensorFlow nodes to complete...")
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        if ssc is not None:
            ssc.stop(stopSparkContext=False, stopGraceFully=True)
        g = self._gang
        ctl = g.server
        try:
            if self.input_mode == InputMode.SPARK:
                self._send_eof()
            # Wait for worker/chief nodes of the current generation (restarts may happen meanwhile).
            while True:
                gen = g.gen
                if not g.wait_settled(gen, _left(deadline)):
                    raise TimeoutError(f"hydrofeed: nodes still running after shutdown timeout={timeout}s; stopping them")
                if g.gen != gen and g.error is None:
                    if self.input_mode == InputMode.SPARK:
                        self._send_eof()
                    continue
                break
            if grace_secs > 0 and g.error is None:
                time.sleep(grace_secs)
            g.shutting_down = True
            for r in g.ranks_of(("ps", "evaluator")):
                ctl.send(g.gen, r, {"t": "stop"})
            if g.thread is not None:
                g.thread.join(_left(deadline) if deadline else None)
                if g.thread.is_alive():
                    raise TimeoutError(f"hydrofeed: cluster did not stop within shutdown timeout={timeout}s")
            if g.error is not None:
                raise g.error
        except BaseException:
            g.shutting_down = True
            ctl.stop_all(g.gen)
            if g.thread is not None:
                g.thread.join(30)
            raise
        finally:
            g.shutting_down = True
            if not (g.thread and g.thread.is_alive()):
                ctl.close()
        logger.info("Shutting down cluster")

    def tensorboard_url(self) -> str | None:
        """``http://host:port`` of the TensorBoard started on the chief, if any."""
        return self._tb_url

    # ------------------------------------------------------------------ internals

    def _send_eof(self) -> None:
        g = self._gang
        for r in g.feeding_ranks():
            g.server.send(g.gen, r, {"t": "eof"})

    def _set_cluster_info(self, infos: list[dict[str, Any]]) -> None:
        self.cluster_info = infos


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

    Raises :class:`~hydrofeed.exceptions.ArgumentError` (a ``ValueError``) if the nodes do not
    add up to ``num_executors`` or leave no worker, or for an evaluator outside
    ``InputMode.TENSORFLOW``; ``TimeoutError`` if they do not all start within
    ``reservation_timeout``.
    """
    queues = list(queues) if queues is not None else ["input", "output", "error"]
    if driver_ps_nodes:
        raise NotImplementedError(
            "driver_ps_nodes is not supported: barrier mode starts every node as a Spark task; "
            "add the ps count to num_executors instead"
        )
    if eval_node and input_mode != InputMode.TENSORFLOW:
        raise ArgumentError("running evaluator nodes is only supported in InputMode.TENSORFLOW")
    num_master = 1 if master_node else 0
    num_eval = 1 if eval_node else 0
    num_workers = max(num_executors - num_ps - num_eval - num_master, 0)
    if num_ps + num_master + num_eval + num_workers != num_executors:
        raise ArgumentError(f"TensorFlow cluster requires {num_ps + num_master + num_eval + num_workers} nodes, but only {num_executors} executors available")
    if num_master + num_workers == 0:
        raise ArgumentError("TensorFlow cluster requires at least one worker or master/chief node")
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
    token = secrets.token_hex(16)
    cluster._gang = gang = Gang(sc, token, max_restarts)
    cluster.server = gang.server
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
    gang.start(cluster.nodeRDD, cluster.cluster_meta, map_fun, tf_args, on_ready=cluster._set_cluster_info)
    # Wait for every node of some generation to be ready (or for the cluster to give up).
    gang.wait_started(reservation_timeout)
    for info in cluster.cluster_info:
        if info.get("tb_port"):
            cluster._tb_url = f"http://{info['host']}:{info['tb_port']}"
            logger.info("TensorBoard running at: %s", cluster._tb_url)
            sc.setJobDescription(f"hydrofeed cluster {cluster.cluster_id}, TensorBoard at {cluster._tb_url}")
    if tensorboard and cluster._tb_url is None:
        logger.warning("hydrofeed: tensorboard=True but no TensorBoard started (is the tensorboard package installed on the executors?)")
    logger.info("hydrofeed: all %d nodes started (cluster %s)", num_executors, cluster.cluster_id)
    return cluster
