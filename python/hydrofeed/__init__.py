"""hydrofeed: feed training data from HDFS or local disk into TensorFlow, PyTorch and JAX.

Most users want :class:`DataFeed` (in a trainer that a launcher or ``hydrofeed serve`` feeds)
or :func:`read` (an input's batches as ``pyarrow.RecordBatch`` in this process).

``hydrofeed.tf``, ``hydrofeed.torch`` and ``hydrofeed.jax`` are imported on first use, so neither
TensorFlow, torch nor JAX is needed to import ``hydrofeed``.

Every exception and warning class is defined in (or, for the ones the compiled module raises,
re-exported by) :mod:`hydrofeed.exceptions`, and exported here too.
"""

from __future__ import annotations

import collections.abc
import importlib
from typing import TYPE_CHECKING, Any

from hydrofeed._native import Batch, Ragged, __version__
from hydrofeed.exceptions import (
    ArgumentError,
    CoordinatorError,
    DataError,
    FeedFilesError,
    FeedTimeoutError,
    HydrofeedError,
    NoCudaDeviceError,
    PeerLostError,
    RingExhaustedError,
    RingPressureWarning,
    SchemaError,
    TrainerFailedError,
    TransportError,
)
from hydrofeed._state import save_state
from hydrofeed.feed import DataFeed
from hydrofeed.read import read

collections.abc.Mapping.register(Batch)

if TYPE_CHECKING:
    from hydrofeed import tf as tf
    from hydrofeed import jax as jax
    from hydrofeed import torch as torch

__all__ = [
    "ArgumentError",
    "Batch",
    "CoordinatorError",
    "DataError",
    "DataFeed",
    "FeedFilesError",
    "FeedTimeoutError",
    "HydrofeedError",
    "NoCudaDeviceError",
    "PeerLostError",
    "Ragged",
    "RingExhaustedError",
    "RingPressureWarning",
    "SchemaError",
    "TrainerFailedError",
    "TransportError",
    "__version__",
    "read",
    "save_state",
]


def __getattr__(name: str) -> Any:
    if name in ("tf", "torch", "jax", "gpu"):
        return importlib.import_module(f"hydrofeed.{name}")
    raise AttributeError(f"module 'hydrofeed' has no attribute {name!r}")
