"""Helpers of the one-off Spark A/B scripts under benches/results: CPU seconds per process kind
(/proc), a local[2] SparkContext as `hydrofeed.spark.bench` makes it, and `bench._tree_cpu`
patched to snapshot every process at the start and end of each run."""
import os
import sys

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ["PYSPARK_PYTHON"] = sys.executable
HERE = os.environ.get("HF_PY", "/work/main/python")  # the tree whose hydrofeed is measured
os.environ["PYTHONPATH"] = HERE
sys.path.insert(0, HERE)

from hydrofeed.spark import bench as B  # noqa: E402


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


def spark_context():
    from pyspark import SparkConf, SparkContext
    conf = (SparkConf().setMaster("local[2]").setAppName("ab").set("spark.ui.enabled", "false")
            .set("spark.ui.showConsoleProgress", "false").set("spark.driver.host", "127.0.0.1")
            .set("spark.driver.memory", "4g"))
    sc = SparkContext(conf=conf); sc.setLogLevel("ERROR")
    return sc


snaps = []
_orig_tree = B._tree_cpu


def _tree():
    snaps.append(procs()); return _orig_tree()


B._tree_cpu = _tree
