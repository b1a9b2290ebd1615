"""The feeding hub and row conversion without Spark: hub <-> channel in one process."""

from __future__ import annotations

import os
import pickle
import re
import threading
import time

import numpy as np
import pyarrow as pa
import pytest

from hydrofeed.spark import rows
from hydrofeed.spark.feed import SparkDataFeed
from hydrofeed.spark.hub import Hub, TransportError, open_channel, send_end_of_feed

pytestmark = [pytest.mark.spark, pytest.mark.timeout(60)]


def test_rows_round_trip_keeps_shape_and_types():
    feats = [np.arange(4, dtype=np.float32) + i for i in range(5)]
    tup = [(i, feats[i], f"s{i}") for i in range(5)]
    rb = rows.rows_to_batch(tup)
    assert rb.schema.field("_1").type == pa.list_(pa.float32(), 4)
    back = rows.batch_to_rows(rb)
    assert [r[0] for r in back] == list(range(5)) and [r[2] for r in back] == [f"s{i}" for i in range(5)]
    assert all(isinstance(r, tuple) for r in back)
    np.testing.assert_array_equal(np.stack([r[1] for r in back]), np.stack(feats))
    assert rows.batch_to_rows(rows.rows_to_batch([3, 4, 5])) == [3, 4, 5]
    assert rows.batch_to_rows(rows.rows_to_batch([[1, 2.5], [2, 3.5]])) == [[1, 2.5], [2, 3.5]]
    assert rows.batch_to_rows(rows.rows_to_batch([{"a": 1}, {"a": 2}])) == [{"a": 1}, {"a": 2}]
    # arbitrary objects travel pickled, per batch
    objs = rows.batch_to_rows(rows.rows_to_batch([(1, {"nested": [1, (2, 3)]}), (2, {"nested": []})]))
    assert objs[0][1] == {"nested": [1, (2, 3)]}
    cols = rows.batch_to_columns(rows.rows_to_batch(tup), {"a": "ids", "b": "x", "c": "names"})
    assert cols["ids"].tolist() == list(range(5)) and cols["x"].shape == (5, 4)


@pytest.fixture
def hub(tmp_path):
    h = Hub(str(tmp_path / "rank0.sock"), 0, max_queued=2)
    h.start()
    yield h
    h.close()
    assert not os.path.exists(tmp_path / "rank0.sock")


def test_train_partition_acked_only_when_consumed_and_end_of_feed(hub):
    feed = SparkDataFeed(hub, train_mode=True)
    data = [(i, float(i)) for i in range(1000)]
    done = {}

    def feeder():
        ch = open_channel(hub.path, "train", 0)
        for rb in rows.batches_from_rows(iter(data), 64):
            ch.send(rb)
        ch.finish(30)
        ch.close()
        send_end_of_feed(hub.path)
        done["ok"] = True

    t = threading.Thread(target=feeder)
    t.start()
    got = []
    while not feed.should_stop():
        got.extend(feed.next_batch(100))
    t.join(10)
    assert done == {"ok": True}
    assert [r[0] for r in got] == list(range(1000))


def test_the_trainer_says_where_its_time_went_at_the_end_of_the_feed(hub, capfd, monkeypatch):
    def feed_one_partition(partition):
        """A feeding task sends 1000 rows, the trainer takes them 100 at a time to the end."""

        def feeder():
            ch = open_channel(hub.path, "train", partition)
            for rb in rows.batches_from_rows(((i, np.zeros(784, np.float32)) for i in range(1000)), 64):
                ch.send(rb)
            ch.finish(30)
            ch.close()
            send_end_of_feed(hub.path)

        hub.eof_received.clear()
        t = threading.Thread(target=feeder)
        t.start()
        feed = SparkDataFeed(hub)
        while not feed.should_stop():
            feed.next_batch(100)
        t.join(10)
        return capfd.readouterr().err

    err = feed_one_partition(0)
    said = [line for line in err.splitlines() if line.startswith("hydrofeed rank 0:")]
    assert len(said) == 1, err
    assert re.match(
        r"hydrofeed rank 0: 1000 rows, 10 steps; first batch after [0-9.]+ s, then [0-9.]+ s: "
        r"[0-9,]+ rows/s; waited for input \d+% of the time; 3\.1 MB fed by Spark's tasks$",
        said[0],
    ), said[0]
    # HYDROFEED_SUMMARY=0 silences it, as under `hydrofeed launch`.
    monkeypatch.setenv("HYDROFEED_SUMMARY", "0")
    assert "hydrofeed rank" not in feed_one_partition(1)


