"""The feeding tasks of ``TFCluster.train(rdd|df)`` and ``TFCluster.inference()``: what a Spark
task runs on one partition (:func:`feed_fn`: send its rows to a trainer on this host through
:mod:`hydrofeed.spark.hub`, return the count or the trainer's results), and a DataFrame
as the Arrow record batches Spark encodes itself (:func:`arrow_batches`, :func:`decode`).
"""

from __future__ import annotations

import glob
import itertools
import os
from typing import Any, Callable

from hydrofeed.spark import node as _node


def is_dataframe(x: Any) -> bool:
    """Whether ``x`` is a DataFrame (classic or Spark Connect): fed as Arrow, not as rows."""
    try:
        from pyspark.sql import DataFrame
    except ImportError:  # pragma: no cover
        return False
    if isinstance(x, DataFrame):
        return True
    try:  # Spark Connect
        from pyspark.sql.connect.dataframe import DataFrame as CDF

        return isinstance(x, CDF)
    except ImportError:
        return False


def arrow_batches(df: Any) -> tuple[Any, Any]:
    """A DataFrame as an RDD of Arrow IPC record-batch messages, plus their Arrow schema.

    Spark itself encodes each partition as Arrow (``Dataset.toArrowBatchRdd``, the same code
    ``toPandas`` and ``mapInArrow`` use), so rows are never pickled one by one and pandas is
    not needed. ``toArrowBatchRdd`` is ``private[sql]`` in Scala (public in bytecode): if a
    Spark version hides it, we fall back to ``mapInArrow`` (which needs pandas installed)."""
    from pyspark.serializers import NoOpSerializer
    from pyspark.sql.pandas.types import to_arrow_schema

    try:
        from pyspark.core.rdd import RDD
    except ImportError:  # pyspark 3.x
        from pyspark.rdd import RDD  # type: ignore[no-redef]
    schema = to_arrow_schema(df.schema)
    try:
        jrdd = df._jdf.toArrowBatchRdd().toJavaRDD()
    except Exception:  # noqa: BLE001 - py4j raises its own types

        def to_ipc(it: Any) -> Any:
            import pyarrow as pa

            for b in it:
                yield pa.record_batch([pa.array([b.serialize().to_pybytes()], pa.binary())], names=["ipc"])

        return df.mapInArrow(to_ipc, "ipc binary").rdd.map(lambda row: bytes(row[0])), schema
    return RDD(jrdd, df.sparkSession.sparkContext, NoOpSerializer()), schema


def pickled_source(rdd: Any) -> tuple[Any, bool] | None:
    """``rdd``'s elements as Spark holds them, still pickled, when reading them runs no Python
    code (the RDD is cached or checkpointed, or made by Spark from pickled data, e.g.
    ``parallelize``) and Spark pickled them with its own pickle serializers: (an RDD of the
    pickled elements, whether each is a list of rows). None otherwise: the rows are fed as
    they come out of ``rdd``'s Python functions.

    Forwarded as they are, the rows are unpickled once, in the trainer, into exactly the
    objects that were in the RDD; the feeding task never unpickles or converts them, which is
    most of what feeding an RDD costs (``benches/README.md``, Spark)."""
    from pyspark import serializers as ser_
    from pyspark.serializers import AutoBatchedSerializer, BatchedSerializer, NoOpSerializer

    try:
        from pyspark.core.rdd import RDD, PipelinedRDD
    except ImportError:  # pyspark 3.x
        from pyspark.rdd import RDD, PipelinedRDD  # type: ignore[no-redef]
    # Spark's pickle serializers (their names across versions): data plain pickle.loads reads.
    pickles = {getattr(ser_, n, None) for n in ("CloudPickleSerializer", "CPickleSerializer", "PickleSerializer")}
    if isinstance(rdd, PipelinedRDD) and not (rdd.is_cached or rdd.is_checkpointed):
        return None  # its rows come out of Python functions: fed as they come, in one process
    ser = rdd._jrdd_deserializer
    batched = isinstance(ser, (AutoBatchedSerializer, BatchedSerializer))
    inner = ser.serializer if batched else ser
    if type(inner) not in pickles:
        return None  # text, pairs, Arrow...: Spark's own encodings, read by PySpark
    return RDD(rdd._jrdd, rdd.ctx, NoOpSerializer()), batched


