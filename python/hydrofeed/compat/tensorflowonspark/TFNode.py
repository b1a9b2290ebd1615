"""TFoS ``TFNode`` module: ``DataFeed``, ``hdfs_path``, ``release_port``, and TF1 helpers that
explain what to use instead."""

from __future__ import annotations

from typing import Any

from hydrofeed.spark.feed import SparkDataFeed
from hydrofeed.spark.node import hdfs_path

__all__ = ["DataFeed", "hdfs_path", "release_port", "start_cluster_server", "export_saved_model"]


def DataFeed(mgr: Any, train_mode: bool = True, qname_in: str = "input", qname_out: str = "output", input_mapping: dict[str, str] | None = None) -> SparkDataFeed:  # noqa: N802 - TFoS's name
    """TFoS ``TFNode.DataFeed(ctx.mgr, train_mode, qname_in, qname_out, input_mapping)``: in
    hydrofeed ``ctx.mgr`` is the node's feeding hub; the queue names are ignored (one feed)."""
    return SparkDataFeed(mgr, train_mode, input_mapping)


def release_port(ctx: Any) -> None:
    """Releases the port reserved for the node's TF server (``run(..., release_port=False)``)."""
    ctx.release_port()


def start_cluster_server(ctx: Any, num_gpus: int = 1, rdma: bool = False) -> Any:
    """TF1 only (``tf.train.Server``); raises with what to do in TF2."""
    return ctx.start_cluster_server(num_gpus, rdma)


def export_saved_model(sess: Any, export_dir: str, tag_set: Any, signatures: Any) -> None:
    """TF1 session export; raises with what to do in TF2."""
    raise NotImplementedError(
        "TFNode.export_saved_model(sess, ...) exports a TF1 session. In TF2 use "
        "compat.export_saved_model(model, export_dir, is_chief) or ctx.export_saved_model(model, export_dir)."
    )


def next_batch(mgr: Any, batch_size: int, qname: str = "input") -> Any:
    """*DEPRECATED* in TFoS too."""
    raise Exception("DEPRECATED: Use TFNode.DataFeed class instead")


def batch_results(mgr: Any, results: Any, qname: str = "output") -> Any:
    """*DEPRECATED* in TFoS too."""
    raise Exception("DEPRECATED: Use TFNode.DataFeed class instead")


def terminate(mgr: Any, qname: str = "input") -> Any:
    """*DEPRECATED* in TFoS too."""
    raise Exception("DEPRECATED: Use TFNode.DataFeed class instead")
