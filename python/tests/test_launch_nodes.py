"""`hydrofeed launch --nnodes 3` as three machines on one: each node in its own network
namespace (a veth pair to a bridge in a namespace of its own, addresses 10.77.0.2-4; where
namespaces are refused, its own loopback address 127.0.0.2-4) with its own run and output
directories, node 0 the coordinator on the rendezvous
endpoint. Every id once per epoch with equal steps; a node `kill -9`ed mid-epoch is named on the
others, the state is saved, and with --max-restarts the group (the killed node started again,
as a scheduler does) resumes exactly-once.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest

from test_launch import BATCH, TOTAL, TRAINER, data7  # noqa: F401  (data7: fixture)

NODES = 3


class Net:
    """Where the nodes run: `prefix[k]` runs a command on node k, `addrs[k]` is its address."""

    def __init__(self) -> None:
        self.spaces: list[str] = []
        self.addrs = [f"127.0.0.{k + 2}" for k in range(NODES)]
        self.prefix: list[list[str]] = [[] for _ in range(NODES)]
        tag = f"hf{os.getpid() % 100000}"
        sw = f"{tag}sw"
        cmds = [["ip", "netns", "add", sw], ["ip", "-n", sw, "link", "add", "br0", "type", "bridge"],
                ["ip", "-n", sw, "link", "set", "br0", "up"]]
        for k in range(NODES):
            ns = f"{tag}n{k}"
            cmds += [
                ["ip", "netns", "add", ns],
                ["ip", "-n", ns, "link", "set", "lo", "up"],
                ["ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", f"p{k}",
                 "netns", sw],
                ["ip", "-n", ns, "addr", "add", f"10.77.0.{k + 2}/24", "dev", "eth0"],
                ["ip", "-n", ns, "link", "set", "eth0", "up"],
                ["ip", "-n", sw, "link", "set", f"p{k}", "master", "br0"],
                ["ip", "-n", sw, "link", "set", f"p{k}", "up"],
            ]
        # HYDROFEED_TEST_NETNS=0: the loopback fallback, as where namespaces are refused.
        if os.environ.get("HYDROFEED_TEST_NETNS") == "0":
            cmds = [["false"]]
        try:
            for c in cmds:
                if c[:3] == ["ip", "netns", "add"]:
                    self.spaces.append(c[3])
                subprocess.run(c, check=True, capture_output=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            self.close()
            return
        self.addrs = [f"10.77.0.{k + 2}" for k in range(NODES)]
        self.prefix = [["ip", "netns", "exec", f"{tag}n{k}"] for k in range(NODES)]

    def port(self) -> int:
        if not self.spaces:
            return free_port(self.addrs[0])
        return 20000 + (os.getpid() * 7 + int(time.time() * 1000)) % 30000

    def close(self) -> None:
        for ns in self.spaces:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)
        self.spaces = []


@pytest.fixture()
def net():
    n = Net()
    yield n
    n.close()
# Each trainer process records into its own directory: a restarted group's trainers do not
# overwrite what the first group's recorded.
WRAP = (
    "import os, runpy, sys; "
    "d = os.path.join(os.environ['OUT'], os.environ['HYDROFEED_RESTART'] + '-' + str(os.getpid())); "
    "os.makedirs(d); os.environ['OUT'] = d; "
    f"sys.argv = [{TRAINER!r}]; runpy.run_path({TRAINER!r}, run_name='__main__')"
)


def free_port(host: str) -> int:
    while True:
        with socket.socket() as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
        if port < 65000:
            return port


def start_node(
    net: Net, hf_bin: str, data: Path, tmp: Path, rank: int, port: int, *extra: str,
    env: dict | None = None, join: float = 60,
) -> subprocess.Popen:
    out = tmp / f"node-{rank}"
    # Each node its own run directory (the sockets' paths must stay short).
    out.mkdir(parents=True, exist_ok=True)
    e = dict(os.environ, OUT=str(out), HYDROFEED_TOKEN="job-token-shared-by-the-nodes-0123",
             TMPDIR=tempfile.mkdtemp(prefix=f"hfn{rank}-", dir="/tmp"), **(env or {}))
    return subprocess.Popen(
        [*net.prefix[rank], hf_bin, "launch", "--nnodes", str(NODES), "--node-rank", str(rank),
         "--rdzv-endpoint", f"{net.addrs[0]}:{port}", "--local-addr", net.addrs[rank],
         "--workers", "1", "--input", str(data), "--batch-size", str(BATCH),
         "--join-timeout", str(join), "--dead-after", "2", "--grace", "5", "--memory-mb", "48",
         *extra, "--", sys.executable, "-c", WRAP],
        env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def steps(out: Path) -> list[dict]:
    """Every step recorded under `out` (every trainer process), with its directory."""
    recs = []
    for f in sorted(out.glob("node-*/*/rank-*.jsonl")):
        for line in f.read_text().splitlines():
            r = json.loads(line)
            if "ids" in r:
                r["who"] = str(f.relative_to(out))
                recs.append(r)
    return recs


def finish(p: subprocess.Popen, secs: float = 120) -> tuple[int, str]:
    _, err = p.communicate(timeout=secs)
    return p.returncode, err


def test_three_nodes_feed_every_id_once_per_epoch_with_equal_steps(
    net: Net, hf_bin: str, data7: Path, tmp_path: Path
) -> None:
    port = net.port()
    nodes = [start_node(net, hf_bin, data7, tmp_path, r, port, "--epochs", "2") for r in range(NODES)]
    ends = [finish(p) for p in nodes]
    for r, (rc, err) in enumerate(ends):
        assert rc == 0, f"node {r}: {err[-3000:]}"
    assert "every node joined" in ends[1][1]
    print("nodes at", net.addrs)
    recs = steps(tmp_path)
    for epoch in (0, 1):
        ids = [i for s in recs if s["epoch"] == epoch for i in s["ids"]]
        # Equal steps drop the rows that do not fill a step of every rank.
        assert len(ids) == len(set(ids)), f"epoch {epoch}: an id came twice"
        assert TOTAL - len(ids) < NODES * BATCH and len(ids) % (NODES * BATCH) == 0
    per_rank = Counter(s["who"].split("/")[0] for s in recs)
    assert len(set(per_rank.values())) == 1 and len(per_rank) == NODES, per_rank


def test_missing_node_is_named_when_the_join_times_out(
    net: Net, hf_bin: str, data7: Path, tmp_path: Path
) -> None:
    port = net.port()
    nodes = [start_node(net, hf_bin, data7, tmp_path, r, port, join=4) for r in (0, 1)]
    rc, err = finish(nodes[0], 60)
    assert rc != 0
    assert "did not join" in err and "node 2 (ranks [2])" in err, err[-3000:]
    nodes[1].kill()
    nodes[1].communicate()


def test_node_killed_mid_epoch_is_named_and_the_group_restarts_exactly_once(
    net: Net, hf_bin: str, data7: Path, tmp_path: Path
) -> None:
    port = net.port()
    state = tmp_path / "state.json"
    extra = ("--max-restarts", "1", "--state-out", str(state))
    env = {"SLOW": "0.05"}
    nodes = [start_node(net, hf_bin, data7, tmp_path, r, port, *extra, env=env) for r in range(NODES)]
    deadline = time.time() + 60
    while len([s for s in steps(tmp_path) if s["who"].startswith("node-2")]) < 5:
        assert time.time() < deadline, "node 2 never fed"
        assert nodes[2].poll() is None
        time.sleep(0.05)
    os.kill(nodes[2].pid, signal.SIGKILL)
    nodes[2].communicate()
    killed = {i for s in steps(tmp_path) if s["who"].startswith("node-2") for i in s["ids"]}
    # The scheduler starts the dead node again with the same command.
    time.sleep(1)
    nodes[2] = start_node(net, hf_bin, data7, tmp_path, 2, port, *extra, env={})
    ends = [finish(p, 180) for p in nodes]
    for r, (rc, err) in enumerate(ends):
        assert rc == 0, f"node {r}: {err[-4000:]}"
    for r in (0, 1):
        assert f"node 2 (ranks [2] at {net.addrs[2]}) died" in ends[r][1], ends[r][1][-3000:]
    assert "restarting the group from that state" in ends[0][1]
    ids = Counter(i for s in steps(tmp_path) for i in s["ids"])
    # Every id once; only what the killed node's trainer read after its last ack comes again.
    twice = {i for i, n in ids.items() if n > 1}
    assert twice <= killed, sorted(twice - killed)[:20]
    assert all(n <= 2 for n in ids.values())
    assert TOTAL - len(ids) < NODES * BATCH
    st = json.loads(state.read_text())
    assert st["epochs"] == 1


def make_ca(d: Path, name: str) -> Path:
    """The job's CA as a scheduler would mount it (`ca.crt`, `ca.key`), made with openssl."""
    import shutil

    openssl = shutil.which("openssl")
    assert openssl, "openssl is needed to make the test's CA (Debian: apt-get install openssl)"
    d.mkdir()
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(d / "ca.key"), "-out", str(d / "ca.crt"), "-days", "2", "-subj", f"/CN={name}",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,digitalSignature"],
        check=True, capture_output=True, timeout=30,
    )
    return d


