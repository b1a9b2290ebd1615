"""`bench spark`'s list RDD feed (`hydrofeed_spark_rdd_lists`) and its ceiling only, in one
Spark application (local[2]), alternated ROUNDS times (the order reversed every other round);
each run's rows/s, the trainer's first-to-last-batch rate, CPU seconds of the process tree, and
those CPU seconds by kind of process (jvm, pyworkers: Spark's Python workers, supervisor,
trainer). ROWS (100000), ROUNDS (3); ONLY=ours|ceil runs one side; PERF=1 records `perf record
-a -g` into PERF_OUT (perf.data) over the last round's PERFWHAT (ours) run."""
import os, sys, time, statistics
from hydrofeed.spark import bench as B

def kinds():
    out = {}
    tree = B._tree_cpu()
    for pid, (ppid, cpu) in tree.items():
        try:
            cmd = open(f"/proc/{pid}/cmdline","rb").read().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "java" in cmd.split(" ")[0]: k = "jvm"
        elif "pyspark.daemon" in cmd or "pyspark/daemon" in cmd: k = "pyworkers"
        elif "supervisor" in cmd: k = "supervisor"
        elif "trainer" in cmd: k = "trainer"
        elif pid == os.getpid(): k = "driver"
        else: k = "other:" + cmd[:60]
        out[pid] = (k, cpu)
    return out

def diff(a, b):
    d = {}
    for pid, (k, cpu) in b.items():
        d[k] = d.get(k, 0) + cpu - (a[pid][1] if pid in a else 0)
    return {k: round(v, 2) for k, v in d.items()}

def main():
    n = int(os.environ.get("ROWS", "100000")); rounds = int(os.environ.get("ROUNDS", "3"))
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark import SparkConf, SparkContext
    conf = (SparkConf().setMaster("local[2]").setAppName("x").set("spark.ui.enabled", "false")
            .set("spark.ui.showConsoleProgress", "false").set("spark.driver.host", "127.0.0.1").set("spark.driver.memory", "4g"))
    sc = SparkContext(conf=conf); sc.setLogLevel("ERROR")
    def make_list(i):
        import numpy as np
        rng = np.random.default_rng(i)
        return rng.random(784, dtype=np.float32).tolist(), int(i % 10)
    lists = sc.range(n, numSlices=8).map(make_list).cache()
    assert lists.count() == n
    res = {"ours": [], "ceil": []}
    orig_cpu = B._cpu_since
    for r in range(rounds):
        order = [("ours", lambda: B._one(sc, "hf", lists, B._trainer_objects, n, 1)), ("ceil", lambda: B._ceiling_rdd(lists, n, 1))]
        if r % 2: order.reverse()
        if os.environ.get("ONLY"): order=[o for o in order if o[0]==os.environ["ONLY"]]
        for name, fn in order:
            k0 = kinds()
            snap = {}
            perf = {}
            orig_tree = B._tree_cpu
            def tree():
                if os.environ.get("PERF") and r == rounds-1 and not perf and name == os.environ.get("PERFWHAT", "ours"):
                    import subprocess
                    perf["p"] = subprocess.Popen(["perf","record","-a","-g","-F","999","-o",os.environ.get("PERF_OUT", "perf.data")],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL); time.sleep(0.3)
                return orig_tree()
            B._tree_cpu = tree
            def cpu_since(t0, k0=k0, snap=snap):
                if perf:
                    import signal; perf["p"].send_signal(signal.SIGINT); perf["p"].wait()
                snap["k"] = diff(k0, kinds()); return orig_cpu(t0)
            B._cpu_since = cpu_since
            x = fn()
            B._cpu_since = orig_cpu
            B._tree_cpu = orig_tree
            x["kinds"] = snap.get("k")
            res[name].append(x)
            print(name, x["rows_per_s"], x.get("trainer_rows_per_s"), x["cpu_s"], x["kinds"], flush=True)
    if not res["ceil"]: return
    rs = [round(a["rows_per_s"]/b["rows_per_s"], 3) for a, b in zip(res["ours"], res["ceil"])]
    print("per round", rs, "median", statistics.median(rs))
    sc.stop()
main()
