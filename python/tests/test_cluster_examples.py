"""The recipes in examples/cluster run: the Kubernetes Indexed Job read into the `kubernetes`
client's V1Job with the fields `hydrofeed launch` across nodes needs; the Slurm sbatch script
run with a stub `srun` that starts its nodes here (each its own loopback address and run
directory), feeding every id once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from kubernetes import client
from kubernetes.client import ApiClient

from test_launch import BATCH, TOTAL, TRAINER, data7  # noqa: F401  (data7: fixture)

CLUSTER = Path(__file__).resolve().parents[2] / "examples" / "cluster"


def test_indexed_job_manifest_is_a_v1_job_that_launches_one_node_per_index() -> None:
    docs = list(yaml.safe_load_all((CLUSTER / "indexed-job.yaml").read_text()))
    job_doc = next(d for d in docs if d["kind"] == "Job")
    svc_doc = next(d for d in docs if d["kind"] == "Service")
    # The client's own model deserialisation (what `deserialize` does with a response body).
    job: client.V1Job = ApiClient()._ApiClient__deserialize(job_doc, "V1Job")
    assert isinstance(job, client.V1Job)
    spec = job.spec
    assert spec.completion_mode == "Indexed"
    assert spec.completions == spec.parallelism == 3
    assert spec.backoff_limit_per_index >= 1
    pod = spec.template.spec
    # Node 0 is reached by name: the pods' subdomain is the headless Service.
    assert pod.subdomain == svc_doc["metadata"]["name"]
    assert svc_doc["spec"]["clusterIP"] == "None"
    assert svc_doc["spec"]["selector"] == {"job-name": job.metadata.name}
    (c,) = pod.containers
    cmd = " ".join(c.command)
    assert "--nnodes 3" in cmd
    assert '--node-rank "$JOB_COMPLETION_INDEX"' in cmd
    assert f"--rdzv-endpoint {job.metadata.name}-0.{pod.subdomain}:29400" in cmd
    assert c.ports[0].container_port == 29400
    # The token from a Secret every pod mounts read-only.
    token = cmd.split("--token-file ")[1].split()[0]
    (mount,) = [m for m in c.volume_mounts if token.startswith(m.mount_path + "/")]
    assert mount.read_only
    (vol,) = [v for v in pod.volumes if v.name == mount.name]
    assert vol.secret.secret_name == "hydrofeed-token"
    assert "--max-restarts" in cmd and "--state-out" in cmd


STUB_SRUN = """#!/bin/bash
# srun stub: starts --nodes local nodes at once, SLURM_NODEID k at 127.0.0.(k+2), each its own
# output and run directory.
n=1
while [[ "$1" == --* ]]; do
  case "$1" in --nodes=*) n=${1#--nodes=} ;; esac
  shift
done
pids=()
for k in $(seq 0 $((n - 1))); do
  mkdir -p "$OUT_ROOT/node-$k"
  SLURM_NODEID=$k LOCAL_ADDR=127.0.0.$((k + 2)) OUT="$OUT_ROOT/node-$k" \\
    TMPDIR=$(mktemp -d /tmp/hfs$k-XXXX) "$@" &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
exit $rc
"""


def test_sbatch_script_runs_three_nodes_with_a_stub_srun(
    hf_bin: str, data7: Path, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text(STUB_SRUN)
    (bin_dir / "srun").chmod(0o755)
    (bin_dir / "hydrofeed").symlink_to(hf_bin)
    out = tmp_path / "out"
    env = dict(
        os.environ,
        PATH=f"{bin_dir}:{os.environ['PATH']}",
        SLURM_NNODES="3",
        SLURM_JOB_ID="42",
        HEAD="127.0.0.2",
        PORT=str(29400 + os.getpid() % 2000),
        HOME=str(tmp_path),
        OUT_ROOT=str(out),
        BATCH=str(BATCH),
        INPUT=str(data7),
        TRAIN=f"{sys.executable} {TRAINER}",
    )
    p = subprocess.run(["bash", str(CLUSTER / "sbatch.sh")], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-4000:]
    token = tmp_path / ".hydrofeed" / "token-42"
    assert token.stat().st_mode & 0o077 == 0
    ids: list[int] = []
    for k in range(3):
        for line in (out / f"node-{k}" / f"rank-{k}.jsonl").read_text().splitlines():
            r = json.loads(line)
            ids.extend(r.get("ids", []))
    assert len(ids) == len(set(ids))
    assert TOTAL - len(ids) < 3 * BATCH and len(ids) % (3 * BATCH) == 0
