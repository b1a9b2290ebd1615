"""One test per defect found from outside (run as users run it), named by what broke; a new one
lands here with its fix, failing on the code before it. The Rust readers' counterpart is
feeder/format/tests/regression.rs.

- hf.tf.dataset hung on any epoch larger than the ring;
- a trainer that kept its batches (list(feed.batches())) hung the feed;
- a dictionary column hung the feed (each dictionary pinned its ring slot);
- a fork() child killed the parent's feed;
- a second thread deadlocked with the first;
- the batch size changed silently at file boundaries;
- ORC timestamps (and dates) before 1970 came back wrong.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pyarrow.parquet as pq
import pytest

import hydrofeed as hf
from helpers import BIG_ROWS, check_mnist_epoch, orc_via_pyorc, read_table, run_python

pytestmark = pytest.mark.timeout(180)

ROWS = BIG_ROWS


def check_epoch(batches: list[Any], want: dict[str, np.ndarray]) -> None:
    check_mnist_epoch(batches, want, ROWS)


def test_tf_dataset_epochs_larger_than_ring(serve: Any, big_mnist: Path, big_want: Any) -> None:
    s = serve("--input", str(big_mnist), "--ring-mb", "4", "--epochs", "2")
    feed = hf.DataFeed(str(s.sock), batch_size=256, timeout=30)
    ds = hf.tf.dataset(feed)
    for _ in range(2):
        got = [{k: v.numpy() for k, v in el.items()} for el in ds]
        check_epoch(got, big_want)
    code, err = s.wait()
    assert code == 0, err


def test_list_of_all_batches_copies_once_and_warns_once(serve: Any, big_mnist: Path, big_want: Any) -> None:
    s = serve("--input", str(big_mnist), "--ring-mb", "1")
    feed = hf.DataFeed(str(s.sock), batch_size=100, timeout=60)
    with pytest.warns(hf.RingPressureWarning) as rec:
        kept = list(feed.batches())
    assert len(rec) == 1, [str(r.message) for r in rec]
    msg = str(rec[0].message)
    assert "batch.copy()" in msg and "--ring-mb" in msg, msg
    check_epoch(kept, big_want)
    m = feed.metrics()
    assert m["pressure_copies"] >= 1
    assert 0 < m["copied_bytes"] <= m["bytes"] + 64 * m["frames"]  # records: 64-byte headers
    code, err = s.wait()
    assert code == 0, err


def test_dictionary_column_through_a_small_ring(serve: Any, tmp_path: Path) -> None:
    """A dictionary<string> column: the trainer keeps each dictionary for the batches after
    it, in its own copy; a view would pin the ring slot it came in, and every slot after it,
    so the feeder would stall with the ring full."""
    import pyarrow.parquet as pq

    n = 200_000
    tags = pa.array([f"category-{i % 37}" for i in range(n)]).dictionary_encode()
    table = pa.table({"id": pa.array(range(n), pa.int64()), "tag": tags})
    pq.write_table(table, tmp_path / "d.parquet", row_group_size=50_000)
    s = serve("--input", str(tmp_path / "d.parquet"), "--ring-mb", "1")
    feed = hf.DataFeed(str(s.sock), batch_size=1000, timeout=30)
    ids = []
    for b in feed.batches():
        ids.append(b["id"].copy())
        t = b.to_arrow().column(1).to_pylist()
        assert t == [f"category-{i % 37}" for i in ids[-1]], b.num_rows
    np.testing.assert_array_equal(np.concatenate(ids), np.arange(n))
    code, err = s.wait()
    assert code == 0, err


FORK_CHILD = r"""
import os, sys, multiprocessing as mp
import numpy as np
import hydrofeed as hf
feed = hf.DataFeed({sock!r}, batch_size=100, timeout=60)
held = next(feed.batches())
ids = list(held["id"])
def child_work(_):
    return 1
# 1. a child that exits through sys.exit (interpreter finalisation runs every drop)
pid = os.fork()
if pid == 0:
    try:
        feed.next()
        os._exit(3)  # must have raised
    except hf.HydrofeedError:
        pass
    sys.exit(0)
_, st = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(st) == 0, st
# 2. a fork pool (the child inherits the feed and the held batch)
with mp.get_context("fork").Pool(2) as p:
    assert sum(p.map(child_work, range(4))) == 4
# 3. the parent reads every remaining row with the right values
for b in feed.batches():
    ids.extend(b["id"])
    assert np.all(b["image"][:, 0] >= 0)
