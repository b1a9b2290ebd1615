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

from hydrofeed._native import DataError, NoCudaDeviceError

#: field metadata of a ``gpu`` image column: its spec, output size ``HxW`` and filter
GPU_KEY = b"hydrofeed.image.gpu"
SIZE_KEY = b"hydrofeed.image.size"
FILTER_KEY = b"hydrofeed.image.filter"
#: the values of a row's plan, in order
PLAN = ("height", "width", "resized_height", "resized_width", "top", "left", "flip")


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
        from torch.utils.dlpack import from_dlpack

        plan = from_dlpack(plan).cpu().numpy()
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


def warm(device: Any = "cuda") -> None:
    """Imports the decoder and starts it on ``device`` (a first nvJPEG call takes seconds),
    so the first batch does not pay for it."""
    import torch
    from torchvision.io import encode_jpeg

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        data = encode_jpeg(torch.zeros((3, 16, 16), dtype=torch.uint8))
    _decode_jpegs([data], [0], torch.device(device), "a warm-up image")


def _decode_jpegs(encoded: list[Any], rows: list[int], device: Any, column: str) -> list[Any]:
    """Each tensor of ``encoded`` (row ``rows[i]`` of the batch) decoded to ``(3, h, w)`` uint8
    on ``device``: one batched call, and image by image when it fails, to name the row."""
    import torch
    from torchvision.io import ImageReadMode, decode_jpeg

    if torch.device(device).type == "cuda" and not torch.cuda.is_available():
        raise NoCudaDeviceError(f"no CUDA device: torch {torch.__version__} sees none, so "
                                f"nvJPEG cannot decode {column!r} on {device}")
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
    for i, e in zip(rows, encoded, strict=True):
        try:
            done.append(one(e))
        except RuntimeError as err:
            raise DataError(f"image column {column!r}, row {i} of the batch: the JPEG does not "
                            f"decode ({' '.join(str(err).split())[:300]})") from err
    return done


#: the fixed-point bits of the resize weights (Pillow's ``PRECISION_BITS`` for 8-bit images)
_BITS = 22
#: each filter's support, in source pixels at scale 1 (Pillow's)
_SUPPORT = {"nearest": 0.0, "bilinear": 1.0, "bicubic": 2.0, "lanczos": 3.0}


def _kernel(filt: str, x: Any) -> Any:
    """Pillow's filter ``filt`` at ``x`` (a tensor)."""
    import torch

    ax = x.abs()
    if filt == "bilinear":
        return (1 - ax).clamp_min(0)
    if filt == "bicubic":
        a = -0.5
        near = ((a + 2) * ax - (a + 3)) * ax * ax + 1
        far = (((ax - 5) * ax + 8) * ax - 4) * a
        return torch.where(ax < 1, near, torch.where(ax < 2, far, torch.zeros_like(ax)))
    return torch.where((x >= -3) & (x < 3), torch.sinc(x) * torch.sinc(x / 3),
                       torch.zeros_like(x))


def _weights(filt: str, size_in: Any, size_out: Any, start: Any, flip: Any, n_out: int,
             n_in: int, origin: Any) -> Any:
    """``(N, n_out, n_in)`` float64: output pixel ``j`` of each image along one axis (the
    resized image's pixel ``start + j``, counted from the end where ``flip``) as weights of
    the input's pixels, computed as Pillow's resample computes them (the filter's support
    widened by the downscale, the window clipped to the image, the weights normalized, then
    integers of ``1 << _BITS``); input pixel ``k`` is the image's ``origin + k`` (the window
    :func:`_windows` cut). Arguments are ``(N,)`` float64 tensors."""
    import torch

    j = torch.arange(n_out, dtype=torch.float64, device=size_in.device)
    dst = start[:, None] + torch.where(flip[:, None] > 0, n_out - 1 - j, j)
    scale = (size_in / size_out)[:, None]
    k = torch.arange(n_in, dtype=torch.float64, device=size_in.device)[None, None, :]
    k = k + origin[:, None, None]
    if filt == "nearest":
        src = torch.minimum(((dst + 0.5) * scale).floor(), size_in[:, None] - 1)
        return (k == src[..., None]).to(torch.float64) * (1 << _BITS)
    fs = scale.clamp(min=1.0)
    support = _SUPPORT[filt] * fs
    center = (dst + 0.5) * scale
    lo = (center - support + 0.5).floor().clamp(min=0)[..., None]
    hi = torch.minimum((center + support + 0.5).floor(), size_in[:, None])[..., None]
    w = _kernel(filt, (k - center[..., None] + 0.5) * (1.0 / fs[..., None]))
    w = torch.where((k >= lo) & (k < hi), w, torch.zeros_like(w))
    total = w.sum(-1, keepdim=True)
    w = w / torch.where(total != 0, total, torch.ones_like(total))
    # Pillow's fixed point: each weight an integer of 1 << _BITS, rounded half away from 0.
    q = w * (1 << _BITS)
    return torch.where(q >= 0, (q + 0.5).floor(), (q - 0.5).ceil())