def decode(it: Any, schema: Any) -> Any:
    """(record batch, its IPC message as Spark wrote it): the message is forwarded as it is."""
    import pyarrow as pa

    for msg in it:
        buf = pa.py_buffer(msg)
        yield pa.ipc.read_record_batch(buf, schema), buf


#: What a feeding task's iterator yields: (record batch, its IPC message) pairs of a DataFrame
#: (:func:`decode`), Python rows, or Spark's pickled elements (:func:`pickled_source`): lists
#: of rows, or single rows.
ARROW, ROWS, PICKLED_LISTS, PICKLED_ROWS = "arrow", "rows", "pickled-lists", "pickled-rows"


def _pickled_batches(it: Any, batched: bool, objects: bool, batch_size: int) -> Any:
    """A partition of Spark's pickled elements as (record batch or
    :class:`~hydrofeed.spark.rows.PickledChunk`, None) pairs: forwarded as they are where the
    trainer takes rows as objects and they hold more than numbers and numpy arrays
    (:func:`hydrofeed.spark.rows.numeric_row`, judged on the first row); otherwise unpickled
    here and sent as Arrow columns."""
    from hydrofeed.spark import rows as _rows

    first = next(it, None)
    if first is None:
        return iter(())
    head = list(_rows.unpickled([first], batched))
    if objects and head and not _rows.numeric_row(head[0]):
        frames: Any = _rows.pickled_chunks(itertools.chain([first], it), batched)
    else:
        rows = itertools.chain(head, _rows.unpickled(it, batched))
        frames = _rows.batches_from_rows(rows, batch_size)
    return ((rb, None) for rb in frames)


def feed_fn(cluster_id: str, gen: int, mode: str, feed_timeout: float, batch_size: int) -> Callable[..., list[Any]]:
    """The function a feeding task runs on one partition (its elements of the kind ``form``
    says): returns ``[rows]`` (train; pickled elements are counted as elements) or the results
    (infer)."""

    def feed(index: int, it: Any, form: str) -> list[Any]:
        from hydrofeed.spark import rows as _rows
        from hydrofeed.spark.hub import open_channel

        rdir = _node.run_dir(cluster_id, gen)
        socks = sorted(glob.glob(os.path.join(rdir, "rank*.sock")), key=lambda p: int(os.path.basename(p)[4:-5]))
        if not socks:
            raise RuntimeError(
                f"hydrofeed: no trainer of cluster {cluster_id} on host {_node.local_host()} ({rdir} is empty). "
                "Every executor that runs feeding tasks must host a node: num_executors must match the "
                "executors of the Spark application, one task slot per node plus slots for feeding, "
                "and dynamic allocation off."
            )
        # Partitions are spread over this host's trainers by index (round-robin).
        ch = open_channel(socks[index % len(socks)], mode, index)
        try:
            if ch.terminating:  # the trainer called terminate(): skip the partition (TFoS)
                for _ in it:
                    pass
                return [0] if mode == "train" else []
            if form == ARROW:
                batches = it
            elif form == ROWS:
                batches = ((rb, None) for rb in _rows.batches_from_rows(it, batch_size))
            else:
                batches = _pickled_batches(it, form == PICKLED_LISTS, ch.objects, batch_size)
            sent = 0
            for rb, ipc in batches:
                if rb.num_rows:
                    ch.send(rb, ipc)
                    sent += rb.num_rows
            results = ch.finish(feed_timeout)
        finally:
            ch.close()
        if mode == "train":
            return [sent]
        if len(results) != sent:
            raise RuntimeError(f"hydrofeed: trainer rank {ch.rank} returned {len(results)} results for {sent} rows of partition {index}")
        return results

    return feed
