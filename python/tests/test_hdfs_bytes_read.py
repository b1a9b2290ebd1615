"""What the DataNodes of a real MiniDFS send for a read (their own ``BytesRead`` counters, read
from JMX), against WebHDFS reading each file once (the 1.0x reference): ``hydrofeed inspect``
(footers only) and ``hydrofeed.read`` of the whole input must not make them send much more than
the bytes asked for. Before, every small read fetched a 4 MiB read-ahead window: a footer or a
column chunk of a few hundred KiB cost 4 MiB of DataNode traffic (3x the input for a whole read,
half the input for footers alone).

Then a job, ``launch --workers 2`` for one epoch in each order (fixed, fixed with a shuffle
buffer, dynamic): each byte once, so at most 1.05x plus a row group per rank boundary.

Input: 4 Parquet files (pyarrow) of about 4 MiB each, 1 MiB HDFS blocks, row groups of 1,000
rows (about 270 KiB, incompressible floats).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hydrofeed

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from minidfs import minidfs  # noqa: E402,F401  (the session fixture)

pytestmark = [pytest.mark.hdfs, pytest.mark.timeout(600)]

NN_HTTP = "http://127.0.0.1:9870"
FILES, ROWS, WIDTH = 4, 15_000, 64


def _jmx(url: str) -> list[dict]:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)["beans"]


def datanode_bytes_read() -> int:
    """The sum of every live DataNode's ``BytesRead``, once the metrics' JMX cache shows
    everything read before the call: it holds a source's values for one metrics period, 1 s in
    the harness's MiniDFS (``tests/minidfs/src/main/resources/hadoop-metrics2.properties``;
    10 s by default)."""
    time.sleep(2.5)
    info = _jmx(f"{NN_HTTP}/jmx?qry=Hadoop:service=NameNode,name=NameNodeInfo")[0]
    # The DataNodes of a MiniDFS share one JVM: each one's /jmx shows every one's bean.
    seen: dict[str, int] = {}
    for node in json.loads(info["LiveNodes"]).values():
        for b in _jmx(f"http://{node['infoAddr']}/jmx?qry=Hadoop:service=DataNode,name=DataNodeActivity-*"):
            seen[b["name"]] = int(b["BytesRead"])
    return sum(seen.values())


def webhdfs_read(path: str) -> int:
    with urllib.request.urlopen(f"{NN_HTTP}/webhdfs/v1{path}?op=OPEN&user.name=root", timeout=60) as r:
        return len(r.read())


def test_datanodes_send_the_bytes_asked_for(hf_bin: str, tmp_path: Path, minidfs) -> None:  # noqa: F811
    rng = np.random.default_rng(5)
    paths = []
    for k in range(FILES):
        feats = rng.random(ROWS * WIDTH, dtype=np.float32)
        t = pa.table({
            "id": pa.array(np.arange(k * ROWS, (k + 1) * ROWS, dtype=np.int64)),
            "x": pa.FixedSizeListArray.from_arrays(pa.array(feats), WIDTH),
        })
        local = tmp_path / f"part-{k:05d}.parquet"
        pq.write_table(t, local, row_group_size=1000, compression="none")
        paths.append(minidfs.put(local, f"/bytesread/{local.name}"))
    size = sum((tmp_path / f"part-{k:05d}.parquet").stat().st_size for k in range(FILES))
    env = minidfs.env()

    before = datanode_bytes_read()
    idle = datanode_bytes_read() - before
    before = datanode_bytes_read()
    got = sum(webhdfs_read(f"/bytesread/part-{k:05d}.parquet") for k in range(FILES))
    assert got == size
    ref = datanode_bytes_read() - before
    assert ref >= size, (ref, size)

    before = datanode_bytes_read()
    r = subprocess.run([hf_bin, "inspect", minidfs.uri("/bytesread")], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    footers = datanode_bytes_read() - before

    conf = os.environ.get("HADOOP_CONF_DIR")
    os.environ["HADOOP_CONF_DIR"] = env["HADOOP_CONF_DIR"]
    try:
        before = datanode_bytes_read()
        rows = sum(b.num_rows for b in hydrofeed.read(minidfs.uri("/bytesread")))
        whole = datanode_bytes_read() - before
    finally:
        if conf is None:
            os.environ.pop("HADOOP_CONF_DIR", None)
        else:
            os.environ["HADOOP_CONF_DIR"] = conf
    assert rows == FILES * ROWS
    print(f"idle {idle} B; input {size} B; WebHDFS {ref} B; inspect {footers} B ({footers / ref:.3f}x); "
          f"read {whole} B ({whole / ref:.3f}x)")
    assert idle == 0, f"the DataNodes sent {idle} B while nothing read"
    assert footers <= 0.02 * ref, f"inspect made the DataNodes send {footers} B, {footers / ref:.2f}x the input"
    assert whole <= 1.05 * ref, f"a whole read made the DataNodes send {whole} B, {whole / ref:.2f}x the input"

    # A job: `launch --workers 2`, one epoch, in every order. Besides 1.05x, one row group per
    # rank boundary (the row group where rank 1's share starts is read by both ranks).
    unit = max(pq.ParquetFile(tmp_path / f"part-{k:05d}.parquet").metadata.row_group(0).total_byte_size
               for k in range(FILES))
    orders = [("fixed", []), ("fixed, shuffle buffer", ["--shuffle-buffer", "2000"]),
              ("dynamic", ["--order", "dynamic"])]
    for i, (order, flags) in enumerate(orders):
        out = tmp_path / f"out-{i}"
        out.mkdir()
        before = datanode_bytes_read()
        p = subprocess.run(
            [hf_bin, "launch", "--workers", "2", "--input", minidfs.uri("/bytesread"), "--batch-size", "250",
             "--epochs", "1", *flags, "--", sys.executable, str(Path(__file__).parent / "launch_trainer.py")],
            env=dict(env, OUT=str(out)), capture_output=True, text=True, timeout=300,
        )
        assert p.returncode == 0, p.stderr[-3000:]
        job = datanode_bytes_read() - before
        print(f"launch, {order}: {job} B ({job / ref:.3f}x)")
        assert job <= 1.05 * ref + unit, f"{order}: the DataNodes sent {job} B, {job / ref:.3f}x the input"