def _windows(filt: str, size_in: np.ndarray, size_out: np.ndarray, start: np.ndarray,
             n_out: int) -> tuple[np.ndarray, np.ndarray]:
    """Per image, the input pixels ``[lo, hi)`` along one axis that the outputs ``start ..
    start + n_out`` of the resize draw on (the filter's widened support, a pixel more each
    side): only those are padded into the batch and multiplied."""
    scale = size_in / size_out
    support = _SUPPORT[filt] * np.maximum(scale, 1.0)
    first = (start + 0.5) * scale
    last = (start + n_out - 0.5) * scale
    lo = np.maximum(np.floor(first - support + 0.5) - 1, 0)
    hi = np.minimum(np.floor(last + support + 0.5) + 2, size_in)
    return lo.astype(np.int64), hi.astype(np.int64)


#: the most bytes of padded images one batched product takes (the batch is cut to fit)
_CHUNK_BYTES = 256 << 20


def _resample(imgs: list[Any], plan: np.ndarray, oh: int, ow: int, filt: str) -> Any:
    """The decoded ``(3, h, w)`` images resized, cropped and flipped by their plans (``(n, 7)``
    on the host) into ``(n, oh, ow, 3)`` uint8 on their device, the whole batch at once: each
    image's window (:func:`_windows`) padded into one tensor, then a horizontal and a vertical
    pass, each one batched matrix product with the weights of :func:`_weights` (the crop and
    the flip are rows of those weights), rounded to 8 bits after each pass as Pillow does."""
    import torch

    dev = imgs[0].device
    p = plan.astype(np.float64)
    x0, x1 = _windows(filt, p[:, 1], p[:, 3], p[:, 5], ow)
    y0, y1 = _windows(filt, p[:, 0], p[:, 2], p[:, 4], oh)
    hmax, wmax = int((y1 - y0).max()), int((x1 - x0).max())
    step = max(1, _CHUNK_BYTES // (3 * hmax * wmax * 8))
    out = []
    for c in range(0, len(imgs), step):
        sl = slice(c, c + step)
        # Integer pixels times integer weights, summed in float64: every partial sum is an
        # integer under 2**53, so exact in any order; an image's pixels do not depend on the
        # batch around it (its padding, the products' blocking), and round as Pillow's fixed
        # point rounds.
        x = torch.zeros((len(imgs[sl]), 3, hmax, wmax), dtype=torch.float64, device=dev)
        for i, img in enumerate(imgs[sl]):
            a, b, l, r = int(y0[c + i]), int(y1[c + i]), int(x0[c + i]), int(x1[c + i])
            x[i, :, :b - a, :r - l] = img[:, a:b, l:r]
        q = torch.from_numpy(p[sl]).to(dev)
        wx = _weights(filt, q[:, 1], q[:, 3], q[:, 5], q[:, 6], ow, wmax,
                      torch.from_numpy(x0[sl].astype(np.float64)).to(dev))
        wy = _weights(filt, q[:, 0], q[:, 2], q[:, 4], torch.zeros_like(q[:, 6]), oh, hmax,
                      torch.from_numpy(y0[sl].astype(np.float64)).to(dev))
        half, one = float(1 << (_BITS - 1)), float(1 << _BITS)
        t = torch.matmul(x, wx.transpose(1, 2)[:, None]).add_(half).div_(one)
        t = t.floor_().clamp_(0, 255)
        o = torch.matmul(wy[:, None], t).add_(half).div_(one).floor_().clamp_(0, 255)
        out.append(o.to(torch.uint8).permute(0, 2, 3, 1))
    return torch.cat(out).contiguous()


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
    import pyarrow as pa
    import torch

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
        rows = [i for i, e in enumerate(encoded) if e is not None]
        imgs = _decode_jpegs([encoded[i] for i in rows], rows, dev, name) if rows else []
        for i, img in zip(rows, imgs, strict=True):
            if tuple(img.shape[1:]) != tuple(plan[i, :2]):
                raise DataError(f"image column {name!r}, row {i} of the batch: decoded "
                                f"{img.shape[1]}x{img.shape[2]}, its header says "
                                f"{plan[i, 0]}x{plan[i, 1]}")
        if len(rows) == n and n:
            out[name] = _resample(imgs, plan, oh, ow, filt)
            continue
        pixels = torch.zeros((n, oh, ow, 3), dtype=torch.uint8, device=dev)
        if rows:
            pixels[torch.tensor(rows, device=dev)] = _resample(imgs, plan[rows], oh, ow, filt)
        out[name] = pixels
    return out
