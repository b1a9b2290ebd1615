"""Run by test_wheel.py: file mode on `local-cluster[2,1,1024]` whose executors get their Python
the way YARN users ship it: a venv-pack archive (`spark.archives ARCHIVE#env`) with the hydrofeed
wheel, `spark.pyspark.python=./env/bin/python`, and nothing else (no PYTHONPATH, no
HYDROFEED_BIN): the feeders' binary comes from that environment. argv: archive, data, out."""

import json
import os
import sys

from pyspark import SparkConf, SparkContext

from hydrofeed.spark import InputMode, TFCluster

archive, data, out = sys.argv[1:4]
# What spark-submit makes of `--conf spark.pyspark.python`: the executors' Python workers run
# this (relative to the executor's directory, where the archive is unpacked as `env`).
os.environ["PYSPARK_PYTHON"] = "./env/bin/python"


def main_fun(args, ctx):
    import json as js
    import os as o
    import sys as s

    import hydrofeed
    from hydrofeed._proc import hydrofeed_bin

    feed = ctx.get_data_feed(train_mode=True)
    ids = []
    while not feed.should_stop():
        batch = feed.next_batch(50)
        ids.extend(int(row[0]) for row in batch)
    with open(o.path.join(args["out"], f"rank{ctx.executor_id}.json"), "w") as f:
        js.dump({"ids": ids, "python": s.executable, "package": hydrofeed.__file__,
                 "binary": hydrofeed_bin(), "cwd": o.getcwd()}, f)


conf = (
    SparkConf()
    .setMaster("local-cluster[2,1,1024]")
    .setAppName("hydrofeed-archive")
    .set("spark.ui.enabled", "false")
    .set("spark.ui.showConsoleProgress", "false")
    .set("spark.driver.host", "127.0.0.1")
    .set("spark.archives", f"{archive}#env")
    .set("spark.pyspark.python", "./env/bin/python")
)
sc = SparkContext(conf=conf)
sc.setLogLevel("ERROR")
cluster = TFCluster.run(sc, main_fun, {"out": out}, 2, input_mode=InputMode.SPARK)
state = cluster.train_files(data, num_epochs=1, batch_size=50)
cluster.shutdown()
res = [json.load(open(os.path.join(out, f"rank{r}.json"))) for r in range(2)]
print(json.dumps({"state_finished": state["finished"], "spark": sc.version, "ranks": res}))
sc.stop()
