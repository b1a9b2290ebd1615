"""Run by test_local_cluster.py in its own process (one SparkContext per process)."""

import collections
import json
import os
import sys
import tempfile

import spark_funs
from pyspark import SparkConf, SparkContext

from hydrofeed.spark import InputMode, TFCluster

conf = (
    SparkConf()
    .setMaster("local-cluster[2,1,1024]")
    .setAppName("hydrofeed-local-cluster")
    .set("spark.ui.enabled", "false")
    .set("spark.ui.showConsoleProgress", "false")
    .set("spark.driver.host", "127.0.0.1")
    .set("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
)
sc = SparkContext(conf=conf)
sc.setLogLevel("ERROR")
out = tempfile.mkdtemp(prefix="hf-lc-")
rdd = sc.parallelize([(i,) for i in range(4000)], 6)
cluster = TFCluster.run(sc, spark_funs.record_ids, {"out": out, "batch": 50}, 2, input_mode=InputMode.SPARK)
cluster.train(rdd, num_epochs=2)
cluster.shutdown()
counts = collections.Counter()
for r in range(2):
    with open(os.path.join(out, f"rank{r}.json")) as f:
        counts.update(json.load(f)["ids"])
print(json.dumps({"distinct": len(counts), "times": sorted(set(counts.values())),
                  "workers": [n["job_name"] for n in cluster.cluster_info],
                  "node_pids": sorted({n["pid"] for n in cluster.cluster_info})}))
sc.stop()
sys.exit(0)
