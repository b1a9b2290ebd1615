"""RDDs that Spark holds pickled (cached, checkpointed, ``parallelize``) feed their elements as
Spark pickled them: the feeding task forwards them, the trainer unpickles them once, into
exactly the objects that were in the RDD (``hydrofeed.spark.tasks.pickled_source``)."""

from __future__ import annotations

import collections
import os
import pickle

import numpy as np
import pytest

import spark_funs
from hydrofeed.spark import InputMode, TFCluster
from hydrofeed.spark import tasks

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]


def _payload(i: int):
    """A value of another kind every row: what TFoS's queue would give back as it was fed."""
    return [
        np.arange(3, dtype=np.float32) * i,
        [1.5, i, [i, "x"]],
        {"k": i, "v": (i, None)},
        None,
        f"s{i}",
        b"b%d" % i,
    ][i % 6]


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    return type(a) is type(b) and a == b


def test_pickled_source_takes_what_spark_holds_pickled(sc, tmp_path):
    from pyspark.serializers import CloudPickleSerializer

    base = sc.parallelize(list(range(10)), 2)
    assert tasks.pickled_source(base)[1] is True  # parallelize: batched pickles
    assert tasks.pickled_source(sc.parallelize(range(10), 2)) is None  # a range: made by a Python function
    mapped = base.map(lambda x: (x, x))
    assert tasks.pickled_source(mapped) is None  # rows come out of a Python function: fed as they come
    assert tasks.pickled_source(mapped.cache())[1] is True
    single = base._reserialize(CloudPickleSerializer()).cache()  # one pickle per element
    assert tasks.pickled_source(single)[1] is False
    assert single.count() == 10
    text = tmp_path / "lines.txt"
    text.write_text("a\nb\n")
    assert tasks.pickled_source(sc.textFile(str(text))) is None  # Spark's own text encoding
    mapped.unpersist()
    single.unpersist()


@pytest.mark.parametrize("cached", [True, False], ids=["pickled", "rows"])
def test_rows_arrive_as_the_objects_fed_exactly_once(sc, tmp_path, cached):
    """Cached: the pickled elements forwarded; not cached: the rows as the map makes them
    (converted to Arrow and back). Both give every row, twice over 2 epochs, as it was fed,
    from very uneven partitions."""
    n = 1200
    rdd = sc.parallelize(range(n), 1).union(sc.parallelize(range(n, n + 60), 3)).map(lambda i: (i, _payload(i), "row"))
    if cached:
        rdd = rdd.cache()
    assert (tasks.pickled_source(rdd) is not None) is cached
    cluster = TFCluster.run(sc, spark_funs.record_rows, {"out": str(tmp_path), "batch": 50}, 2, input_mode=InputMode.SPARK)
    cluster.train(rdd, num_epochs=2)
    cluster.shutdown()
    rows = []
    for r in range(2):
        with open(os.path.join(tmp_path, f"rows{r}.pkl"), "rb") as f:
            rows.extend(pickle.load(f))
    counts = collections.Counter(row[0] for row in rows)
    assert set(counts) == set(range(n + 60)) and set(counts.values()) == {2}
    bad = [row for row in rows if not (type(row) is tuple and _same(_payload(row[0]), row[1]) and row[2] == "row")]
    assert not bad, bad[:3]
    if cached:
        rdd.unpersist()


def test_a_row_the_trainer_cannot_unpickle_fails_the_feed_naming_it(sc, tmp_path):
    rdd = sc.parallelize(range(40), 2).map(lambda i: (i, spark_funs.Unloadable() if i == 7 else str(i))).cache()
    cluster = TFCluster.run(sc, spark_funs.record_rows, {"out": str(tmp_path)}, 2, input_mode=InputMode.SPARK)
    try:
        with pytest.raises(Exception, match=r"unpickling the rows of partition \d: ValueError: row 7's payload cannot be loaded here"):
            cluster.train(rdd, num_epochs=1, feed_timeout=60)
    finally:
        cluster.shutdown()
        rdd.unpersist()


@pytest.mark.parametrize("objects", [True, False])
def test_pickled_rows_go_as_they_are_only_where_arrow_would_cost_more(objects):
    """Rows of numbers and numpy arrays are sent as Arrow columns (converted in the feeding
    task, spread over Spark's slots); rows holding Python objects are forwarded pickled, to a
    trainer that takes objects."""
    from hydrofeed.spark import rows

    numeric = [(i, np.full(4, i, np.float32), float(i)) for i in range(10)]
    objs = [(i, [float(i)] * 4, f"r{i}") for i in range(10)]
    for data, forwarded in ((numeric, False), (objs, objects)):
        blobs = [pickle.dumps(data[:6]), pickle.dumps(data[6:])]
        frames = [rb.to_batch() if isinstance(rb, rows.PickledChunk) else rb for rb, _ in tasks._pickled_batches(iter(blobs), True, objects, 4)]
        assert all(rows.is_pickled(rb) for rb in frames) is forwarded
        got = [r for rb in frames for r in (rows.unpickle_frame(rb) if forwarded else rows.batch_to_rows(rb))]
        assert len(got) == 10 and [r[0] for r in got] == list(range(10))
    assert list(tasks._pickled_batches(iter([]), True, objects, 4)) == []


def _objects_hub(rows_per_item):
    """A hub handing out rows that came pickled (as the trainer's hub does after unpickling a
    forwarded frame), then the end of the feed; records acks."""
    from hydrofeed.spark import rows
    from hydrofeed.spark.hub import Item

    class Hub:
        wants_objects = True

        def __init__(self):
            self.items = [Item("batch", 0, rows.objects_batch(len(objs)), objs=objs) for objs in rows_per_item]
            self.items.append(Item("end_of_feed"))
            self.acked = 0

        def get(self, timeout):
            return self.items.pop(0) if self.items else None

        def ack(self, conn_id, n):
            self.acked += n

    return Hub()


def test_rows_that_came_pickled_cut_into_rows_columns_and_fast_path_batches():
    """Forwarded rows may reach a feed that takes numpy columns (its first partitions, before
    the hub told the feeding tasks what it takes): every way of taking them gives the rows."""
    from hydrofeed.spark.feed import SparkDataFeed

    items = [[(i, np.full(3, i, np.float32)) for i in range(a, b)] for a, b in ((0, 7), (7, 8), (8, 20))]
    hub = _objects_hub(items)
    feed = SparkDataFeed(hub)
    got = []
    while not feed.should_stop():
        got.extend(feed.next_batch(5))
    assert [r[0] for r in got] == list(range(20)) and hub.acked == 20
    assert all(type(r) is tuple and r[1].dtype == np.float32 for r in got)

    hub = _objects_hub(items)
    feed = SparkDataFeed(hub, input_mapping={"_0": "id", "_1": "x"})
    ids, xs = [], []
    while not feed.should_stop():
        cols = feed.next_batch(6)
        ids.extend(cols["id"])
        xs.extend(cols["x"])
    assert ids == list(range(20)) and np.asarray(xs).shape == (20, 3) and hub.acked == 20

    hub = _objects_hub(items)
    batches = list(SparkDataFeed(hub).batches(8))
    assert [len(b["_0"]) for b in batches] == [8, 8, 4]
    assert np.concatenate([b["_0"] for b in batches]).tolist() == list(range(20))
    assert hub.wants_objects is False
