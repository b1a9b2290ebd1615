"""Run by test_secure_hdfs.py: file mode on `local-cluster[2,1,1024]` against a kerberized HDFS,
the way a TFoS job on a secure cluster runs. The driver logs in from a keytab (as
`spark-submit --principal --keytab` does); nobody else has a ticket (`KRB5CCNAME` names an empty
cache for every process), so the coordinator and the executors' feeders can only read with the
delegation tokens `train_files` obtained on the driver. argv: uri, principal, keytab, out."""

import json
import os
import sys

from pyspark import SparkConf, SparkContext

from hydrofeed.spark import InputMode, TFCluster

uri, principal, keytab, out = sys.argv[1:5]


def main_fun(args, ctx):
    import json as js
    import os as o

    feed = ctx.get_data_feed(train_mode=True)
    ids = []
    while not feed.should_stop():
        ids.extend(int(row[0]) for row in feed.next_batch(50))
    with open(o.path.join(args["out"], f"rank{ctx.executor_id}.json"), "w") as f:
        js.dump({"ids": ids, "krb5ccname": o.environ.get("KRB5CCNAME")}, f)


conf = (
    SparkConf()
    .setMaster("local-cluster[2,1,1024]")
    .setAppName("hydrofeed-secure")
    .set("spark.ui.enabled", "false")
    .set("spark.ui.showConsoleProgress", "false")
    .set("spark.driver.host", "127.0.0.1")
)
sc = SparkContext(conf=conf)
sc.setLogLevel("ERROR")
ugi = sc._jvm.org.apache.hadoop.security.UserGroupInformation
ugi.setConfiguration(sc._jsc.hadoopConfiguration())
ugi.loginUserFromKeytab(principal, keytab)
cluster = TFCluster.run(sc, main_fun, {"out": out}, 2, input_mode=InputMode.SPARK)
state = cluster.train_files(uri, num_epochs=1, batch_size=50)
cluster.shutdown()
res = [json.load(open(os.path.join(out, f"rank{r}.json"))) for r in range(2)]
print(json.dumps({"finished": state["finished"], "ranks": res}))
sc.stop()
