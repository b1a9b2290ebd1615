"""``hydrofeed.compat.tensorflowonspark``: a TFoS script runs by changing its import."""

from __future__ import annotations

import json
import os

import pytest

import spark_funs
from hydrofeed.compat.tensorflowonspark import TFCluster, TFNode
from hydrofeed.spark.node import NodeContext

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]


def test_tfos_script_terminates_early_and_remaining_partitions_are_skipped(sc, tmp_path):
    rdd = sc.parallelize([(i, [0] * 8) for i in range(20000)], 10)
    cluster = TFCluster.run(sc, spark_funs.tfos_terminate_early, {"out": str(tmp_path), "stop_after": 300}, 2, 0,
                            False, TFCluster.InputMode.SPARK)
    cluster.train(rdd, 1)
    cluster.shutdown()
    for r in range(2):
        with open(os.path.join(tmp_path, f"rank{r}.json")) as f:
            res = json.load(f)
        assert res["seen"] == 300
        assert "TF1-only" in res["tf1"] and "MultiWorkerMirroredStrategy" in res["tf1"]
        assert res["abs"] == f"file://{os.getcwd()}/model"
        assert res["abs_root"] == "file:///data"


def test_tfos_inference_with_datafeed_and_mgr(sc, tmp_path):
    data = [(i,) for i in range(500)]
    cluster = TFCluster.run(sc, spark_funs.tfos_inference, {"out": str(tmp_path), "batch": 64}, 2, 0,
                            input_mode=TFCluster.InputMode.SPARK)
    out = cluster.inference(sc.parallelize(data, 4)).collect()
    cluster.shutdown()
    assert [int(s.split(":")[0]) for s in out] == list(range(500))
    assert {s.split(":")[1] for s in out} <= {"0", "1"}


def test_default_input_mode_is_tfos_s():
    import inspect

    assert inspect.signature(TFCluster.run).parameters["input_mode"].default == TFCluster.InputMode.TENSORFLOW
    assert list(inspect.signature(TFCluster.run).parameters)[:5] == ["sc", "map_fun", "tf_args", "num_executors", "num_ps"]


def test_hdfs_path_follows_tfos():
    ctx = NodeContext(0, "worker", 0, {"worker": ["h:1"]}, "hdfs://nn:8020", "/home/u")
    assert TFNode.hdfs_path(ctx, "hdfs://other/x") == "hdfs://other/x"
    assert TFNode.hdfs_path(ctx, "/abs/x") == "hdfs://nn:8020/abs/x"
    assert TFNode.hdfs_path(ctx, "rel").startswith("hdfs://nn:8020/user/")
    local = NodeContext(0, "worker", 0, {}, "file://", "/home/u")
    assert TFNode.hdfs_path(local, "rel") == "file:///home/u/rel"
    with pytest.raises(NotImplementedError, match="TF2"):
        TFNode.export_saved_model(None, "d", None, None)
