"""Saving a feed's state (``DataFeed.state()``) and a trainer's own checkpoint files atomically.

The same recipe as ``hydrofeed launch --state-out`` and ``hydrofeed coordinator --state-out``:
a temporary file in the same directory, fsynced, renamed over the target, then the directory
fsynced. A preemption's SIGKILL (YARN sends it 250 ms after SIGTERM) or a power cut leaves the
old file whole or the new one whole, never half of one.
"""

from __future__ import annotations

import json
import os
from typing import Any


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Replaces ``path`` by ``data`` atomically (see the module)."""
    path = os.fspath(path)
    d = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(d, f".{os.path.basename(path)}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_state(state: Any, path: str | os.PathLike[str]) -> None:
    """Writes ``state`` (``feed.state()``, or any JSON-serialisable checkpoint record) to
    ``path`` as JSON, atomically: what ``hydrofeed launch --resume path`` reads.

    In a SIGTERM handler's checkpoint (preemption)::

        hydrofeed.save_state(feed.state(), "ckpt/feed_state.json")
    """
    write_atomic(path, json.dumps(state).encode())
