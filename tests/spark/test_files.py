"""File mode (``TFCluster.train_files``): feeders on the executors read the files, a coordinator
in the driver deals equal steps; data reaches the trainers through shared-memory rings."""

from __future__ import annotations

import collections
import os
import shutil
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import spark_funs
from hydrofeed.spark import InputMode, TFCluster, TrainerFailedError
from hydrofeed.spark.files import FeedFilesError

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

HERE = os.path.dirname(os.path.abspath(__file__))
BADINPUT = os.path.join(HERE, "..", "data", "badinput")
# Uneven files: 3,000 rows = 2 workers x 50 rows x 30 steps, so no row is dropped.
SIZES = [3, 1200, 40, 700, 7, 350, 700]


def _write_dataset(root: str, sizes=SIZES, row_group: int = 128) -> int:
    """Parquet files written by pyarrow (an independent writer): id, 8 float features, label."""
    os.makedirs(root, exist_ok=True)
    start = 0
    for k, n in enumerate(sizes):
        ids = np.arange(start, start + n, dtype=np.int64)
        feats = pa.FixedSizeListArray.from_arrays(pa.array(np.repeat(ids, 8).astype(np.float32)), 8)
        table = pa.table({"id": ids, "features": feats, "label": (ids % 10).astype(np.int64)})
        pq.write_table(table, os.path.join(root, f"part-{k:05d}.parquet"), row_group_size=row_group)
        start += n
    return start


def test_every_row_exactly_num_epochs_times_with_equal_steps(sc, tmp_path, capfd):
    data = str(tmp_path / "data")
    total = _write_dataset(data)
    out = tmp_path / "out"
    out.mkdir()
    cluster = TFCluster.run(sc, spark_funs.record_ids, {"out": str(out), "batch": 100}, 2, input_mode=InputMode.SPARK)
    state = cluster.train_files(data, num_epochs=2, batch_size=50, seed=7)
    cluster.shutdown()
    assert state["finished"] is True and state["epochs"] == 2 and state["rows_dropped"] == 0
    res = spark_funs.results(str(out), 2)
    counts = collections.Counter(i for r in res.values() for i in r["ids"])
    assert set(counts) == set(range(total))
    assert set(counts.values()) == {2}
    # equal steps: every worker got the same number of rows, hence of next_batch(100) calls
    assert len(res[0]["ids"]) == len(res[1]["ids"]) == total
    assert res[0]["batches"] == res[1]["batches"]
    # A successful run is quiet: no end-of-feed noise from the supervisors, no runpy warning
    # from each trainer.
    out, err = capfd.readouterr()
    err += out
    assert "could not deliver end of feed" not in err, err[-3000:]
    assert "found in sys.modules" not in err, err[-3000:]


