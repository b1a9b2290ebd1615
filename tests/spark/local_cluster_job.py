"""Run by test_local_cluster.py in its own process (one SparkContext per process)."""

import collections
import json
import os
import sys
import tempfile

import spark_funs
from pyspark import SparkConf, SparkContext

from hydrofeed.spark import InputMode, TFCluster

# Spark's GPU scheduling without a GPU: a discovery script that announces address "3" per
# worker; the node must hand it to its trainer as CUDA_VISIBLE_DEVICES.
gpu_script = os.path.join(tempfile.mkdtemp(prefix="hf-gpu-"), "gpus.sh")
with open(gpu_script, "w") as f:
    f.write('#!/bin/sh\necho \'{"name": "gpu", "addresses": ["3"]}\'\n')
os.chmod(gpu_script, 0o755)
conf = (
    SparkConf()
    .setMaster("local-cluster[2,1,1024]")
    .setAppName("hydrofeed-local-cluster")
    .set("spark.ui.enabled", "false")
    .set("spark.ui.showConsoleProgress", "false")
    .set("spark.driver.host", "127.0.0.1")
    .set("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
    .set("spark.worker.resource.gpu.amount", "1")
    .set("spark.worker.resource.gpu.discoveryScript", gpu_script)
    .set("spark.executor.resource.gpu.amount", "1")
    .set("spark.task.resource.gpu.amount", "1")
)
sc = SparkContext(conf=conf)
sc.setLogLevel("ERROR")
out = tempfile.mkdtemp(prefix="hf-lc-")
rdd = sc.parallelize([(i,) for i in range(4000)], 6)
cluster = TFCluster.run(sc, spark_funs.record_ids, {"out": out, "batch": 50}, 2, input_mode=InputMode.SPARK)
cluster.train(rdd, num_epochs=2)
cluster.shutdown()
counts = collections.Counter()
cuda = set()
for r in range(2):
    with open(os.path.join(out, f"rank{r}.json")) as f:
        res = json.load(f)
    counts.update(res["ids"])
    cuda.add(res["cuda"])
print(json.dumps({"distinct": len(counts), "times": sorted(set(counts.values())),
                  "workers": [n["job_name"] for n in cluster.cluster_info],
                  "node_pids": sorted({n["pid"] for n in cluster.cluster_info}),
                  "gpus": [n["gpus"] for n in cluster.cluster_info], "cuda": sorted(cuda)}))
sc.stop()
sys.exit(0)
