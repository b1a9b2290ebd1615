"""Fixtures: the hydrofeed binary, generated datasets, a `hydrofeed serve` process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def hf_bin() -> str:
    """The binary the package itself runs: ``HYDROFEED_BIN``, else the environment's, else the
    checkout's build (``hydrofeed._proc.hydrofeed_bin``)."""
    from hydrofeed._proc import hydrofeed_bin

    try:
        return hydrofeed_bin()
    except FileNotFoundError as e:
        pytest.fail(str(e))


@pytest.fixture(scope="session")
def adapter_mnist(tmp_path_factory: pytest.TempPathFactory, hf_bin: str) -> Path:
    """`ADAPTER_ROWS` MNIST-shaped TFRecord rows: about 5x a 4 MiB ring (the torch and JAX
    adapter tests)."""
    from helpers import ADAPTER_ROWS, gen_tfrecord_mnist

    return gen_tfrecord_mnist(hf_bin, tmp_path_factory.mktemp("adapter_mnist"), ADAPTER_ROWS)


@pytest.fixture(scope="session")
def adapter_want(adapter_mnist: Path) -> dict[str, Any]:
    """`adapter_mnist` as TensorFlow reads it (the reference)."""
    from helpers import tf_read_mnist

    return tf_read_mnist(adapter_mnist)


@pytest.fixture(scope="session")
def mnist_dir(tmp_path_factory: pytest.TempPathFactory, hf_bin: str) -> Path:
    """2500 MNIST-shaped rows in 3 TFRecord files, written by `hydrofeed gen`."""
    out = tmp_path_factory.mktemp("mnist")
    subprocess.run(
        [hf_bin, "gen", "--format", "tfrecord", "--rows", "2500", "--files", "3", "--out", str(out)],
        check=True,
        capture_output=True,
    )
    return out


class Server:
    """A `hydrofeed serve` process; killed at teardown whatever happened."""

    def __init__(self, hf_bin: str, sock: Path, args: list[str]) -> None:
        self.sock = sock
        self.proc = subprocess.Popen(
            [hf_bin, "serve", "--socket", str(sock), "--accept-timeout", "60", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )

    def wait(self, timeout: float = 30) -> tuple[int, str]:
        _, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, err

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.kill()
        self.proc.communicate(timeout=10)


@pytest.fixture
def serve(hf_bin: str, tmp_path: Path) -> Iterator[object]:
    servers: list[Server] = []

    def start(*args: str) -> Server:
        s = Server(hf_bin, tmp_path / f"feed{len(servers)}.sock", list(args))
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()


@pytest.fixture(scope="session")
def big_mnist(tmp_path_factory: pytest.TempPathFactory, hf_bin: str) -> Path:
    """MNIST-shaped TFRecords of BIG_ROWS rows: 31 MB of float32 images, about 8x a 4 MiB
    ring and 30x a 1 MiB one."""
    from helpers import BIG_ROWS, gen_tfrecord_mnist

    return gen_tfrecord_mnist(hf_bin, tmp_path_factory.mktemp("big"), BIG_ROWS)


@pytest.fixture(scope="session")
def big_want(big_mnist: Path) -> dict[str, Any]:
    """What tf.data reads from big_mnist."""
    from helpers import tf_read_mnist

    return tf_read_mnist(big_mnist)
