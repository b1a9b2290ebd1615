"""The MiniDFS fixture itself: a real cluster starts, takes files and lists them back, and
nothing is left running once it stops."""

from __future__ import annotations

import os
import subprocess

import pytest

import minidfs as harness

pytestmark = [pytest.mark.hdfs, pytest.mark.timeout(1200)]


def test_cluster_is_up_and_configured(minidfs):
    assert minidfs.url == "hdfs://127.0.0.1:9000"
    props = minidfs.site()
    assert props["fs.defaultFS"] == minidfs.url
    assert props["dfs.blocksize"] == "1048576"
    assert minidfs.env()["HADOOP_CONF_DIR"] == str(minidfs.conf_dir)


def test_put_and_list(minidfs, tmp_path):
    data = os.urandom(2_500_000)  # three 1 MiB blocks
    uri = minidfs.put_bytes(data, "/smoke/a.bin", tmp_path)
    minidfs.put_bytes(b"hello", "/smoke/sub/b.txt", tmp_path)
    assert uri == "hdfs://127.0.0.1:9000/smoke/a.bin"
    assert minidfs.ls("/smoke") == [
        (len(data), False, "hdfs://127.0.0.1:9000/smoke/a.bin"),
        (0, True, "hdfs://127.0.0.1:9000/smoke/sub"),
    ]
    minidfs.chmod("600", "/smoke/sub/b.txt")
    with pytest.raises(RuntimeError, match="FileNotFoundException|does not exist"):
        minidfs.ls("/smoke/missing")


def test_webhdfs_answers(minidfs, tmp_path):
    # Block locations come from WebHDFS; check the NameNode's HTTP side works under this JVM.
    import json
    import urllib.request

    minidfs.put_bytes(b"x" * 1_500_000, "/smoke/web.bin", tmp_path)
    url = "http://127.0.0.1:9870/webhdfs/v1/smoke/web.bin?op=GETFILEBLOCKLOCATIONS&user.name=hf"
    with urllib.request.urlopen(url, timeout=30) as r:
        blocks = json.load(r)["BlockLocations"]["BlockLocation"]
    assert [(b["offset"], b["length"]) for b in blocks] == [(0, 1 << 20), (1 << 20, 1_500_000 - (1 << 20))]
    assert all(len(b["hosts"]) == 3 for b in blocks)


def test_cluster_holds_the_lock_in_its_own_process_group(minidfs):
    # Another cluster (pytest or cargo test) cannot start while this one runs: the lock is held.
    busy = subprocess.run(["flock", "-n", harness.LOCK, "true"], timeout=30)
    assert busy.returncode != 0
    # stop() may kill the group (flock + JVM) without touching this process.
    assert os.getpgid(minidfs.proc.pid) == minidfs.proc.pid != os.getpgid(0)
    assert minidfs.proc.poll() is None