def test_three_nodes_under_mutual_tls_with_the_jobs_ca(net: Net, hf_bin: str, data7: Path, tmp_path: Path) -> None:
    """`--tls mutual --tls-ca-dir`: each node signs its own certificates with the job's CA; the
    coordinator refuses any client without one, so a job that ends well crossed nodes under TLS."""
    ca = make_ca(tmp_path / "ca", "hydrofeed test job CA")
    port = net.port()
    tls = ("--tls", "mutual", "--tls-ca-dir", str(ca))
    nodes = [start_node(net, hf_bin, data7, tmp_path, r, port, *tls) for r in range(NODES)]
    ends = [finish(p) for p in nodes]
    for r, (rc, err) in enumerate(ends):
        assert rc == 0, f"node {r}: {err[-3000:]}"
    ids = [i for s in steps(tmp_path) for i in s["ids"]]
    assert len(ids) == len(set(ids)) and TOTAL - len(ids) < NODES * BATCH


def test_a_node_with_another_ca_is_refused_and_named(net: Net, hf_bin: str, data7: Path, tmp_path: Path) -> None:
    ca = make_ca(tmp_path / "ca", "hydrofeed test job CA")
    other = make_ca(tmp_path / "other", "some other CA")
    port = net.port()
    nodes = [start_node(net, hf_bin, data7, tmp_path, r, port, "--tls", "mutual", "--tls-ca-dir",
                        str(ca if r < 2 else other), join=6) for r in range(NODES)]
    ends = [finish(p) for p in nodes]
    assert ends[0][0] != 0 and "node 2 (ranks [2])" in ends[0][1], ends[0][1][-3000:]
    rc2, err2 = ends[2]
    assert rc2 != 0 and "node 0's coordinator" in err2, err2[-3000:]


def test_tls_across_nodes_without_the_jobs_ca_is_refused(hf_bin: str, data7: Path) -> None:
    p = subprocess.run(
        [hf_bin, "launch", "--nnodes", "2", "--node-rank", "0", "--rdzv-endpoint", "127.0.0.1:1",
         "--workers", "1", "--input", str(data7), "--batch-size", "8", "--tls", "--", "true"],
        capture_output=True, text=True, timeout=30, env=dict(os.environ, HYDROFEED_TOKEN="t" * 32),
    )
    assert p.returncode != 0 and "--tls across nodes needs --tls-ca-dir" in p.stderr, p.stderr


def test_errors_across_nodes_read_as_one_sentence(hf_bin: str, data7: Path) -> None:
    p = subprocess.run(
        [hf_bin, "launch", "--nnodes", "2", "--node-rank", "0", "--rdzv-endpoint", "127.0.0.1:1",
         "--workers", "1", "--input", str(data7), "--", "true"],
        capture_output=True, text=True, timeout=30, env=dict(os.environ, HYDROFEED_TOKEN="t" * 32),
    )
    assert p.returncode != 0
    assert "the trainers of every node cannot agree on one" in p.stderr, p.stderr
