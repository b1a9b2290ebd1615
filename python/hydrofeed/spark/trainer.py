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
from typing import Any

from hydrofeed.spark.node import ERROR_PREFIX  # noqa: F401  (re-exported)


def _needs_cloudpickle_only(blob: bytes) -> bool:
    """Whether the only pyspark names the pickle refers to are ``pyspark.cloudpickle*`` (a
    reference to the ``pyspark`` module itself, e.g. a ``map_fun`` using ``pyspark.X``, must get
    the real package, never the bare stand-in)."""
    import pickletools

    try:
        for _, arg, _ in pickletools.genops(blob):
            if isinstance(arg, str) and arg.startswith("pyspark") and not arg.startswith("pyspark.cloudpickle"):
                return False
    except Exception:  # noqa: BLE001 - not a pickle we can walk: let pickle.loads say why
        return False
    return True


def load_pickled(blob: bytes) -> Any:
    """Unpickles the driver's cloudpickled ``map_fun``/``tf_args`` without importing pyspark.

    cloudpickle's output is a plain pickle (``cloudpickle.loads`` *is* ``pickle.loads``), but a
    function pickled by value (a ``map_fun`` of the driver's ``__main__``: most TFoS scripts)
    refers to ``pyspark.cloudpickle.cloudpickle``, and importing that runs ``pyspark/__init__``
    (py4j, SparkContext, ...: 0.1 s idle, 0.3-0.5 s measured here while the first partitions
    already wait in the hub and the feeding tasks want the same 2 cores). cloudpickle itself
    needs only the standard library: it is loaded under a bare ``pyspark`` package object that
    is removed again right after, so a later ``import pyspark`` gets the real package (which
    reuses the loaded ``pyspark.cloudpickle``). Anything else of pyspark that the pickle needs
    makes this fall back to the ordinary import."""
    import importlib.util
    import pickle
    import types

    if "pyspark" in sys.modules or b"pyspark" not in blob or not _needs_cloudpickle_only(blob):
        return pickle.loads(blob)
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return pickle.loads(blob)  # raises the ModuleNotFoundError a by-value map_fun gets
    before = set(sys.modules)
    bare = types.ModuleType("pyspark")
    bare.__path__ = list(spec.submodule_search_locations)
    bare.__spec__ = spec
    sys.modules["pyspark"] = bare
    try:
        return pickle.loads(blob)
    except Exception:  # noqa: BLE001 - the pickle needs more of pyspark: import it for real
        for name in set(sys.modules) - before:
            if name == "pyspark" or name.startswith("pyspark."):
                del sys.modules[name]
        sys.modules.pop("pyspark", None)
        return pickle.loads(blob)
    finally:
        if sys.modules.get("pyspark") is bare:
            del sys.modules["pyspark"]


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
        from hydrofeed.spark.hub import Hub

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
    fn = load_pickled(spec["fn"])
    args = load_pickled(spec["tf_args"])
    if isinstance(args, list):
        sys.argv = args
    try:
        fn(args, ctx)
        if ctx._feed is not None:
            ctx._feed.finish_files()
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
