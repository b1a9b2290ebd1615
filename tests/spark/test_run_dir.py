"""The per-host run root (sockets and node specs) is private: a directory planted beforehand at
its predictable name is refused, never used."""

from __future__ import annotations

import os
import stat

import pytest

from hydrofeed.spark import node


def test_run_root_is_created_0700_under_xdg_runtime_dir(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv(node.RUN_ROOT_ENV, raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    root = node.run_root()
    assert os.path.dirname(root) == str(tmp_path)
    assert stat.S_IMODE(os.lstat(root).st_mode) == 0o700
    os.rmdir(root)


def test_a_planted_run_root_is_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv(node.RUN_ROOT_ENV, raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    planted = os.path.join(str(tmp_path), f"hydrofeed-spark-{os.getuid()}")
    os.mkdir(planted)
    os.chmod(planted, 0o777)
    with pytest.raises(PermissionError, match="not a private directory"):
        node.run_dir("c1", 0)
    os.rmdir(planted)
    # A symlink to somewhere else is refused too.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    os.symlink(elsewhere, planted)
    with pytest.raises(PermissionError, match="not a private directory"):
        node.run_root()