def test_inference_results_flow_back_in_order(hub):
    feed = SparkDataFeed(hub, train_mode=False)
    out = {}

    def feeder():
        ch = open_channel(hub.path, "infer", 3)
        for rb in rows.batches_from_rows(iter([(i,) for i in range(250)]), 100):
            ch.send(rb)
        out["r"] = ch.finish(30)
        ch.close()
        send_end_of_feed(hub.path)

    t = threading.Thread(target=feeder)
    t.start()
    while not feed.should_stop():
        batch = feed.next_batch(40)
        if batch:
            feed.batch_results([r[0] * 10 for r in batch])
    t.join(10)
    assert out["r"] == [i * 10 for i in range(250)]


def test_results_larger_than_a_control_message_arrive_whole(hub):
    """One batch_results() of 300 KB of pickled results travels in pieces of the ring's
    control messages (at most 64 KiB each) and arrives whole, in order."""
    feed = SparkDataFeed(hub, train_mode=False)
    out = {}

    def feeder():
        ch = open_channel(hub.path, "infer", 0)
        ch.send(rows.rows_to_batch([(i,) for i in range(300)]))
        out["r"] = ch.finish(30)
        ch.close()
        send_end_of_feed(hub.path)

    t = threading.Thread(target=feeder)
    t.start()
    while not feed.should_stop():
        batch = feed.next_batch(300)
        if batch:
            feed.batch_results([f"{r[0]}:" + "x" * 1000 for r in batch])
    t.join(10)
    assert out["r"] == [f"{i}:" + "x" * 1000 for i in range(300)]


def test_feeder_gets_a_clear_error_when_the_trainer_goes_away(tmp_path):
    h = Hub(str(tmp_path / "rank5.sock"), 5)
    h.start()
    ch = open_channel(h.path, "train", 0)
    ch.send(rows.rows_to_batch([(1,)]))
    h.close()
    with pytest.raises(TransportError, match="rank 5"):
        ch.finish(30)
    ch.close()
    with pytest.raises(TransportError, match="no trainer listening"):
        open_channel(str(tmp_path / "rank5.sock"), "train", 0, connect_timeout=0.3)


def test_feed_timeout_when_nobody_consumes(hub):
    ch = open_channel(hub.path, "train", 0)
    ch.send(rows.rows_to_batch([(1,)]))
    with pytest.raises(TimeoutError, match="feed_timeout=1"):
        ch.finish(1)
    ch.close()


def test_terminate_skips_later_partitions(hub):
    feed = SparkDataFeed(hub)
    feed.terminate()
    ch = open_channel(hub.path, "train", 1)
    assert ch.terminating
    ch.close()


def test_batches_fast_path_yields_numpy_columns(hub):
    feed = SparkDataFeed(hub)

    def feeder():
        ch = open_channel(hub.path, "train", 0)
        for rb in rows.batches_from_rows(((i, np.full(3, i, np.float32)) for i in range(250)), 64):
            ch.send(rb)
        ch.finish(30)
        ch.close()
        send_end_of_feed(hub.path)

    t = threading.Thread(target=feeder)
    t.start()
    got = list(feed.batches(100))
    t.join(10)
    assert [len(b["_0"]) for b in got] == [100, 100, 50]
    assert got[0]["_1"].shape == (100, 3) and got[0]["_1"].dtype == np.float32
    assert np.concatenate([b["_0"] for b in got]).tolist() == list(range(250))


class _ListHub:
    """Hands out prepared items, records acks (no sockets)."""

    def __init__(self, batches):
        from hydrofeed.spark.hub import Item

        self.items = [Item("batch", 0, rb) for rb in batches] + [Item("end_of_feed")]
        self.acked = 0

    def get(self, timeout):
        return self.items.pop(0) if self.items else None

    def ack(self, conn_id, n):
        self.acked += n


