"""The Spark side's ``hydrofeed`` child processes and the private files they are given.

File mode's coordinator (driver, :class:`hydrofeed.spark.files.Coordinator`) and feeders
(supervisor, :class:`hydrofeed.spark.files.Feeder`) are started with :func:`spawn`: the job
token in the environment, killed with their parent. :func:`pump` reads a child's output to its
end (theirs, and the trainer's in :mod:`hydrofeed.spark.supervisor`). What a child must read
from a file (HDFS tokens, a schema, the job's CA) is written 0600 by :func:`write_private`.
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import threading
from typing import Callable


def spawn(args: list[str], token: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Starts a ``hydrofeed`` child with the job token in its environment (never in argv or a
    file), its output piped (stderr into stdout), killed when its parent dies."""
    return subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=dict(os.environ, HYDROFEED_TOKEN=token, **(env or {})),
        preexec_fn=die_with_parent,
    )


def die_with_parent() -> None:
    """``preexec_fn``: SIGKILL the child when its parent dies (``kill -9`` included)."""
    import ctypes

    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except OSError:  # pragma: no cover - not glibc/musl
        pass


def pump(proc: subprocess.Popen[bytes], tail: collections.deque[str], emit: Callable[[str], None],
         pending: bytes = b"") -> threading.Thread:
    """Starts a thread that reads a child's output to its end: every line goes to ``emit`` and
    the last ones stay in ``tail``. ``pending``: output already read from the pipe and not yet
    handed out (its lines come first; its unfinished last line is completed by the pipe)."""

    def out(raw: bytes) -> None:
        line = raw.decode(errors="replace").rstrip("\n")
        tail.append(line)
        emit(line)

    def run() -> None:
        assert proc.stdout is not None
        *whole, rest = pending.split(b"\n")
        for raw in whole:
            out(raw)
        for raw in proc.stdout:
            out(rest + raw)
            rest = b""
        if rest:
            out(rest)

    t = threading.Thread(target=run, name="hydrofeed-child-output", daemon=True)
    t.start()
    return t


def write_private(path: str, data: bytes) -> str:
    """Writes ``data`` to ``path``, created 0600; returns ``path``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


def write_tokens(directory: str, tokens: str) -> dict[str, str]:
    """Writes base64 ``tokens`` (:func:`hydrofeed.spark.files.hdfs_delegation_tokens`) to a 0600 file in ``directory``;
    returns the environment that makes a feeder use them."""
    import base64

    path = write_private(os.path.join(directory, "hdfs.tokens"), base64.b64decode(tokens))
    return {"HADOOP_TOKEN_FILE_LOCATION": path}


def write_schema(directory: str, text: str) -> str:
    """Writes a :func:`hydrofeed.spark.files.schema_text` into ``directory`` for ``--schema``; returns the path."""
    import base64

    return write_private(os.path.join(directory, "schema.arrows"), base64.b64decode(text))