def test_coordinator_lines_after_the_listening_line_are_not_lost(tmp_path, monkeypatch, caplog):
    """The coordinator prints its address, TLS, token file and metrics lines at once; the
    driver waits for the address and then logs the rest: every line must reach the log, also
    when they all arrive in one read."""
    import logging

    from hydrofeed.spark.files import Coordinator

    fake = tmp_path / "hydrofeed"
    fake.write_text(
        "#!/usr/bin/env python3\n"
        "import os, time\n"
        "os.write(1, b'hydrofeed coordinator listening on 127.0.0.1:4567\\nTLS: cert.pem\\n'\n"
        "            b'metrics: http://127.0.0.1:1/metrics\\n')\n"
        "time.sleep(60)\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("HYDROFEED_BIN", str(fake))
    with caplog.at_level(logging.INFO, logger="hydrofeed.spark.files"):
        coord = Coordinator("/data", 2, 10, 1, 0, True, "drop", host="127.0.0.1", tls=False)
        try:
            assert coord.addr == "127.0.0.1:4567"
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                said = [r.getMessage() for r in caplog.records]
                if "[coordinator] metrics: http://127.0.0.1:1/metrics" in said:
                    break
                time.sleep(0.05)
        finally:
            coord.close()
    said = [r.getMessage() for r in caplog.records]
    assert "[coordinator] TLS: cert.pem" in said, said
    assert "[coordinator] metrics: http://127.0.0.1:1/metrics" in said, said


@pytest.mark.parametrize("tls", [True, False])
def test_control_plane_is_tls_with_a_job_ca_unless_turned_off(sc, tmp_path, caplog, tls):
    """The coordinator's gRPC (feeders and trainers on the executors -> the driver) is TLS with
    a CA the coordinator made for the job, by default; ``tls=False`` is plain gRPC."""
    import logging

    data = str(tmp_path / "data")
    total = _write_dataset(data)
    out = tmp_path / "out"
    out.mkdir()
    cluster = TFCluster.run(sc, spark_funs.record_ids, {"out": str(out), "batch": 50}, 2, input_mode=InputMode.SPARK)
    with caplog.at_level(logging.INFO, logger="hydrofeed.spark.files"):
        state = cluster.train_files(data, batch_size=50, seed=3, **({} if tls else {"tls": False}))
    cluster.shutdown()
    assert state["finished"] is True
    res = spark_funs.results(str(out), 2)
    assert sorted(i for r in res.values() for i in r["ids"]) == list(range(total))
    said = [r.getMessage() for r in caplog.records if "[coordinator]" in r.getMessage()]
    assert any("TLS: " in m for m in said) == tls, said


def test_shuffle_buffer_mixes_files_in_file_mode(sc, tmp_path):
    """``train_files(shuffle_buffer=...)``: the fixed order with a shuffle buffer, every row once,
    each worker's rows mixed across files instead of in storage order."""
    data = str(tmp_path / "data")
    total = _write_dataset(data)
    out = tmp_path / "out"
    out.mkdir()
    cluster = TFCluster.run(sc, spark_funs.record_ids, {"out": str(out), "batch": 50}, 2, input_mode=InputMode.SPARK)
    state = cluster.train_files(data, batch_size=50, seed=7, shuffle_buffer=400, cycle_length=4)
    cluster.shutdown()
    # The state carries the order function's version (2: lanes cut where row groups start).
    assert state["order"]["spec"] == {"buffer": 400, "cycle": 4, "version": 2}
    res = spark_funs.results(str(out), 2)
    ids = [i for r in res.values() for i in r["ids"]]
    assert sorted(ids) == list(range(total))
    starts = np.cumsum([0] + SIZES)
    for r in res.values():
        seq = np.array(r["ids"])
        corr = abs(np.corrcoef(np.arange(len(seq)), seq)[0, 1])
        assert corr < 0.3, corr
        files = [len(set(np.searchsorted(starts, b, side="right"))) for b in np.split(seq, len(seq) // 50)]
        assert np.mean(files) >= 2, files


def test_remainder_is_dropped_evenly_and_plan_order_without_shuffle(sc, tmp_path):
    data = str(tmp_path / "data")
    total = _write_dataset(data, sizes=[500, 333, 170])  # 1,003 rows: 2 x 64 x 7 = 896 fed
    out = tmp_path / "out"
    out.mkdir()
    cluster = TFCluster.run(sc, spark_funs.record_ids, {"out": str(out), "batch": 64}, 2, input_mode=InputMode.SPARK)
    state = cluster.train_files(data + "/*.parquet", columns=["id", "label"], batch_size=64, shuffle=False)
    cluster.shutdown()
    res = spark_funs.results(str(out), 2)
    seen = [i for r in res.values() for i in r["ids"]]
    assert len(seen) == len(set(seen)) == 896
    assert state["rows_dropped"] == total - 896 and state["shuffle"] is False
    assert len(res[0]["ids"]) == len(res[1]["ids"]) == 448
    # splits dealt in plan order (files by name, row groups in order): the rows left over
    # for the dropped remainder are the last ones of the last file
    assert set(seen) == set(range(896))


def test_corrupt_file_fails_naming_the_file_and_offset(sc, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(os.path.join(BADINPUT, "pq_corrupt_page.parquet"), data / "bad.parquet")
    out = tmp_path / "out"
    out.mkdir()
    cluster = TFCluster.run(sc, spark_funs.record_ids, {"out": str(out), "batch": 10}, 2, input_mode=InputMode.SPARK)
    t0 = time.monotonic()
    # The feeder sends the error down the ring: the trainer raises DataError (naming the
    # file and offset) and fails its node; or the feeder's own exit report comes first.
    with pytest.raises((FeedFilesError, TrainerFailedError)) as ei:
        cluster.train_files(str(data), batch_size=10, feed_timeout=60)
    took = time.monotonic() - t0
    msg = str(ei.value)
    assert "bad.parquet" in msg and "byte offset 958" in msg and "rank " in msg, msg
    assert took < 45, f"the failure took {took:.1f}s to surface"
    with pytest.raises((TrainerFailedError, FeedFilesError, TimeoutError)):
        cluster.shutdown(timeout=60)


def test_trainer_that_raises_fails_the_file_feed_naming_its_rank(sc, tmp_path):
    data = str(tmp_path / "data")
    _write_dataset(data)
    out = tmp_path / "out"
    out.mkdir()
    cluster = TFCluster.run(sc, spark_funs.record_ids, {"out": str(out), "batch": 50, "fail_rank": 1}, 2, input_mode=InputMode.SPARK)
    t0 = time.monotonic()
    with pytest.raises(TrainerFailedError) as ei:
        cluster.train_files(data, batch_size=50)
    assert ei.value.rank == 1 and "boom on executor 1" in str(ei.value)
    assert time.monotonic() - t0 < 60
    with pytest.raises(TrainerFailedError):
        cluster.shutdown(timeout=60)


def test_killed_trainer_restarts_the_gang_and_the_feed_resumes(sc, tmp_path):
    data = str(tmp_path / "data")
    total = _write_dataset(data)
    out = tmp_path / "out"
    out.mkdir()
    # killed a third into the first epoch, when acks of both ranks reached the coordinator
    args = {"out": str(out), "batch": 50, "kill_rank": 0, "kill_once": True, "kill_after": 20, "step_sleep": 0.01}
    cluster = TFCluster.run(sc, spark_funs.record_ids, args, 2, input_mode=InputMode.SPARK, max_restarts=1)
    state = cluster.train_files(data, num_epochs=2, batch_size=50)
    cluster.shutdown()
    assert os.path.exists(out / "killed-once")
    assert state["finished"] is True
    res = spark_funs.results(str(out), 2)  # written by the second generation's trainers
    counts = collections.Counter(i for r in res.values() for i in r["ids"])
    fed_again = sum(counts.values())
    # the restarted feed resumed: rows consumed before the kill were not fed again
    assert 0 < fed_again < 2 * total
    assert max(counts.values()) <= 2 and set(counts) <= set(range(total))
    assert len(res[0]["ids"]) == len(res[1]["ids"])


@pytest.mark.hdfs
def test_file_mode_reads_a_real_minidfs(sc, minidfs, tmp_path):
    local = tmp_path / "local"
    total = _write_dataset(str(local))
    for p in sorted(local.iterdir()):
        minidfs.put(str(p), f"/filemode/{p.name}")
    out = tmp_path / "out"
    out.mkdir()
    cluster = TFCluster.run(sc, spark_funs.record_ids, {"out": str(out), "batch": 100}, 2, input_mode=InputMode.SPARK)
    state = cluster.train_files(minidfs.uri("/filemode"), batch_size=50)
    cluster.shutdown()
    assert state["finished"] is True
    res = spark_funs.results(str(out), 2)
    counts = collections.Counter(i for r in res.values() for i in r["ids"])
    assert set(counts) == set(range(total)) and set(counts.values()) == {1}


def test_keras_model_trains_on_two_executors_in_file_mode(sc, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.default_rng(3)
    for k in range(3):
        x = rng.random((1000, 4), dtype=np.float32)
        y = x @ np.array([1.0, -2.0, 3.0, 0.5], dtype=np.float32)
        pq.write_table(
            pa.table({"x": pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), 4), "y": pa.array(y)}),
            data / f"part-{k}.parquet",
        )
    out = tmp_path / "out"
    out.mkdir()
    cluster = TFCluster.run(sc, spark_funs.keras_train, {"out": str(out)}, 2, input_mode=InputMode.SPARK)
    cluster.train_files(str(data), num_epochs=3, batch_size=64)
    cluster.shutdown()
    res = spark_funs.results(str(out), 2)
    # 3 epochs x floor(3000 / (2 x 64)) = 3 x 23 steps on each worker, and the loss fell
    assert len(res[0]["losses"]) == len(res[1]["losses"]) == 69
    for r in res.values():
        assert np.mean(r["losses"][-5:]) < np.mean(r["losses"][:5]) / 2


def test_executor_killed_mid_feed_fails_clearly_and_leaves_nothing(sc, tmp_path):
    import signal
    import threading

    from hydrofeed.spark.node import run_dir, sweep_stale

    data = str(tmp_path / "data")
    _write_dataset(data)
    out = tmp_path / "out"
    out.mkdir()
    cluster = TFCluster.run(sc, spark_funs.record_ids, {"out": str(out), "batch": 50, "step_sleep": 0.01}, 2,
                            input_mode=InputMode.SPARK)
    victim = cluster.cluster_info[1]["supervisor_pid"]
    threading.Timer(1.0, os.kill, (victim, signal.SIGKILL)).start()
    t0 = time.monotonic()
    with pytest.raises(TrainerFailedError, match="rank 1 .* was lost"):
        cluster.train_files(data, num_epochs=3, batch_size=50)
    assert time.monotonic() - t0 < 60
    with pytest.raises(TrainerFailedError):
        cluster.shutdown(timeout=60)

    def hydrofeed_daemon(argv: list[bytes]) -> bool:
        return len(argv) > 1 and argv[1] in (b"feeder", b"coordinator") and b"hydrofeed" in argv[0]

    # the killed node's feeder died with its supervisor; the rest stopped
    assert spark_funs.left_after(hydrofeed_daemon) == []
    # what the SIGKILLed supervisor could not remove (its hub socket, its feeder's socket
    # directory) goes with the next sweep
    left = os.listdir(run_dir(cluster.cluster_id, 0))
    assert "rank1.sock" in left and any(n.startswith("feed-") for n in left), left
    sweep_stale(min_age_s=0)
    assert not os.path.exists(run_dir(cluster.cluster_id, 0))


def test_input_mapping_feed_larger_than_the_ring_never_pins_a_slot(sc, tmp_path):
    # 4,000 rows x 784 float32 = 12.5 MB through a 2 MiB ring (memory_mb=4): every slot must
    # be released once its rows were handed out, whichever path (Arrow or zero-copy) took them.
    data = tmp_path / "data"
    data.mkdir()
    ids = np.arange(4000, dtype=np.int64)
    feats = pa.FixedSizeListArray.from_arrays(pa.array(np.repeat(ids, 784).astype(np.float32)), 784)
    pq.write_table(pa.table({"id": ids, "features": feats}), data / "part-0.parquet", row_group_size=500)
    out = tmp_path / "out"
    out.mkdir()
    cluster = TFCluster.run(sc, spark_funs.record_columns, {"out": str(out)}, 1, input_mode=InputMode.SPARK)
    state = cluster.train_files(str(data), batch_size=50, memory_mb=4, feed_timeout=30)
    cluster.shutdown()
    assert state["finished"] is True
    res = spark_funs.results(str(out), 1)
    assert sorted(res[0]["ids"]) == list(range(4000))
    assert res[0]["shapes"] == ["ndarray of ndarray[784] float32; ids int64"]


def test_a_delta_table_is_fed_at_one_snapshot(sc, tmp_path):
    """A Delta table (written by delta-rs: two appends, then a delete that rewrote files) fed
    in file mode: at ``snapshot=1`` every row of version 1 once, and by default the newest
    version's rows once, never the deleted ones; the state records the table's version."""
    deltalake = pytest.importorskip("deltalake")
    table = str(tmp_path / "table")

    def part(a, b):
        ids = np.arange(a, b, dtype=np.int64)
        return pa.table({"id": ids, "x": ids.astype(np.float32), "p": ids % 2})

    deltalake.write_deltalake(table, part(0, 3000), partition_by=["p"])
    deltalake.write_deltalake(table, part(3000, 4000), mode="append", partition_by=["p"])
    deltalake.DeltaTable(table).delete("id < 1000")
    out = tmp_path / "out"
    for snapshot, want in ((1, set(range(4000))), (None, set(range(1000, 4000)))):
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        cluster = TFCluster.run(sc, spark_funs.record_ids, {"out": str(out), "batch": 50}, 2, input_mode=InputMode.SPARK)
        state = cluster.train_files(table, batch_size=50, seed=3, snapshot=snapshot)
        cluster.shutdown()
        res = spark_funs.results(str(out), 2)
        counts = collections.Counter(i for r in res.values() for i in r["ids"])
        assert set(counts.values()) == {1}, snapshot
        assert set(counts) == want, (snapshot, len(counts), len(want))
        assert state["input"]["table"]["version"] == (1 if snapshot == 1 else 2), state["input"]


def test_a_filter_feeds_each_passing_row_once(sc, tmp_path):
    """``train_files(filter=)`` over Hive partitions: the coordinator counts the rows that
    pass once, the feeders read with its counts, every passing row comes once and no other;
    the state records the filter."""
    data = tmp_path / "data"
    for p in (0, 1):
        (data / f"p={p}").mkdir(parents=True)
        ids = np.arange(p, 6000, 2, dtype=np.int64)
        t = pa.table({"id": ids, "x": ids.astype(np.float32)})
        pq.write_table(t, data / f"p={p}" / "part-0.parquet", row_group_size=500)
    out = tmp_path / "out"
    out.mkdir()
    text = "p = 1 AND (id < 1000 OR x >= 4500)"
    cluster = TFCluster.run(sc, spark_funs.record_ids, {"out": str(out), "batch": 50}, 2, input_mode=InputMode.SPARK)
    state = cluster.train_files(str(data), batch_size=50, seed=3, filter=text, remainder="pad")
    cluster.shutdown()
    want = {i for i in range(1, 6000, 2) if i < 1000 or i >= 4500}
    res = spark_funs.results(str(out), 2)
    counts = collections.Counter(i for r in res.values() for i in r["ids"])
    assert set(counts) == want, (len(counts), len(want))
    assert sum(counts.values()) - len(want) < 2 * 50, "only the last steps are padded"
    assert state["input"]["filter"] == text
