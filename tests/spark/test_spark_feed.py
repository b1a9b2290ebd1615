"""InputMode.SPARK: train/inference through barrier-mode nodes on local[2]."""

from __future__ import annotations

import collections
import json
import os

import numpy as np
import pytest

import spark_funs
from hydrofeed.spark import InputMode, TFCluster, TrainerFailedError

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]


def test_every_row_delivered_exactly_num_epochs_times(sc, tmp_path):
    rows = [(i, np.full(784, i, dtype=np.float32), i % 10) for i in range(3000)]
    rdd = sc.parallelize(rows, 6)
    cluster = TFCluster.run(sc, spark_funs.record_ids, {"out": str(tmp_path), "batch": 100}, 2, input_mode=InputMode.SPARK)
    assert [n["job_name"] for n in cluster.cluster_info] == ["worker", "worker"]
    assert cluster.num_executors == 2 and cluster.nodeRDD.getNumPartitions() == 2
    assert cluster.cluster_meta["cluster_template"] == {"worker": [0, 1]}
    cluster.train(rdd, num_epochs=3)
    cluster.shutdown()
    res = spark_funs.results(str(tmp_path), 2)
    counts = collections.Counter(i for r in res.values() for i in r["ids"])
    assert set(counts) == set(range(3000))
    assert set(counts.values()) == {3}
    # both trainers got data, and each saw the cluster as two workers
    assert all(r["batches"] > 0 for r in res.values())
    for rank, r in res.items():
        assert r["num_workers"] == 2
        cfg = json.loads(r["tf_config"])
        assert cfg["task"] == {"type": "worker", "index": rank}
        assert cfg["cluster"]["worker"] == [f"{n['host']}:{n['port']}" for n in cluster.cluster_info]


def test_dataframe_travels_as_arrow_with_input_mapping(spark, sc, tmp_path):
    n = 2000
    df = spark.createDataFrame(
        [(int(i), [float(v) for v in range(8)]) for i in range(n)], "id long, features array<float>"
    ).repartition(5)
    cluster = TFCluster.run(sc, spark_funs.record_columns, {"out": str(tmp_path)}, 2, input_mode=InputMode.SPARK)
    cluster.train(df, num_epochs=2)
    cluster.shutdown()
    res = spark_funs.results(str(tmp_path), 2)
    counts = collections.Counter(i for r in res.values() for i in r["ids"])
    assert set(counts) == set(range(n)) and set(counts.values()) == {2}
    # Spark arrays of equal length arrive as one dense 2-D numpy array, dtype kept
    for r in res.values():
        assert r["shapes"] == ["ndarray of ndarray[8] float32; ids int64"], r


def test_inference_returns_one_result_per_row_in_order(spark, sc, tmp_path):
    data = [(i, float(i)) for i in range(1234)]
    rdd = sc.parallelize(data, 5)
    cluster = TFCluster.run(sc, spark_funs.double_it, {"out": str(tmp_path), "batch": 7}, 2, input_mode=InputMode.SPARK)
    out = cluster.inference(rdd).collect()
    out2 = cluster.inference(sc.parallelize(data[:10], 3)).collect()
    df = spark.createDataFrame(data, "id long, x double").repartition(3).sortWithinPartitions("id")
    expected_df = [(r.id, 2 * r.id) for r in df.collect()]  # the DataFrame's own row order
    out_df = cluster.inference(df).collect()
    cluster.shutdown()
    assert out == [(i, 2 * i) for i in range(1234)]
    assert out2 == [(i, 2 * i) for i in range(10)]
    assert out_df == expected_df


def test_uneven_partitions_never_hang(sc, tmp_path):
    sizes = [1, 900, 3, 0, 2500, 7, 40]
    rows, parts = [], []
    start = 0
    for s in sizes:
        parts.append([(i,) for i in range(start, start + s)])
        start += s
    rdd = sc.parallelize(range(len(sizes)), len(sizes)).flatMap(lambda p, parts=parts: parts[p])
    assert rdd.glom().map(len).collect() == sizes
    cluster = TFCluster.run(sc, spark_funs.record_ids, {"out": str(tmp_path), "batch": 16}, 2, input_mode=InputMode.SPARK)
    cluster.train(rdd, num_epochs=1)
    cluster.shutdown()  # every trainer's should_stop() turned true, or this would not return
    res = spark_funs.results(str(tmp_path), 2)
    ids = sorted(i for r in res.values() for i in r["ids"])
    assert ids == list(range(sum(sizes)))


def test_trainer_that_raises_fails_the_driver_naming_its_rank(sc, tmp_path):
    rdd = sc.parallelize([(i,) for i in range(20000)], 8)
    cluster = TFCluster.run(sc, spark_funs.record_ids, {"out": str(tmp_path), "batch": 10, "fail_rank": 1}, 2,
                            input_mode=InputMode.SPARK)
    with pytest.raises(TrainerFailedError) as ei:
        cluster.train(rdd, num_epochs=1, feed_timeout=600)
        cluster.shutdown()
    err = ei.value
    assert err.rank == 1 and err.job_name == "worker" and err.task_index == 1
    # the exception summary heads the message, the output tail follows
    assert "rank 1 (worker:1 on 127.0.0.1) failed with exit code 1: ValueError: boom on executor 1" in str(err)
    assert any("Traceback" in line for line in err.log_tail)
    with pytest.raises(TrainerFailedError):
        cluster.shutdown()


