"""Images decoded on the trainer's GPU: the columns of an image spec with ``gpu``.

With ``gpu`` in a column's spec (``image=resize:256,randcrop:224,flip,gpu``), the feeder does
not decode the column. It reads each JPEG's header, checks it (the pixel limit; CMYK, YCCK,
lossless, PNG and WebP refused by name, a row's error as any bad image is), plans the row (its
size, the resize, the crop's place and the flip, drawn from the seed, the epoch, the split and
the row as the feeder's own decode draws them) and sends the encoded bytes (the column, now
``binary``) with that plan (``<column>.plan``, ``int32`` ``(N, 7)``: height, width, resized
height, resized width, crop top, crop left, flip). :func:`decode` makes of them the
``(N, H, W, 3) uint8`` tensor the feeder would have sent:

- on a CUDA device, nvJPEG (``torchvision.io.decode_jpeg(..., device="cuda")``, one batched
  call a batch); on the CPU, libjpeg-turbo (torchvision's, the same call);
- then, per image on that device, the resize (``torch.nn.functional.interpolate`` with
  antialiasing, Pillow's ``bilinear`` and ``bicubic``; ``nearest-exact`` for ``nearest``), the
  crop and the flip.

``DataFeed.batches(device="cuda")`` calls it on each batch of a feed with such a column, so
the trainer sees the image column as a ``torch.uint8`` CUDA tensor ``(N, H, W, 3)``. On the
host (``DataFeed.batches()``, ``hydrofeed.read``) the bytes and the plan arrive as they are,
and ``decode(batch, schema, device)`` turns them into pixels.

Exactness: the crop's place and the flip are the feeder's own, so a run and its exact resume
get the same crops. The pixels are not the feeder decode's exactly: nvJPEG's IDCT and chroma
upsampling are not libjpeg-turbo's, and the resize is torch's, not ``fast_image_resize``'s; and
nvJPEG decodes at full scale (no DCT scaling). python/tests/test_images_gpu.py measures the
difference to the feeder's decode on the CPU (a level or two on most pixels); the GPU numbers
are in benches/README.md, "Images on a GPU". A body the header did not reveal as corrupt is
found by the decoder here: :class:`hydrofeed.DataError` naming the batch's row and the column
(``--skip-errors`` in the feeder covers what the header shows).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from hydrofeed._native import DataError

#: field metadata of a ``gpu`` image column: its spec, output size ``HxW`` and filter
GPU_KEY = b"hydrofeed.image.gpu"
SIZE_KEY = b"hydrofeed.image.size"
FILTER_KEY = b"hydrofeed.image.filter"
#: the values of a row's plan, in order
PLAN = ("height", "width", "resized_height", "resized_width", "top", "left", "flip")

_MODES = {"bilinear": "bilinear", "bicubic": "bicubic", "nearest": "nearest-exact"}


def plan_name(column: str) -> str:
    """The plan column beside a ``gpu`` image column."""
    return f"{column}.plan"


def columns(schema: Any) -> dict[str, tuple[int, int, str]]:
    """The ``gpu`` image columns of a ``pyarrow.Schema``: name -> (height, width, filter)."""
    out: dict[str, tuple[int, int, str]] = {}
    if schema is None:
        return out
    for f in schema:
        md = f.metadata or {}
        if GPU_KEY in md:
            h, w = (int(v) for v in md[SIZE_KEY].decode().split("x"))
            out[f.name] = (h, w, md.get(FILTER_KEY, b"bilinear").decode())
    return out


def _host_plan(plan: Any, n: int) -> np.ndarray:
    """A plan column (numpy, a CUDA tensor, ``pyarrow``) as an ``(n, 7)`` int32 host array."""
    import pyarrow as pa

    if isinstance(plan, pa.ChunkedArray):
        plan = plan.combine_chunks()
    if isinstance(plan, pa.Array):
        plan = plan.flatten().to_numpy(zero_copy_only=False)
    elif not isinstance(plan, np.ndarray):
        import torch

        plan = torch.from_dlpack(plan).cpu().numpy()
    return np.asarray(plan, dtype=np.int32).reshape(n, len(PLAN))


def _encoded(data: Any) -> list[Any]:
    """A binary column's rows as 1-D uint8 CPU tensors viewing its buffer (``None`` for nulls)."""
    import pyarrow as pa
    import torch

    if isinstance(data, pa.ChunkedArray):
        data = data.combine_chunks()
    large = pa.types.is_large_binary(data.type)
    _, offsets, values = data.buffers()
    off = np.frombuffer(offsets, dtype=np.int64 if large else np.int32)
    off = off[data.offset:data.offset + len(data) + 1]
    if values is None or values.size == 0:
        whole = torch.empty(0, dtype=torch.uint8)
    else:
        with warnings.catch_warnings():  # the ring is read-only; the decoder only reads
            warnings.simplefilter("ignore", UserWarning)
            whole = torch.from_numpy(np.frombuffer(values, dtype=np.uint8))
    valid = data.is_valid().to_numpy(zero_copy_only=False)
    return [whole[off[i]:off[i + 1]] if valid[i] else None for i in range(len(data))]


