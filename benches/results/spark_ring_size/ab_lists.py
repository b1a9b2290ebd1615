"""A/B: list RDD fed as objects vs the ceiling, per-process CPU breakdown."""
import os, sys, time, json, statistics, tempfile
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ["PYSPARK_PYTHON"] = sys.executable
here = os.environ.get("HF_PY", "/work/main/python")
os.environ["PYTHONPATH"] = here
sys.path.insert(0, here)
from hydrofeed.spark import bench as B
from pyspark import SparkConf, SparkContext

N = int(os.environ.get("ROWS", "100000")); ROUNDS = int(os.environ.get("ROUNDS", "4"))

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
def make_list(i):
    import numpy as np
    rng = np.random.default_rng(i)
    return rng.random(784, dtype=np.float32).tolist(), int(i % 10)
lists = sc.range(N, numSlices=8).map(make_list).cache(); assert lists.count() == N
res = {"hf": [], "ceil": []}
snaps = []
_orig_tree = B._tree_cpu
def _tree():
    snaps.append(procs()); return _orig_tree()
B._tree_cpu = _tree
def run(k):
    snaps.clear(); t = time.perf_counter()
    if k == "hf": r = B._one(sc, "hf", lists, B._trainer_objects, N, 1)
    else: r = B._ceiling_rdd(lists, N, 1)
    r["by_proc"] = delta(snaps[0], snaps[1]); res[k].append(r)
    print(k, r["rows_per_s"], r.get("train_s"), r["cpu_s"], r["by_proc"], flush=True)
ONLY=os.environ.get("ONLY")
if not ONLY:  # warm the JVM up on both paths, unrecorded
    B._one(sc, "hf", lists, B._trainer_objects, N, 1); B._ceiling_rdd(lists, N, 1)
if ONLY:
    open("/tmp/ab/go","w").close(); time.sleep(3)
    for i in range(ROUNDS): run(ONLY)
    open("/tmp/ab/done","w").close(); sc.stop(); sys.exit(0)
for i in range(ROUNDS):
    for k in (("hf", "ceil") if i % 2 == 0 else ("ceil", "hf")):
        run(k)
for k in res:
    v = [r["rows_per_s"] for r in res[k]]; print(k, "best", max(v), "median", statistics.median(v))
rs = [a["rows_per_s"] / b["rows_per_s"] for a, b in zip(res["hf"], res["ceil"])]
print("ratio per round", [round(x, 2) for x in rs], "median", round(statistics.median(rs), 2))
sc.stop()
