"""Trainer process: ``python -m hydrofeed.spark.trainer <spec>`` runs ``map_fun(args, ctx)``.

Started by the supervisor with ``TF_CONFIG`` and ``CUDA_VISIBLE_DEVICES`` already in its
environment. For feeding nodes (InputMode.SPARK) the transport hub listens before ``map_fun``
starts, so feeding tasks never race the user's imports.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import traceback

ERROR_PREFIX = "hydrofeed-error: "


def main(spec_path: str) -> int:
    import pickle

    with open(spec_path, "rb") as f:
        spec = pickle.load(f)  # plain values; pyspark is imported only after the hub listens
    cm, meta = spec["cluster_meta"], spec["meta"]
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    # SIGTERM from the supervisor (driver said stop, or the driver is gone): exit promptly.
    signal.signal(signal.SIGTERM, lambda *_: os._exit(143))

    hub = None
    if meta["sock"]:
        from hydrofeed.spark.transport import Hub

        hub = Hub(meta["sock"], meta["executor_id"])
        hub.start()

    tmp_sock: socket.socket | None = socket.socket(fileno=spec["port_fd"])
    if cm.get("release_port", True) and tmp_sock is not None:
        tmp_sock.close()
        tmp_sock = None

    from hydrofeed.spark.node import NodeContext

    ctx = NodeContext(
        meta["executor_id"],
        meta["job_name"],
        meta["task_index"],
        spec["cluster_spec"],
        cm["default_fs"],
        cm["working_dir"],
        hub=hub,
        tmp_socket=tmp_sock,
        num_gpus=len(meta["gpus"]),
    )
    # cloudpickle's output is a plain pickle (``cloudpickle.loads`` *is* ``pickle.loads``): a
    # map_fun defined in an importable module is pickled by reference and loads without pyspark
    # (whose import took 0.1-0.5 s here, while the first partitions were already waiting in the
    # hub); one defined in ``__main__`` or a closure imports ``pyspark.cloudpickle`` on demand.
    fn = pickle.loads(spec["fn"])
    args = pickle.loads(spec["tf_args"])
    if isinstance(args, list):
        sys.argv = args
    try:
        fn(args, ctx)
        if hub is not None:
            hub.drain_until_end_of_feed()
    except BaseException:
        sys.stderr.write(
            f"hydrofeed: map_fun failed on {meta['job_name']}:{meta['task_index']} (executor {meta['executor_id']}):\n"
        )
        traceback.print_exc()
        # One short line the driver can put first, however long the traceback's message is.
        exc = sys.exc_info()[1]
        summary = " ".join(f"{type(exc).__name__}: {exc}".split())[:400]
        sys.stderr.write(f"{ERROR_PREFIX}{summary}\n")
        sys.stderr.flush()
        return 1
    finally:
        if hub is not None:
            hub.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