def _decode_jpegs(encoded: list[Any], device: Any, column: str) -> list[Any]:
    """Each tensor of ``encoded`` decoded to ``(3, h, w)`` uint8 on ``device``: one batched call,
    and image by image when it fails, to name the row."""
    from torchvision.io import ImageReadMode, decode_jpeg

    dev = str(device)

    def one(data: Any) -> Any:
        with warnings.catch_warnings():  # torchvision 0.29 names TorchCodec as its successor
            warnings.simplefilter("ignore", DeprecationWarning)
            return decode_jpeg(data, mode=ImageReadMode.RGB, device=dev)

    try:
        return list(one(encoded))
    except RuntimeError:
        pass
    done = []
    for i, e in enumerate(encoded):
        try:
            done.append(one(e))
        except RuntimeError as err:
            raise DataError(f"image column {column!r}, row {i} of the batch: the JPEG does not "
                            f"decode ({' '.join(str(err).split())[:300]})") from err
    return done


def decode(batch: Any, schema: Any = None, device: Any = "cuda") -> dict[str, Any]:
    """``batch`` with each ``gpu`` image column decoded on ``device`` (``"cuda"``,
    ``"cuda:N"``, a ``torch.device``, ``"cpu"``) into a ``torch.uint8`` tensor
    ``(N, H, W, 3)``, and its plan column dropped; the other columns as they are.

    ``batch``: a ``pyarrow.RecordBatch`` (its schema used), or a mapping of columns (a
    :class:`hydrofeed.Batch`, a :class:`hydrofeed.gpu.DeviceBatch`, a dict) with ``schema``
    the feed's (``DataFeed.schema``). Null rows are zeros. A row nvJPEG (or libjpeg-turbo)
    cannot decode, or whose decoded size is not the one its header declared, is a
    :class:`hydrofeed.DataError` naming the column and the row of the batch.
    """
    import torch
    import torch.nn.functional as F

    import pyarrow as pa

    if isinstance(batch, pa.RecordBatch):
        schema = batch.schema if schema is None else schema
        batch = {name: batch.column(i) for i, name in enumerate(batch.schema.names)}
    specs = columns(schema)
    if not specs:
        raise ValueError("the batch has no image column sent with gpu (image=...,gpu); "
                         "columns: " + ", ".join(batch.keys()))
    dev = torch.device(device)
    plans = {plan_name(c) for c in specs}
    out = {k: batch[k] for k in batch.keys() if k not in plans}
    for name, (oh, ow, filt) in specs.items():
        encoded = _encoded(batch[name])
        n = len(encoded)
        plan = _host_plan(batch[plan_name(name)], n)
        pixels = torch.zeros((n, oh, ow, 3), dtype=torch.uint8, device=dev)
        rows = [i for i, e in enumerate(encoded) if e is not None]
        imgs = _decode_jpegs([encoded[i] for i in rows], dev, name) if rows else []
        mode = _MODES[filt]
        for i, img in zip(rows, imgs, strict=True):
            h, w, rh, rw, top, left, flip = (int(v) for v in plan[i])
            if tuple(img.shape[1:]) != (h, w):
                raise DataError(f"image column {name!r}, row {i} of the batch: decoded "
                                f"{img.shape[1]}x{img.shape[2]}, its header says {h}x{w}")
            x = img.unsqueeze(0)
            if (rh, rw) != (h, w):
                aa = mode != "nearest-exact"
                x = F.interpolate(x.float(), size=(rh, rw), mode=mode, antialias=aa,
                                  **({"align_corners": False} if aa else {}))
                x = x.round_().clamp_(0, 255)
            x = x[0, :, top:top + oh, left:left + ow]
            if flip:
                x = x.flip(-1)
            pixels[i] = x.permute(1, 2, 0)
        out[name] = pixels
    return out
