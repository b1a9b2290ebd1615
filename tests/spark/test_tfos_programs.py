"""TensorFlowOnSpark's example programs run unchanged but for the import (``tfos_programs``), on
2 executors, over MNIST-like rows from very uneven partitions: every row reaches a trainer once,
as the Python objects it was fed as, and inference gives one result per row in input order."""

from __future__ import annotations

import argparse
import collections
import json
import os

import pytest

import tfos_programs
from hydrofeed.compat.tensorflowonspark import TFCluster

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

ROWS = 1500


def _rdd(sc):
    """The examples' ``sc.textFile(...).map(parse)`` over 1,500 rows in partitions of 1,300, 100,
    60 and 40 rows."""
    lines = tfos_programs.mnist_lines(ROWS)
    parts = [lines[:1300], lines[1300:1400], lines[1400:1460], lines[1460:]]
    rdd = sc.parallelize(parts[0], 1)
    for p in parts[1:]:
        rdd = rdd.union(sc.parallelize(p, 1))
    return rdd.map(tfos_programs.parse)


def _args(tmp_path, max_steps: int = 0) -> argparse.Namespace:
    return argparse.Namespace(out=str(tmp_path), batch_size=32, max_steps=max_steps)


def test_keras_mnist_spark_trains_on_every_row_once(sc, tmp_path):
    pytest.importorskip("tensorflow")
    cluster = TFCluster.run(sc, tfos_programs.mnist_train, _args(tmp_path), 2, num_ps=0, tensorboard=False,
                            input_mode=TFCluster.InputMode.SPARK, master_node="chief")
    cluster.train(_rdd(sc), 1)
    cluster.shutdown()
    res = _results(tmp_path)
    counts = collections.Counter(i for r in res for i in r["ids"])
    assert set(counts) == set(range(ROWS)), sorted(set(range(ROWS)) - set(counts))[:10]
    assert set(counts.values()) == {1}, [i for i, c in counts.items() if c > 1][:10]
    assert sorted(r["job_name"] for r in res) == ["chief", "worker"]
    for r in res:
        assert all(loss == loss for loss in r["losses"]), r["losses"]  # no NaN: the pixels arrived as numbers


def test_estimator_stop_hook_terminates_and_the_job_ends(sc, tmp_path):
    """The estimator example's ``StopFeedHook``: after its last step a rank calls ``terminate()``
    then ``next_batch(1)``; that call returns (the rest of the feed is skipped), the job ends."""
    pytest.importorskip("tensorflow")
    cluster = TFCluster.run(sc, tfos_programs.mnist_train, _args(tmp_path, max_steps=3),
                            2, num_ps=0, input_mode=TFCluster.InputMode.SPARK, master_node="chief")
    cluster.train(_rdd(sc), 2)
    cluster.shutdown()
    res = _results(tmp_path)
    for r in res:
        assert len(r["losses"]) == 3
        assert len(r["ids"]) == 3 * 32 and len(set(r["ids"])) == 3 * 32


def test_inference_gives_one_result_per_row_in_input_order(sc, tmp_path):
    cluster = TFCluster.run(sc, tfos_programs.mnist_inference, _args(tmp_path), 2, 0,
                            input_mode=TFCluster.InputMode.SPARK)
    out = cluster.inference(_rdd(sc)).collect()
    cluster.shutdown()
    assert len(out) == ROWS
    ids = [int(s.split()[0]) for s in out]
    assert ids == list(range(ROWS))
    assert [int(s.split()[1]) for s in out] == [i % 10 for i in range(ROWS)]
    assert sum(r["rows"] for r in _results(tmp_path)) == ROWS


def _results(out) -> list[dict]:
    res = []
    for name in sorted(os.listdir(out)):
        if name.startswith("rank") and name.endswith(".json"):
            with open(os.path.join(out, name)) as f:
                res.append(json.load(f))
    assert len(res) == 2, os.listdir(out)
    return res
