"""What planning a table of many small files costs: ``hydrofeed inspect --json`` of a Delta table
under column mapping (written by deltalake, one file per partition value), with two binaries
side by side (``--before`` and ``--after``), alternated, each side repeated until it ran >= 2 s,
best and median wall time per plan; on local disk and, with ``--hdfs``, on the test suite's
MiniDFS cluster (3 DataNodes). Every feeder of a job plans its input too, so a job of N feeders
pays N times this before its first batch.

    python benches/table_planning.py --before /tmp/hf-before --after target/release/hydrofeed \\
        --files 1000 --hdfs --json benches/results/tables/planning.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]


def write_table(d: Path, files: int, rows_per_file: int) -> None:
    from deltalake import write_deltalake

    n = files * rows_per_file
    t = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "x": pa.array([i * 0.5 for i in range(n)], pa.float64()),
        "p": pa.array([i % files for i in range(n)], pa.int64()),
    })
    write_deltalake(str(d), t, partition_by=["p"], configuration={
        "delta.columnMapping.mode": "name", "delta.minReaderVersion": "2",
        "delta.minWriterVersion": "5"})


def plan_once(binary: str, path: str, env: dict[str, str]) -> tuple[float, dict]:
    t0 = time.perf_counter()
    r = subprocess.run([binary, "inspect", path, "--json"], capture_output=True, text=True, env=env)
    secs = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"{binary} inspect {path} failed:\n{r.stderr[-3000:]}")
    return secs, json.loads(r.stdout)


def side(binary: str, path: str, env: dict[str, str], min_secs: float) -> tuple[list[float], dict]:
    times: list[float] = []
    plan: dict = {}
    while sum(times) < min_secs:
        secs, plan = plan_once(binary, path, env)
        times.append(secs)
    return times, plan


def measure(sides: dict[str, str], path: str, env: dict[str, str], rounds: int,
            min_secs: float) -> dict:
    times: dict[str, list[float]] = {k: [] for k in sides}
    plans: dict[str, dict] = {}
    for _ in range(rounds):
        for name, binary in sides.items():
            t, plans[name] = side(binary, path, env, min_secs)
            times[name].extend(t)
    out: dict = {}
    for name in sides:
        p = plans[name]
        out[name] = {
            "best_s": min(times[name]),
            "median_s": statistics.median(times[name]),
            "plans": len(times[name]),
            "rows": p["total_rows"],
            "splits": len(p["splits"]),
            "planning": p.get("planning"),
        }
    names = list(sides)
    if len(names) == 2:
        a, b = out[names[0]], out[names[1]]
        out["speedup_best"] = a["best_s"] / b["best_s"]
        out["speedup_median"] = a["median_s"] / b["median_s"]
        if a["rows"] != b["rows"]:
            sys.exit(f"the two plans differ: {a['rows']} rows and {b['rows']}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", help="the binary to compare with (optional)")
    ap.add_argument("--after", default=str(ROOT / "target/release/hydrofeed"))
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--rows-per-file", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-secs", type=float, default=2.0)
    ap.add_argument("--hdfs", action="store_true", help="also on a MiniDFS cluster")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()
    sides = {"before": a.before, "after": a.after} if a.before else {"after": a.after}
    results: dict = {"files": a.files, "rows_per_file": a.rows_per_file}
    with tempfile.TemporaryDirectory(prefix="hf-plan-") as tmp:
        table = Path(tmp) / "t"
        write_table(table, a.files, a.rows_per_file)
        env = dict(os.environ)
        results["local"] = measure(sides, str(table), env, a.rounds, a.min_secs)
        print(json.dumps({"local": results["local"]}, indent=1), flush=True)
        if a.hdfs:
            sys.path.insert(0, str(ROOT / "tests"))
            import minidfs  # the test suite's cluster (Maven fetches Hadoop's test jars)

            dfs = minidfs.start(Path(tmp) / "dfs", minidfs.classpath_or_skip())
            try:
                dfs.put(table, "/bench/t")
                env = dict(os.environ, HADOOP_CONF_DIR=str(dfs.conf_dir))
                results["hdfs"] = measure(sides, dfs.uri("/bench/t"), env, a.rounds, a.min_secs)
                print(json.dumps({"hdfs": results["hdfs"]}, indent=1), flush=True)
            finally:
                dfs.stop()
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