def _equal(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape, (a, b)
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _equal(x, y)
    else:
        assert type(a) is type(b) and (a == b or (a != a and b != b)), (a, b)


def test_next_batch_slices_whole_batch_columns_exactly_like_converting_each_slice():
    # Columns of every kind: dense ints/floats/bools, a column with nulls (its dtype depends on
    # the slice), fixed-size and variable lists (uniform and ragged), strings, pickled objects.
    def batch(start, n, ragged):
        ids = list(range(start, start + n))
        cols = {
            "id": pa.array(ids, pa.int64()),
            "f": pa.array([i * 0.5 for i in ids], pa.float32()),
            "ok": pa.array([i % 3 == 0 for i in ids]),
            "maybe": pa.array([None if i % 7 == 3 else i for i in ids], pa.int64()),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(np.arange(3 * n, dtype=np.float32)), 3),
            "arr": pa.array([[float(i)] * (1 + (i % 2 if ragged else 0)) for i in ids], pa.list_(pa.float64())),
            "s": pa.array([f"s{i}" for i in ids]),
            "obj": pa.array([pickle.dumps({"i": i}) for i in ids], pa.binary()),
        }
        fields = [pa.field(k, v.type, metadata={rows.PICKLED: b"1"} if k == "obj" else None) for k, v in cols.items()]
        return pa.RecordBatch.from_arrays(list(cols.values()), schema=pa.schema(fields, metadata={rows.ROW_KIND: b"tuple"}))

    batches = [batch(0, 37, False), batch(37, 50, True), batch(87, 5, False), batch(92, 64, False)]
    mapping = {"arr": "a", "f": "x", "maybe": "m", "obj": "o", "vec": "v"}
    total = sum(rb.num_rows for rb in batches)

    def calls(size):
        """The old behaviour's reference: per next_batch call, its slices, each converted alone."""
        out, cur = [], []
        for rb in batches:
            off = 0
            while off < rb.num_rows:
                m = min(size - sum(p.num_rows for p in cur), rb.num_rows - off)
                cur.append(rb.slice(off, m))
                off += m
                if sum(p.num_rows for p in cur) == size:
                    out.append(cur)
                    cur = []
        return out + ([cur] if cur else [])

    for size in (1, 7, 20, 64, 200):
        ref = calls(size)
        feed = SparkDataFeed(_ListHub(batches))
        for pieces in ref:
            _equal(feed.next_batch(size), [r for p in pieces for r in rows.batch_to_rows(p)])
        assert feed.next_batch(size) == [] and feed.should_stop()
        hub = _ListHub(batches)
        feed = SparkDataFeed(hub, input_mapping=mapping)
        for pieces in ref:
            out = feed.next_batch(size)
            parts = [rows.batch_to_columns(p, mapping) for p in pieces]
            for t in mapping.values():
                vals = [p[t] for p in parts]
                if len(vals) == 1:
                    want = vals[0]
                elif all(isinstance(v, np.ndarray) for v in vals):
                    want = np.concatenate(vals)
                else:
                    want = [x for v in vals for x in v]
                _equal(out[t], want)
        feed.next_batch(size)
        assert feed.should_stop() and hub.acked == total


_LOADER = r"""
import pickle, sys
from hydrofeed.spark.trainer import load_pickled
blobs = pickle.loads(sys.stdin.buffer.read())
out = [load_pickled(blobs["closure"])(1), load_pickled(blobs["lambda"])(2), load_pickled(blobs["args"])]
out.append("pyspark" in sys.modules)  # cloudpickle loaded without the pyspark package
out.append(load_pickled(blobs["row"])(5).asDict())  # needs pyspark.sql: the ordinary import
out.append("pyspark" in sys.modules)
import pyspark
out.append(hasattr(pyspark, "SparkContext"))  # the real package, after the bare stand-in
sys.stdout.buffer.write(pickle.dumps(out))
"""

