"""Batch lifetime: a trainer that keeps batches, adapters over epochs larger than the ring, a
fork() child, a second thread. Every test here feeds several times the ring's size."""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hydrofeed as hf
from helpers import BIG_ROWS, check_mnist_epoch, run_python

pytestmark = pytest.mark.timeout(180)

ROWS = BIG_ROWS


@pytest.fixture
def want(big_want: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return big_want


def check_epoch(batches: list[Any], want: dict[str, np.ndarray]) -> None:
    check_mnist_epoch(batches, want, ROWS)


def test_raise_on_ring_pressure(serve: Any, big_mnist: Path) -> None:
    s = serve("--input", str(big_mnist), "--ring-mb", "1")
    feed = hf.DataFeed(str(s.sock), batch_size=100, timeout=60, on_ring_pressure="raise")
    kept = []
    t0 = time.monotonic()
    with pytest.raises(hf.RingExhaustedError, match="holds .* batches"):
        for b in feed.batches():
            kept.append(b)
            t0 = time.monotonic()
    # Far below the 60 s timeout: the trainer is told at once, not after a silent hang.
    assert time.monotonic() - t0 < 10
    assert len(kept) < ROWS // 100


def test_keeping_every_tenth_batch_copies_only_those(serve: Any, big_mnist: Path, want: Any) -> None:
    s = serve("--input", str(big_mnist), "--ring-mb", "4")
    feed = hf.DataFeed(str(s.sock), batch_size=100, timeout=60)
    kept, seen = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hf.RingPressureWarning)
        for i, b in enumerate(feed.batches()):
            seen.append({"id": b["id"].copy(), "image": b["image"].copy()})
            if i % 10 == 0:
                kept.append(b)
    check_epoch(seen, want)
    m = feed.metrics()
    kept_bytes = sum(b.nbytes for b in kept)
    # Only batches still held were copied, never the ones the loop let go.
    # (plus the one batch the loop variable holds at each copy)
    assert m["copied_batches"] <= len(kept) + m["pressure_copies"], m
    assert m["copied_bytes"] <= (kept_bytes + 4096 * len(kept)) * (1 + m["pressure_copies"] / len(kept)), (m, kept_bytes)
    for b in kept:
        i = int(b["id"][0])
        np.testing.assert_array_equal(b["image"][0], want["image"][i])


def test_nothing_kept_means_no_copies(serve: Any, big_mnist: Path) -> None:
    s = serve("--input", str(big_mnist), "--ring-mb", "1", "--epochs", "2")
    feed = hf.DataFeed(str(s.sock), batch_size=100, timeout=60)
    rows = 0
    for b in feed.batches():
        rows += b.num_rows
    assert rows == 2 * ROWS
    m = feed.metrics()
    assert m["pressure_copies"] == 0 and m["copied_bytes"] == 0, m


def test_batch_copy_owns_its_memory(serve: Any, big_mnist: Path) -> None:
    s = serve("--input", str(big_mnist), "--ring-mb", "1")
    feed = hf.DataFeed(str(s.sock), batch_size=100, timeout=60)
    kept = []
    for b in feed.batches():
        c = b.copy()
        assert c["image"].ctypes.data != b["image"].ctypes.data
        np.testing.assert_array_equal(c["image"], b["image"])
        kept.append(c)
    assert sum(c.num_rows for c in kept) == ROWS
    assert feed.metrics()["pressure_copies"] == 0
    assert sorted(int(i) for c in kept for i in c["id"]) == list(range(ROWS))


def test_epoch_iterator_keeps_no_batch(serve: Any, big_mnist: Path, want: Any) -> None:
    s = serve("--input", str(big_mnist), "--ring-mb", "1", "--epochs", "2")
    feed = hf.DataFeed(str(s.sock), batch_size=100, timeout=30)
    from hydrofeed._epochs import EpochIterator

    it = EpochIterator(feed)
    for _ in range(2):
        seen = [{"id": b["id"].copy(), "image": b["image"].copy()} for b in it.epoch()]
        check_epoch(seen, want)
    assert feed.metrics()["pressure_copies"] == 0


CLOSE_WHILE_WAITING = r"""
import os, signal, threading, time
import hydrofeed as hf
feed = hf.DataFeed({sock!r}, batch_size=50, timeout=60)
os.kill(feed.feeder_pid, signal.SIGSTOP)  # the feeder freezes: the ring drains, next() blocks
try:
    while True:
        feed.next(timeout=0.5)
except hf.FeedTimeoutError:
    pass
out = []
def reader():
    try:
        out.append(feed.next(timeout=50))
    except Exception as e:
        out.append(e)
t = threading.Thread(target=reader); t.start()
time.sleep(0.5)
feed.close(); t.join(20)
os.kill(feed.feeder_pid, signal.SIGCONT)
assert not t.is_alive(), "next() did not return after close()"
print("ok", out)
"""


def test_close_from_another_thread_ends_a_blocked_next(serve: Any, big_mnist: Path) -> None:
    s = serve("--input", str(big_mnist))
    r = run_python(CLOSE_WHILE_WAITING.format(sock=str(s.sock)), timeout=60)
    assert r.returncode == 0 and "ok [None]" in r.stdout, (r.stdout, r.stderr[-3000:])
