"""Run by test_driver_death.py: starts a cluster, prints its supervisors, then waits to be killed."""

import json
import os
import tempfile
import time

import spark_funs
from pyspark import SparkConf, SparkContext

from hydrofeed.spark import InputMode, TFCluster

conf = (
    SparkConf()
    .setMaster("local[2]")
    .setAppName("hydrofeed-driver-dies")
    .set("spark.ui.enabled", "false")
    .set("spark.ui.showConsoleProgress", "false")
    .set("spark.driver.host", "127.0.0.1")
)
sc = SparkContext(conf=conf)
sc.setLogLevel("ERROR")
cluster = TFCluster.run(sc, spark_funs.record_ids, {"out": tempfile.mkdtemp(prefix="hf-dd-")}, 2, input_mode=InputMode.SPARK)
print(json.dumps({"supervisors": [n["supervisor_pid"] for n in cluster.cluster_info],
                  "socks": [n["sock"] for n in cluster.cluster_info]}), flush=True)
time.sleep(600)  # the test kills this process with SIGKILL
os._exit(3)
