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
        # CPU s (user + system, with reaped children), the command, minor page faults, system s
        out[int(name)] = (sum(int(x) for x in rest[11:15]) / tick, cmd, int(rest[7]), int(rest[12]) / tick)
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
    for pid, (c, cmd, flt, sys_s) in b.items():
        c0, _, f0, s0 = a.get(pid, (0.0, "", 0, 0.0))
        k = kind(cmd, pid); d[k] = round(d.get(k, 0) + c - c0, 2)
        if k == "trainer":  # where its time goes: minor page faults and system time
            d["trainer_faults"] = d.get("trainer_faults", 0) + flt - f0
            d["trainer_sys"] = round(d.get("trainer_sys", 0) + sys_s - s0, 2)
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
