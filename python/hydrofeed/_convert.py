"""The one conversion core of the adapters (``hydrofeed.torch``, ``hydrofeed.jax``,
``hydrofeed.tf``): which kind of column a batch holds, and what each adapter makes of each kind.

Kinds: a dense numpy array viewing the ring; :class:`hydrofeed.Ragged` (values + row_splits);
a GPU column (:class:`hydrofeed.gpu.CudaTensor`, :class:`hydrofeed.gpu.CudaRagged`) from
``batches(device=...)``; anything else (strings, binary: ``pyarrow`` arrays).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hydrofeed._native import CudaRagged, CudaTensor, Ragged


def column(
    col: Any,
    dense: Callable[[Any], Any],
    *,
    ragged: Callable[[Ragged], Any] | None = None,
    cuda: Callable[[CudaTensor], Any] | None = None,
    other: Callable[[Any], Any] | None = None,
) -> Any:
    """``col`` converted by the adapter's functions: ``dense`` for a numpy array; ``ragged``
    for a :class:`~hydrofeed.Ragged` (default: ``(dense(values), dense(row_splits))``); ``cuda``
    for a GPU tensor (a :class:`~hydrofeed.gpu.CudaRagged` becomes a ``(values, row_splits)``
    pair of them; without ``cuda``, ``TypeError``); ``other`` for the rest (default: unchanged)."""
    if isinstance(col, (CudaTensor, CudaRagged)):
        if cuda is None:
            raise TypeError(f"this adapter takes no GPU columns (got {type(col).__name__})")
        if isinstance(col, CudaRagged):
            return cuda(col.values), cuda(col.row_splits)
        return cuda(col)
    if isinstance(col, Ragged):
        return ragged(col) if ragged is not None else (dense(col.values), dense(col.row_splits))
    if isinstance(col, np.ndarray):
        return dense(col)
    return other(col) if other is not None else col