def test_trainer_killed_with_sigkill_mid_feed_fails_clearly(sc, tmp_path):
    rdd = sc.parallelize([(i,) for i in range(20000)], 8)
    cluster = TFCluster.run(sc, spark_funs.record_ids, {"out": str(tmp_path), "batch": 10, "kill_rank": 0}, 2,
                            input_mode=InputMode.SPARK)
    with pytest.raises(TrainerFailedError) as ei:
        cluster.train(rdd, num_epochs=1, feed_timeout=600)
    assert ei.value.rank == 0 and "SIGKILL" in str(ei.value)
    with pytest.raises(TrainerFailedError, match="rank 0"):
        cluster.shutdown()


def test_supervisor_killed_with_sigkill_is_reported_lost_and_its_trainer_dies(sc, tmp_path):
    import signal

    from hydrofeed.spark.node import run_dir, sweep_stale

    cluster = TFCluster.run(sc, spark_funs.record_ids, {"out": str(tmp_path)}, 2, input_mode=InputMode.SPARK)
    victim = cluster.cluster_info[1]["supervisor_pid"]
    os.kill(victim, signal.SIGKILL)
    with pytest.raises(TrainerFailedError, match="rank 1 .* was lost") as ei:
        cluster.shutdown()
    assert ei.value.rank == 1

    def its_trainer(argv: list[bytes]) -> bool:
        cmd = b" ".join(argv)
        return cluster.cluster_id.encode() in cmd and b"hydrofeed.spark.trainer" in cmd

    # the orphaned trainer was killed with its supervisor (PDEATHSIG)
    assert spark_funs.left_after(its_trainer) == []
    # the SIGKILLed supervisor could not clean up; the next node start sweeps it
    assert os.path.exists(os.path.join(run_dir(cluster.cluster_id, 0), "rank1.sock"))
    assert sweep_stale(min_age_s=0) >= 2
    assert not os.path.exists(run_dir(cluster.cluster_id, 0))


def test_spark_mode_restart_feeds_the_new_gang_again(sc, tmp_path):
    rdd = sc.parallelize([(i,) for i in range(5000)], 6)
    cluster = TFCluster.run(sc, spark_funs.record_ids, {"out": str(tmp_path), "batch": 10, "kill_rank": 0, "kill_once": True},
                            2, input_mode=InputMode.SPARK, max_restarts=1)
    cluster.train(rdd, num_epochs=1)  # rank 0 is SIGKILLed once; the gang restarts and is fed again
    cluster.shutdown()
    res = spark_funs.results(str(tmp_path), 2)
    assert sorted(i for r in res.values() for i in r["ids"]) == list(range(5000))


@pytest.mark.tf
def test_keras_model_trains_on_two_executors(sc, tmp_path):
    pytest.importorskip("tensorflow")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4096, 4)).astype(np.float32)
    y = x @ np.array([1.0, -2.0, 0.5, 3.0], dtype=np.float32) + 0.1
    rdd = sc.parallelize(list(zip(x, y.tolist())), 4)
    cluster = TFCluster.run(sc, spark_funs.keras_train, {"out": str(tmp_path)}, 2, input_mode=InputMode.SPARK)
    cluster.train(rdd, num_epochs=3)
    cluster.shutdown()
    res = spark_funs.results(str(tmp_path), 2)
    for r in res.values():
        losses = r["losses"]
        assert len(losses) > 10
        assert np.mean(losses[-5:]) < 0.2 * np.mean(losses[:3]), losses


def test_tfos_get_data_feed_gives_back_the_objects_fed(sc, tmp_path):
    """A TFoS map_fun taking its feed from ``ctx.get_data_feed()`` over rows with a list column,
    on 2 executors from very uneven partitions: every row once, each as it was fed (before, the
    list came back as a numpy array and ``row[1] == [...]`` raised)."""
    rows = [(i, [0.0, 0.5, float(i)]) for i in range(2000)]
    rdd = sc.parallelize(rows[:1900], 1).union(sc.parallelize(rows[1900:], 3))
    cluster = TFCluster.run(sc, spark_funs.tfos_rows, {"out": str(tmp_path), "batch": 64}, 2, input_mode=InputMode.SPARK)
    cluster.train(rdd, num_epochs=1)
    cluster.shutdown()
    res = spark_funs.results(str(tmp_path), 2)
    assert all(not r["bad"] for r in res.values()), [r["bad"] for r in res.values()]
    counts = collections.Counter(i for r in res.values() for i in r["ids"])
    assert set(counts) == set(range(2000)) and set(counts.values()) == {1}
