"""Batches staged into GPU memory, and the node's GPUs.

``DataFeed.batches(device="cuda:0")`` yields :class:`DeviceBatch` es: each dense column is a
:class:`CudaTensor` in GPU memory, a DLPack producer (``torch.from_dlpack``,
``jax.dlpack.from_dlpack``, ``tf.experimental.dlpack.from_dlpack(t.__dlpack__())``) and a
``__cuda_array_interface__`` object (CuPy, Numba), taken without a copy. Ragged columns are
:class:`CudaRagged` (``values``, ``row_splits``); strings stay ``pyarrow`` arrays on the host.

How a batch gets there: the trainer registers the ring mapping with the CUDA driver once
(``cuMemHostRegister``), so each column is copied by DMA straight out of the ring slot on a
stream of the feed's own (a pinned bounce buffer where the driver refuses the registration).
The copy of batch k+1 runs while the GPU computes on batch k; the ring slot is released when
the copy completes, not when the trainer drops the tensors. A consumer's stream waits for the
copy (the DLPack stream protocol), the host does not. A batch's device buffer goes back to the
feed's pool when the last tensor made from it is dropped; the next copy into it waits for the
work queued on that tensor's stream until then (as ``torch.Tensor.record_stream``: work queued on
other streams must be ordered by the user).

The CUDA driver and NVML are loaded at run time: without them every entry point raises
:class:`hydrofeed.NoCudaDeviceError` ("no CUDA device: ...") and the CPU path is unchanged.
"""

from __future__ import annotations

from typing import Any

from hydrofeed._native import (
    CudaRagged,
    CudaTensor,
    DeviceBatch,
    DeviceFeed,
    NoCudaDeviceError,
    cuda_available,
    gpu_utilization,
    gpus,
    h2d_bandwidth,
)

__all__ = [
    "CudaRagged",
    "CudaTensor",
    "DeviceBatch",
    "DeviceFeed",
    "NoCudaDeviceError",
    "available",
    "cuda_ordinal",
    "gpu_utilization",
    "gpus",
    "h2d_bandwidth",
]


def available() -> tuple[bool, str | None]:
    """``(True, None)`` when a CUDA device can be opened here, else ``(False, reason)``."""
    ok, why = cuda_available()
    return bool(ok), why


def cuda_ordinal(device: Any) -> int:
    """The CUDA ordinal (under ``CUDA_VISIBLE_DEVICES``) that ``device`` names: ``"cuda"``,
    ``"cuda:N"``, ``N``, a ``torch.device`` or a JAX GPU device. ``ValueError`` for anything
    else (``"cpu"`` included: the CPU path is ``batches()`` without ``device``)."""
    if isinstance(device, bool):
        raise ValueError(f"device={device!r}: expected 'cuda', 'cuda:N' or an ordinal")
    if isinstance(device, int):
        if device < 0:
            raise ValueError(f"device={device}: a CUDA ordinal is >= 0")
        return device
    if isinstance(device, str):
        kind, _, idx = device.partition(":")
        if kind == "cuda" and (idx == "" or idx.isdigit()):
            return int(idx or 0)
        raise ValueError(
            f"device={device!r}: expected 'cuda' or 'cuda:N' (without device= batches stay in "
            "host memory)"
        )
    dev_type = getattr(device, "type", None)  # torch.device
    if dev_type == "cuda":
        return int(device.index or 0)
    platform = getattr(device, "platform", None)  # jax.Device
    if platform in ("gpu", "cuda"):
        return int(device.local_hardware_id)
    raise ValueError(f"device={device!r}: not a CUDA device")