_LOADER_MODULE = r"""
import pickle, sys
from hydrofeed.spark.trainer import load_pickled
blobs = pickle.loads(sys.stdin.buffer.read())
out = [load_pickled(blobs["module"])(0)]  # refers to the pyspark module itself: the real one
import pyspark
out.append(hasattr(pyspark, "SparkContext"))
sys.stdout.buffer.write(pickle.dumps(out))
"""


def test_trainer_loads_by_value_map_fun_without_importing_pyspark():
    import subprocess
    import sys

    from pyspark import cloudpickle
    from pyspark.sql import Row

    k = 3

    def closure(x):
        return x + k

    def needs_row(x):
        return Row(a=x)

    import pyspark

    def uses_module(x):
        return hasattr(pyspark, "SparkContext")

    blobs = {
        "module": cloudpickle.dumps(uses_module),
        "closure": cloudpickle.dumps(closure),  # a local function: pickled by value
        "lambda": cloudpickle.dumps(lambda x: x * 2),
        "row": cloudpickle.dumps(needs_row),
        "args": cloudpickle.dumps({"a": [1, 2]}),
    }
    assert b"pyspark.cloudpickle" in blobs["closure"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, "-c", _LOADER], input=pickle.dumps(blobs), capture_output=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    assert pickle.loads(r.stdout) == [4, 4, {"a": [1, 2]}, False, {"a": 5}, True, True]
    r = subprocess.run([sys.executable, "-c", _LOADER_MODULE], input=pickle.dumps(blobs), capture_output=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    assert pickle.loads(r.stdout) == [True, True]


def _image_batches(n_batches, rows_per_batch=32, width=784, start=0):
    for b in range(start, start + n_batches):
        ids = np.arange(b * rows_per_batch, (b + 1) * rows_per_batch)
        img = np.repeat(ids.astype(np.float32)[:, None], width, axis=1)
        yield rows.rows_to_batch(list(zip(ids.tolist(), img)))


def _check_image_batch(rb):
    ids = rb.column(0).to_numpy()
    img = rb.column(1).values.to_numpy().reshape(len(ids), -1)
    np.testing.assert_array_equal(img, np.repeat(ids.astype(np.float32)[:, None], img.shape[1], axis=1))
    return ids.tolist()


def _feed(hub, batches, partition=0):
    """Feeds one partition from a helper thread; returns (thread, outcome)."""
    out = {}

    def feeder():
        try:
            ch = open_channel(hub.path, "train", partition)
            for rb in batches:
                ch.send(rb)
            ch.finish(30)
            ch.close()
            out["sent"] = ch.sent
        except Exception as e:  # noqa: BLE001 - reported to the test
            out["error"] = e

    t = threading.Thread(target=feeder)
    t.start()
    return t, out


def test_many_partitions_pass_through_rings_whose_space_comes_back(hub):
    """3 partitions of 200 batches of 100 KB each: 20 MB a partition through its 8 MiB ring
    (its space is reused), every pixel as sent."""
    for partition in range(3):
        t, out = _feed(hub, _image_batches(200, start=200 * partition), partition)
        got = []
        while len(got) < 200:
            item = hub.get(10)
            assert item is not None and item.kind == "batch"
            got.append(_check_image_batch(item.batch))
            hub.ack(item.conn_id, item.batch.num_rows)
            del item
        t.join(10)
        assert out == {"sent": 200 * 32}, out
        assert sum(got, []) == list(range(200 * 32 * partition, 200 * 32 * (partition + 1)))


def test_batches_the_trainer_keeps_do_not_stop_the_feed(hub):
    """The trainer keeps every batch (30 MB, more than the ring holds) until the feeding task
    finished: batches come out of the ring as they arrive, so the ring never fills with kept
    ones, and no kept batch is written over."""
    t, out = _feed(hub, _image_batches(300))
    held = []
    while len(held) < 300:
        item = hub.get(10)
        assert item is not None and item.kind == "batch"
        held.append(item.batch)
        hub.ack(item.conn_id, item.batch.num_rows)
    t.join(10)
    assert out == {"sent": 300 * 32}, out
    assert sum((_check_image_batch(rb) for rb in held), []) == list(range(300 * 32))


def test_a_batch_larger_than_the_ring_takes_is_split_by_rows(hub):
    """A 41 MB batch (more than the largest ring's largest frame, 8 MiB) arrives as smaller
    batches holding every row once, in order."""
    t, out = _feed(hub, _image_batches(1, rows_per_batch=13000))
    got, rows_in = [], 0
    while rows_in < 13000:
        item = hub.get(10)
        assert item is not None and item.kind == "batch"
        got.append(_check_image_batch(item.batch))
        rows_in += item.batch.num_rows
        hub.ack(item.conn_id, item.batch.num_rows)
    t.join(10)
    assert out == {"sent": 13000}, out
    assert len(got) > 1 and sum(got, []) == list(range(13000))


def _raw_feeder(path):
    import socket as so

    from hydrofeed.spark import hub as wire

    s = so.socket(so.AF_UNIX, so.SOCK_STREAM)
    s.connect(path)
    wire.send_frame(s, wire.HELLO, b'{"mode": "train", "partition": 0}')
    kind, _ = wire.recv_frame(s)
    assert kind == wire.WELCOME
    return s, wire


def test_a_hostile_feeder_gets_errors_not_a_crashed_trainer(hub):
    """What a feeding connection sends instead of a sealed ring is refused; the hub goes on
    serving the next feeding task."""
    import socket as so
    import struct

    from hydrofeed.spark import hub as wire

    def hello(size):  # the ring's offer as ipc writes it (docs/arch/ring.md)
        return b"HYDROHLO" + struct.pack("<IIQQ", 3, 0, size, size // 2)

    def hung_up(s):  # the hub closed the connection (with our bytes unread: a reset)
        s.settimeout(10)
        try:
            said = s.recv(100)
        except ConnectionResetError:
            said = b""
        s.close()
        return said == b""

    # Unsealed memory: the feeder could shrink it under the trainer's mapping.
    s, _ = _raw_feeder(hub.path)
    fd = os.memfd_create("x")
    os.ftruncate(fd, 1 << 20)
    so.send_fds(s, [hello(1 << 20)], [fd])
    os.close(fd)
    assert hung_up(s)  # refused: the hub hung up without taking it
    # Garbage instead of the offer, and a hang-up in the middle of it.
    s, _ = _raw_feeder(hub.path)
    s.sendall(b"\xff" * 64)
    assert hung_up(s)
    s, _ = _raw_feeder(hub.path)
    s.close()
    # A mode that is none: an error frame naming it.
    s = so.socket(so.AF_UNIX, so.SOCK_STREAM)
    s.connect(hub.path)
    wire.send_frame(s, wire.HELLO, b'{"mode": "bogus"}')
    kind, payload = wire.recv_frame(s)
    assert kind == wire.ERROR and b"mode 'bogus'" in payload
    s.close()
    assert hub.get(0.2) is None
    # The next feeding task is served as usual.
    t, out = _feed(hub, _image_batches(2))
    for _ in range(2):
        item = hub.get(10)
        assert item is not None and item.kind == "batch"
        _check_image_batch(item.batch)
        hub.ack(item.conn_id, item.batch.num_rows)
    t.join(10)
    assert out == {"sent": 64}, out


def test_a_batch_stays_readable_after_its_feeder_is_killed(hub, tmp_path):
    import signal
    import subprocess
    import sys

    script = f"""
import sys, time, numpy as np
sys.path.insert(0, {os.path.dirname(__file__)!r})
from test_hub import _image_batches
from hydrofeed.spark.hub import open_channel
ch = open_channel({hub.path!r}, "train", 0)
for rb in _image_batches(3):
    ch.send(rb)
print("sent", flush=True)
time.sleep(600)
"""
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "sent"
        held = [hub.get(10).batch for _ in range(3)]
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(10)
        p.stdout.close()
    # The trainer's mapping keeps the memory: the rows are as sent.
    assert sum((_check_image_batch(rb) for rb in held), []) == list(range(3 * 32))


def test_rows_give_back_the_objects_that_were_fed():
    """TFoS's ``DataFeed`` returns the objects fed: a list column is a list (``row[1] == [0.0,
    0.5, 3.0]`` is a bool, not numpy's "truth value of an array is ambiguous"), numbers are
    Python numbers, tuples stay tuples; numpy arrays fed stay numpy; ``input_mapping`` keeps the
    numpy columns."""
    fed = [(i, [0.0, 0.5, float(i)], f"s{i}", (i, -i), {"k": i}) for i in range(10)]
    feed = SparkDataFeed(_ListHub([rows.rows_to_batch(fed[:6]), rows.rows_to_batch(fed[6:])]))
    got = feed.next_batch(4) + feed.next_batch(4) + feed.next_batch(4)
    assert got == fed
    assert got[3][1] == [0.0, 0.5, 3.0]
    for a, b in zip(got, fed):
        _equal(a, b)

    arrays = [(i, np.arange(3, dtype=np.float32) + i) for i in range(5)]
    feed = SparkDataFeed(_ListHub([rows.rows_to_batch(arrays)]))
    for a, b in zip(feed.next_batch(5), arrays):
        _equal(a, b)

    feed = SparkDataFeed(_ListHub([rows.rows_to_batch(fed)]), input_mapping={"_1": "x"})
    x = feed.next_batch(10)["x"]
    assert isinstance(x, np.ndarray) and x.shape == (10, 3)


def test_a_batch_across_partitions_typed_apart_keeps_each_partitions_types():
    """Spark infers each partition's types on its own (ints in one, floats in the next): a
    ``next_batch`` that spans them gives every row as it was fed, and each feeding connection
    is acked exactly the rows handed out of it."""
    from hydrofeed.spark.hub import Item

    class Hub(_ListHub):
        def __init__(self, items):
            self.items = items + [Item("end_of_feed")]
            self.acks: dict[int, int] = {}

        def ack(self, conn_id, n):
            self.acks[conn_id] = self.acks.get(conn_id, 0) + n

    ints = [(i, i * 10) for i in range(5)]
    floats = [(i, i * 0.5) for i in range(5, 8)]
    hub = Hub([Item("batch", 1, rows.rows_to_batch(ints)), Item("batch", 2, rows.rows_to_batch(floats))])
    feed = SparkDataFeed(hub)
    first = feed.next_batch(4)
    assert first == ints[:4] and hub.acks == {1: 4}
    second = feed.next_batch(4)
    assert second == ints[4:] + floats
    assert [type(r[1]) for r in second] == [int, float, float, float]
    assert hub.acks == {1: 5, 2: 3}
    assert feed.next_batch(4) == [] and feed.should_stop()


@pytest.mark.parametrize("mapping", [None, {"_0": "x"}])
def test_feeding_tasks_are_told_whether_the_trainer_takes_objects_or_columns(hub, mapping):
    """Rows Spark holds pickled are forwarded as they are to a feed that takes rows as objects,
    and sent as Arrow columns to one with ``input_mapping`` (or ``batches()``): the hub's
    welcome says which."""
    feed = SparkDataFeed(hub, input_mapping=mapping)
    ch = open_channel(hub.path, "train", 0)
    try:
        assert ch.objects is (mapping is None)
    finally:
        ch.close()
    if mapping is None:
        hub.end_of_feed()
        assert list(feed.batches(10)) == []  # the fast path takes numpy columns
        ch = open_channel(hub.path, "train", 1)
        try:
            assert ch.objects is False
        finally:
            ch.close()


def test_a_spark_fed_feed_is_a_datafeed_and_names_what_needs_a_file_feed():
    """The feed a Spark trainer gets is a ``hydrofeed.DataFeed``: the same TFoS loop and
    ``metrics()`` (what Spark's tasks fed); what reads a feeder's ring says by name that it
    needs a file feed, rather than failing on a missing attribute."""
    import hydrofeed
    from hydrofeed.exceptions import HydrofeedError

    fed = [(i, float(i)) for i in range(250)]
    hub = _ListHub([rows.rows_to_batch(fed[:100]), rows.rows_to_batch(fed[100:])])
    feed = SparkDataFeed(hub)
    assert isinstance(feed, hydrofeed.DataFeed)
    got = []
    while not feed.should_stop():
        got.extend(feed.next_batch(64))
    assert got == fed and hub.acked == 250
    m = feed.metrics()
    assert (m["rows"], m["steps"], m["rows_delivered"]) == (250, 4, 250) and m["bytes"] > 0
    assert "files" not in m and feed.schema is None
    for call in (feed.next, feed.steps_per_epoch, feed.initial_step, lambda: feed.feeder_pid, lambda: feed.results):
        with pytest.raises(HydrofeedError, match=r"TFCluster\.(train_files|inference)"):
            call()
    with pytest.raises(ValueError, match="needs batch_size"):
        next(iter(feed))
    feed.flush_acks()  # nothing to flush without a file feed: no error


def test_pickled_rows_are_unpickled_by_the_thread_that_takes_them(tmp_path, monkeypatch):
    """Frames of pickled rows wait in the hub as bytes until the trainer takes them: with room
    for 16 batches in the hub's queue, a trainer in its feed (``taking``) has no frame turned
    into objects by the hub's threads, and every frame is unpickled in the thread that calls
    ``get`` (the trainer's), one frame a call; while the trainer is away (its model step), the
    hub's threads unpickle ``OBJECT_FRAMES_AHEAD`` frames ahead, no more. Every row arrives
    once, in order, as the objects fed, and the partition is acked once all were taken."""
    made = []
    unpickle = rows.unpickle_frame

    def counted(rb):
        made.append(threading.get_ident())
        return unpickle(rb)

    monkeypatch.setattr(rows, "unpickle_frame", counted)
    h = Hub(str(tmp_path / "rank0.sock"), 0, max_queued=16)
    h.start()
    try:
        h.taking = True
        fed = [([float(i), i + 0.5], i) for i in range(120)]
        blobs = [pickle.dumps(fed[k : k + 4], protocol=5) for k in range(0, len(fed), 4)]
        frames = [rb for b in blobs for rb in rows.pickled_frames([b], True)]
        assert len(frames) == 30 and all(rows.is_pickled(rb) for rb in frames)
        t, out = _feed(h, frames)
        time.sleep(1.0)
        assert made == []
        got = []
        while len(got) < 40:
            item = h.get(10)
            assert item is not None and item.kind == "batch" and item.objs is not None
            assert item.batch.num_rows == len(item.objs) == 4 and len(made) == len(got) // 4 + 1
            got.extend(item.objs)
            h.ack(item.conn_id, len(item.objs))
        h.taking = False  # away (a model step): 4 slots of the queue free, the hub fills them
        for _ in range(4):
            item = h.get(10)
            got.extend(item.objs)
            h.ack(item.conn_id, len(item.objs))
        time.sleep(1.0)
        assert len(made) == 10 + 4 + Hub.OBJECT_FRAMES_AHEAD, made
        h.taking = True
        main = threading.get_ident()
        while len(got) < len(fed):
            item = h.get(10)
            assert item is not None and item.kind == "batch" and item.objs is not None
            got.extend(item.objs)
            assert t.is_alive()  # the partition is not consumed before its last rows are taken
            h.ack(item.conn_id, len(item.objs))
        t.join(10)
        assert out == {"sent": 30}, out
        assert got == fed and len(made) == 30
        assert made.count(main) == 30 - Hub.OBJECT_FRAMES_AHEAD, made
    finally:
        h.close()


def test_a_frame_that_cannot_be_unpickled_fails_its_feeding_task_and_the_feed_goes_on(hub):
    """The trainer unpickles a frame as it takes it: one that pickle cannot load is skipped,
    its feeding task fails naming the partition and the error, and the next partition's rows
    arrive as fed."""
    bad = list(rows.pickled_frames([pickle.dumps([1.5], protocol=5)[:-3]], False))
    t, out = _feed(hub, bad, partition=3)
    assert hub.get(0.5) is None  # the frame was not taken
    t.join(10)
    assert "unpickling the rows of partition 3" in str(out.get("error")), out
    fed = [([0.5, float(i)], i) for i in range(10)]
    t, out = _feed(hub, list(rows.pickled_frames([pickle.dumps(fed, protocol=5)], True)), partition=4)
    item = hub.get(10)
    assert item is not None and item.objs == fed
    hub.ack(item.conn_id, len(fed))
    t.join(10)
    assert out == {"sent": 1}, out


def test_time_spent_making_objects_of_pickled_rows_is_not_waiting_for_input(hub, monkeypatch, capsys):
    """The trainer unpickles frames as it takes them: the summary line's "waited for input"
    counts the time rows were not there, not the time spent making them, which it reports
    apart."""
    unpickle = rows.unpickle_frame

    def slow(rb):
        time.sleep(0.2)
        return unpickle(rb)

    monkeypatch.setattr(rows, "unpickle_frame", slow)
    fed = [([0.5, float(i)], i) for i in range(40)]
    frames = [rb for k in range(0, 40, 4) for rb in rows.pickled_frames([pickle.dumps(fed[k : k + 4], protocol=5)], True)]
    t, out = _feed(hub, frames)
    feed = SparkDataFeed(hub)
    got = []
    while len(got) < 40:
        got.extend(feed.next_batch(4))
    t.join(10)
    send_end_of_feed(hub.path)
    while not feed.should_stop():
        feed.next_batch(4)
    assert got == fed and out == {"sent": 10}, out
    line = capsys.readouterr().err
    waited = int(re.search(r"waited for input (\d+)% of the time", line).group(1))
    assert waited < 30 and re.search(r"[12]\.\d s making objects of pickled rows", line), line


def test_pickled_chunks_go_into_the_ring_as_the_frames_of_their_batches_and_split_where_too_large(hub, monkeypatch):
    """A feeding task forwards Spark's pickled elements as chunks whose bytes go from the
    ``bytes`` objects straight into the ring slot: the trainer reads the same record batch as
    ``PickledChunk.to_batch()`` (values, schema and its metadata), and its rows as fed. A chunk
    larger than the ring's largest frame is split by elements; one element that is larger fails
    its feeding task, naming its size."""
    seen = []
    unpickle = rows.unpickle_frame

    def recorded(rb):
        seen.append(rb)
        return unpickle(rb)

    monkeypatch.setattr(rows, "unpickle_frame", recorded)
    fed = [([float(i)] * (i % 7), i, f"r{i}") for i in range(60)]
    small = [rows.PickledChunk([pickle.dumps(fed[k : k + 3], protocol=5) for k in range(0, 30, 3)], True),
             rows.PickledChunk([pickle.dumps(r, protocol=5) for r in fed[30:40]], False)]
    # Then a chunk of ~6 MB (the ring, sized by the first frame, holds frames up to ~2 MiB).
    pad = [float(j) for j in range(100_000)]
    big_rows = [(pad, 100 + k) for k in range(7)]
    big = rows.PickledChunk([pickle.dumps([r], protocol=5) for r in big_rows], True)
    t, out = _feed(hub, [*small, big])
    got = []
    while len(got) < 30 + 10 + 7:
        item = hub.get(10)
        assert item is not None and item.kind == "batch", item
        got.extend(item.objs)
        hub.ack(item.conn_id, len(item.objs))
    t.join(10)
    assert out == {"sent": 10 + 10 + 7}, out
    assert got == fed[:40] + big_rows
    assert seen[0].equals(small[0].to_batch(), check_metadata=True)
    assert seen[1].equals(small[1].to_batch(), check_metadata=True)
    assert seen[1].schema.field(0).metadata == {b"hf.batched": b"0"} and rows.is_pickled(seen[1])
    assert len(seen) > 3 and sum(rb.num_rows for rb in seen[2:]) == 7  # the big chunk, split

    one = rows.PickledChunk([pickle.dumps([pad * 30], protocol=5)], True)
    t, out = _feed(hub, [small[0], one], partition=1)
    item = hub.get(10)
    assert item is not None and len(item.objs) == 30
    hub.ack(item.conn_id, 30)
    t.join(10)
    assert re.search(r"one row of [\d,]+ bytes is larger than the ring", str(out.get("error"))), out
