"""`hydrofeed.spark.node.sweep_stale`: what a node killed without cleaning up left behind is
removed, however long the sweep itself takes."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from hydrofeed.spark import node


def test_a_run_directory_of_many_dead_sockets_is_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The sweep's own unlinks move the directory's mtime past the sweep's start: the age check
    # must use the mtime from before them (with 300 sockets the sweep takes several clock ticks).
    root = tmp_path / "root"
    root.mkdir(mode=0o700)
    monkeypatch.setenv(node.RUN_ROOT_ENV, str(root))
    d = root / "deadbeef-g0"
    d.mkdir(mode=0o700)
    for i in range(300):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(str(d / f"rank{i}.sock"))
        s.close()  # nobody listens: a stale socket
    (d / "rank0.spec").write_text("{}")
    removed = node.sweep_stale(min_age_s=0)
    assert not d.exists(), sorted(os.listdir(d))[:5]
    assert removed == 300 + 1 + 1


def test_a_live_socket_keeps_its_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    root.mkdir(mode=0o700)
    monkeypatch.setenv(node.RUN_ROOT_ENV, str(root))
    d = root / "cafe-g1"
    d.mkdir(mode=0o700)
    live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    live.bind(str(d / "rank0.sock"))
    live.listen(1)
    try:
        node.sweep_stale(min_age_s=0)
        assert (d / "rank0.sock").exists()
    finally:
        live.close()
