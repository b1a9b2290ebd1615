"""A/B: list RDD fed as objects vs the ceiling, per-process CPU breakdown."""
import os, sys, time, statistics
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ab_procs import B, delta, snaps, spark_context  # noqa: E402

N = int(os.environ.get("ROWS", "100000")); ROUNDS = int(os.environ.get("ROUNDS", "4"))

sc = spark_context()
def make_list(i):
    import numpy as np
    rng = np.random.default_rng(i)
    return rng.random(784, dtype=np.float32).tolist(), int(i % 10)
lists = sc.range(N, numSlices=8).map(make_list).cache(); assert lists.count() == N
res = {"hf": [], "ceil": []}
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
