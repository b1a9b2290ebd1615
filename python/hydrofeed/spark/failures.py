"""How the driver tells of a failed node: which rank, job and host, how it ended (exit code,
signal, lost), the trainer's one-line error summary and its last output lines; and whether a
trainer failed only because its ring's feeder went away (file mode then blames the feeder).
"""

from __future__ import annotations

import signal

from hydrofeed.spark.control import NodeState
from hydrofeed.spark.node import ERROR_PREFIX


def error_summary(tail: list[str]) -> str | None:
    """The last one-line error summary (``ERROR_PREFIX`` lines) in an output tail."""
    found = [line[len(ERROR_PREFIX) :] for line in tail if line.startswith(ERROR_PREFIX)]
    return found[-1] if found else None


def describe(n: NodeState) -> str:
    """What ``TrainerFailedError`` says: the node, how it ended, its summary and output tail."""
    m = n.meta
    where = f"rank {n.rank} ({m.get('job_name')}:{m.get('task_index')} on {m.get('host')})"
    if n.lost:
        why = "was lost: its supervisor vanished without a report (executor killed?)"
    elif n.exit_code is not None and n.exit_code < 0:
        try:
            why = f"was killed by {signal.Signals(-n.exit_code).name}"
        except ValueError:
            why = f"was killed by signal {-n.exit_code}"
    else:
        why = f"failed with exit code {n.exit_code}"
    summary = error_summary(n.tail)
    if summary:
        why += f": {summary}"
    tail = "\n".join("    " + line for line in n.tail[-25:] if not line.startswith(ERROR_PREFIX))
    return f"hydrofeed: {where} {why}" + (f"; last output lines:\n{tail}" if tail else "")


def lost_its_feeder(node: NodeState) -> bool:
    """Whether a failed trainer failed because its ring's feeder went away."""
    if node.lost or (node.exit_code is not None and node.exit_code < 0):
        return False
    return any(e in line for line in node.tail[-10:] for e in ("PeerLostError", "DataError", "SchemaError"))