del held
assert sorted(int(i) for i in ids) == list(range({rows})), len(ids)
print("ok", len(ids))
"""


def test_fork_children_leave_the_parent_feed_intact(serve: Any, big_mnist: Path) -> None:
    s = serve("--input", str(big_mnist), "--ring-mb", "1")
    r = run_python(FORK_CHILD.format(sock=str(s.sock), rows=ROWS), timeout=120)
    assert r.returncode == 0 and "ok 10000" in r.stdout, r.stderr[-3000:]
    code, err = s.wait()
    assert code == 0, err


THREADS = r"""
import threading, time
import hydrofeed as hf
feed = hf.DataFeed({sock!r}, batch_size=50, timeout=60)
stop = threading.Event()
errors = []
def hammer():
    while not stop.is_set():
        try:
            feed.metrics(); feed.state(); feed.schema
        except Exception as e:
            errors.append(e); return
ts = [threading.Thread(target=hammer) for _ in range(2)]
for t in ts: t.start()
rows = 0
for i, b in enumerate(feed.batches()):
    rows += b.num_rows
    if i == 60:
        break
closer = threading.Thread(target=feed.close)
closer.start(); closer.join(30)
assert not closer.is_alive(), "close() deadlocked"
stop.set()
for t in ts: t.join(30); assert not t.is_alive(), "metrics() deadlocked"
assert not errors, errors
print("ok", rows)
"""


def test_second_thread_never_deadlocks(serve: Any, big_mnist: Path) -> None:
    s = serve("--input", str(big_mnist), "--ring-mb", "1")
    r = run_python(THREADS.format(sock=str(s.sock)), timeout=90)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-3000:]


def test_batch_size_is_rows_per_yielded_batch_across_files(tmp_path: Path) -> None:
    for i in range(3):
        pq.write_table(pa.table({"x": pa.array(range(i * 10, i * 10 + 10), pa.int64())}), tmp_path / f"p{i}.parquet")
    batches = list(hf.read(str(tmp_path), batch_size=7))
    assert [b.num_rows for b in batches] == [7, 7, 7, 7, 2]
    assert pa.Table.from_batches(batches).column("x").to_pylist() == list(range(30))
    with pytest.raises(ValueError, match="batch_size"):
        hf.read(str(tmp_path), batch_size=0)


def test_orc_timestamps_before_1970_match_the_reference_reader(tmp_path: Path) -> None:
    import datetime as dt
    from zoneinfo import ZoneInfo

    utc = ZoneInfo("UTC")
    rng = np.random.default_rng(7)
    base = dt.datetime(1970, 1, 1, tzinfo=utc)
    # every microsecond value, both sides of the epoch, 1677..2262 (timestamp[ns]'s range)
    secs = rng.integers(-9_000_000_000, 9_000_000_000, 3000)
    micros = rng.integers(0, 1_000_000, 3000)
    rows = [(base + dt.timedelta(seconds=int(s), microseconds=int(u)),) for s, u in zip(secs, micros)]
    rows += [(dt.datetime(1969, 12, 31, 23, 59, 58, 1, tzinfo=utc),), (dt.datetime(1900, 1, 1, tzinfo=utc),), (None,)]
    p = tmp_path / "t.orc"
    orc_via_pyorc(p, "struct<t:timestamp>", rows)
    want = po.read_table(p).column("t").cast(pa.int64()).to_pylist()
    got = read_table(p).column("t").cast(pa.int64()).to_pylist()
    wrong = [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w]
    assert not wrong, f"{len(wrong)} of {len(want)} differ, first (row, hydrofeed, pyarrow): {wrong[:3]}"


def test_orc_dates_before_1970_match_the_reference_reader(tmp_path: Path) -> None:
    import datetime as dt

    days = [-719162, -25567, -1, 0, 1, 2932896]  # 0001-01-01, 1900-01-01, 1969-12-31, ..., 9999-12-31
    rows = [(dt.date(1970, 1, 1) + dt.timedelta(days=d),) for d in days]
    p = tmp_path / "d.orc"
    orc_via_pyorc(p, "struct<d:date>", rows)
    assert read_table(p).column("d").to_pylist() == po.read_table(p).column("d").to_pylist()


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_orc_timestamps_before_1970_from_the_arrow_writer(tmp_path: Path, unit: str) -> None:
    # pyarrow's ORC writer (Apache Arrow C++) splits a timestamp before the epoch into seconds
    # and nanoseconds truncated towards zero: the nanoseconds it stores are negative.
    mult = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[unit]
    rng = np.random.default_rng(3)
    v = rng.integers(-(9 * 10**18) // mult, (9 * 10**18) // mult, 30_000)
    v[:4] = [-1, -(10**9 // mult) - 1, 0, 1]
    t = pa.table({"t": pa.array(v, pa.timestamp(unit))})
    p = tmp_path / "t.orc"
    po.write_table(t, p)
    want = po.read_table(p).column("t").cast(pa.int64()).to_pylist()
    assert want == [int(x) * mult for x in v]  # the reference reader gives back what was written
    got = read_table(p).column("t").cast(pa.int64()).to_pylist()
    wrong = [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w]
    assert not wrong, f"{len(wrong)} of {len(want)} differ, first (row, hydrofeed, pyarrow): {wrong[:3]}"
