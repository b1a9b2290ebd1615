"""TFoS ``TFCluster`` module: ``run``, ``InputMode``, ``TFCluster``."""

from __future__ import annotations

from typing import Any, Callable

from hydrofeed.spark import cluster as _cluster
from hydrofeed.exceptions import TrainerFailedError
from hydrofeed.spark.cluster import InputMode, TFCluster

__all__ = ["run", "InputMode", "TFCluster", "TrainerFailedError"]


def run(
    sc: Any,
    map_fun: Callable[..., Any],
    tf_args: Any,
    num_executors: int,
    num_ps: int,
    tensorboard: bool = False,
    input_mode: int = InputMode.TENSORFLOW,
    log_dir: str | None = None,
    driver_ps_nodes: bool = False,
    master_node: str | None = None,
    reservation_timeout: float = 600,
    queues: list[str] | None = None,
    eval_node: bool = False,
    release_port: bool = True,
    max_restarts: int = 0,
) -> TFCluster:
    """``tensorflowonspark.TFCluster.run`` with TFoS's defaults (see :func:`hydrofeed.spark.cluster.run`)."""
    return _cluster.run(
        sc,
        map_fun,
        tf_args,
        num_executors,
        num_ps,
        tensorboard,
        input_mode,
        log_dir,
        driver_ps_nodes,
        master_node,
        reservation_timeout,
        queues,
        eval_node,
        release_port,
        max_restarts,
    )
