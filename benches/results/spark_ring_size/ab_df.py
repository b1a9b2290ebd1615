"""numpy-row RDD with input_mapping vs its ceiling, per-process CPU."""
import os, sys, time, statistics
sys.path.insert(0, "/work/main/benches/results/spark_in_get")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ["PYSPARK_PYTHON"] = sys.executable
here = os.environ.get("HF_PY", "/work/main/python")
os.environ["PYTHONPATH"] = here
sys.path.insert(0, here)
from hydrofeed.spark import bench as B
from pyspark import SparkConf, SparkContext
N = int(os.environ.get("ROWS", "100000")); ROUNDS = int(os.environ.get("ROUNDS", "3"))
def procs():
    tick = os.sysconf("SC_CLK_TCK"); out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit(): continue
        try:
            rest = open(f"/proc/{name}/stat").read().rsplit(")", 1)[1].split()
            cmd = open(f"/proc/{name}/cmdline").read().replace("\0", " ")
        except OSError: continue
        out[int(name)] = (sum(int(x) for x in rest[11:15]) / tick, cmd)
    return out

def kind(cmd, pid):
    if pid == os.getpid(): return "driver"
    if "java" in cmd.split(" ")[0]: return "jvm"
    if "pyspark.daemon" in cmd or "pyspark/daemon" in cmd: return "pyworker"
    if "trainer" in cmd: return "trainer"
    if "supervisor" in cmd: return "supervisor"
    return "other:" + cmd[:60]

def delta(a, b):
    d = {}
    for pid, (c, cmd) in b.items():
        c0 = a[pid][0] if pid in a else 0.0
        k = kind(cmd, pid); d[k] = round(d.get(k, 0) + c - c0, 2)
    return {k: v for k, v in d.items() if abs(v) > 0.005}

conf = (SparkConf().setMaster("local[2]").setAppName("ab").set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "false").set("spark.driver.host", "127.0.0.1").set("spark.driver.memory", "4g"))
sc = SparkContext(conf=conf); sc.setLogLevel("ERROR")
from pyspark.sql import SparkSession, functions as F
spark = SparkSession(sc)
rdd = (spark.range(N).repartition(8).select(
    F.transform(F.array_repeat(F.lit(0), 784), lambda x, i: (F.rand() + i * 0).cast("float")).alias("image"),
    (F.col("id") % 10).alias("label")).cache())
assert rdd.count() == N
cols = {"image_col": "image", "label_col": "label"}
res = {"hf": [], "ceil": []}
snaps = []
_orig_tree = B._tree_cpu
def _tree():
    snaps.append(procs()); return _orig_tree()
B._tree_cpu = _tree
def run(k):
    snaps.clear()
    if k == "hf": r = B._one(sc, "hf", rdd, B._trainer_columns, N, 1, cols)
    else: r = B._ceiling_df(rdd, N, 1)
    r["by_proc"] = delta(snaps[0], snaps[-1]) if len(snaps) > 1 else {}; res[k].append(r); print(k, r["rows_per_s"], r.get("train_s"), r["cpu_s"], r["by_proc"], flush=True)
B._one(sc, "hf", rdd, B._trainer_columns, N, 1, cols); B._ceiling_df(rdd, N, 1)
if os.environ.get("GO"): open(os.environ["GO"], "w").close()
for i in range(ROUNDS):
    for k in (("hf", "ceil") if i % 2 == 0 else ("ceil", "hf")):
        if os.environ.get("ONLY", k) == k: run(k)
if os.environ.get("ONLY"): sc.stop(); sys.exit(0)
rs = [a["rows_per_s"] / b["rows_per_s"] for a, b in zip(res["hf"], res["ceil"])]
print("ratio per round", [round(x, 2) for x in rs], "median", round(statistics.median(rs), 2))
sc.stop()
