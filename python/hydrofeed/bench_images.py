"""``python -m hydrofeed.bench images [--json]``: JPEGs to 224x224x3 uint8 batches in a trainer.

One generated ImageNet-like dataset (``hydrofeed gen --images``: JPEGs of about 500x375, quality
90, some grayscale and progressive; 4 Parquet files, ``image`` binary + ``label`` int64), with a
TFRecord copy (the same rows, ImageNet's ``image/encoded`` + ``image/class/label``). Every side
applies the same augmentation, the ResNet training recipe's: the shorter side resized to 256
(bilinear), a random 224 x 224 crop, a random horizontal flip; and delivers ``(n, 224, 224, 3)``
uint8 batches of ``--batch-size`` images into the same loop (``_consume``), which touches every
byte (a checksum: the trainer's work stands in for a model step's read of its input).

Sides (whichever are installed):

- ``hydrofeed``: ``hydrofeed serve --images image=resize:256,randcrop:224,flip`` in another
  process (its decode pool, one thread per CPU, one image per task; libjpeg-turbo decoding at
  the smallest DCT scale covering 256) -> ring -> ``DataFeed.batches()`` (Parquet);
- ``tfdata``: ``tf.data.TFRecordDataset`` -> ``parse_single_example`` -> the crop window's part
  of the JPEG decoded alone (``tf.io.decode_and_crop_jpeg``, the window ``224/256`` of the
  shorter side placed at random) -> ``tf.image.resize`` to 224 -> ``random_flip_left_right``,
  ``num_parallel_calls=AUTOTUNE``, ``batch``, ``prefetch(AUTOTUNE)`` (TFRecord): TensorFlow's
  own fast path (decoding only the crop, resizing the crop only);
- ``torch``: ``torch.utils.data.DataLoader(num_workers=<cores>)`` over an ``IterableDataset``
  whose workers each read their share of the Parquet files (pyarrow) and decode with Pillow,
  ``draft()`` first (libjpeg-turbo's DCT scaling, Pillow's fast path), then ``resize``
  (bilinear), crop and ``transpose`` (flip); batches collated in the workers;
- ``dali``: NVIDIA DALI's CPU pipeline (``device_id=None``: no GPU): ``fn.readers.tfrecord``
  -> ``fn.decoders.image`` (cpu) -> ``fn.resize(resize_shorter=256)`` ->
  ``fn.crop_mirror_normalize`` (random position, random mirror, uint8 HWC),
  ``num_threads=<cores>`` (TFRecord).

Each side runs in a fresh Python process of its own per round (imports and one-time setup not
timed), its passes (one epoch each, every process it starts started and ended inside the pass)
repeated until they ran >= ``--min-secs`` together, the sides alternated over ``--repeat``
rounds; best pass and median reported. Per side:

- ``images_per_s``: images into the loop per second of wall time, on all cores;
- ``images_per_cpu_s``: images per CPU-second of every process of the side (the trainer's
  threads, ``serve``'s or the DataLoader workers' processes: ``getrusage`` of the process and
  of its children, which are reaped within the pass): per core;
- ``trainer_cpu_ms_per_image``: CPU of the trainer's own process per image (``tfdata`` and
  ``dali`` decode inside it, so all their CPU is the trainer's).

``ratios``: hydrofeed over each peer, per core (``per_core_vs_<peer>``) and on all cores
(``all_cores_vs_<peer>``); ``target``: whether hydrofeed is >= 1.5x the best peer per core.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import io
import json
import os
import random
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from hydrofeed._proc import ServeProcess, hydrofeed_bin

MIN_SECS = 2.0
SIZE = 224
RESIZE = 256
SPEC = f"resize:{RESIZE},randcrop:{SIZE},flip"
#: the per-core ratio over the best peer that the images issue sets
TARGET = 1.5

Batches = Callable[[], Iterator[Any]]

#: side -> (the module that says it is installed, what runs)
SIDES: dict[str, tuple[str, str]] = {
    "hydrofeed": ("hydrofeed", f"hydrofeed serve --images image={SPEC} (decode pool, one thread "
                  "per CPU) -> ring -> DataFeed.batches() (Parquet)"),
    "tfdata": ("tensorflow", "tf.data TFRecordDataset + parse_single_example + "
               "decode_and_crop_jpeg (crop window only) + resize + random_flip_left_right, "
               "AUTOTUNE, in the trainer (TFRecord)"),
    "torch": ("torch", "torch DataLoader(num_workers=cores) over Pillow: draft() + resize + "
              "crop + transpose, pyarrow reading each worker's files (Parquet)"),
    "dali": ("nvidia.dali", "DALI CPU pipeline (device_id=None): readers.tfrecord + "
             "decoders.image + resize + crop_mirror_normalize, num_threads=cores, in the "
             "trainer (TFRecord)"),
}
PEERS = [s for s in SIDES if s != "hydrofeed"]

#: ``--gpu``: the same images into ``(n, 224, 224, 3)`` uint8 CUDA tensors
GPU_SIDES: dict[str, tuple[str, str]] = {
    "hydrofeed_nvjpeg": ("torchvision", f"hydrofeed serve --images image={SPEC},gpu (the feeder "
                         "plans, the bytes cross the ring) -> DataFeed.batches(device='cuda'): "
                         "nvJPEG batched decode + torch resize/crop/flip on the GPU (Parquet)"),
    "hydrofeed_cpu": ("torch", f"hydrofeed serve --images image={SPEC} (the feeder's CPU decode)"
                      " -> DataFeed.batches(device='cuda'): pixels staged by DMA (Parquet)"),
    "nvjpeg": ("torchvision", "in the trainer: pyarrow batches -> torchvision.io.decode_jpeg("
               "device='cuda') batched (nvJPEG) -> resize 256 + random crop + flip on the GPU "
               "(Parquet)"),
    "dali_gpu": ("nvidia.dali", "DALI GPU pipeline: readers.tfrecord + decoders.image("
                 "device='mixed') (nvJPEG) + resize + crop_mirror_normalize (TFRecord)"),
}


def _cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _consume(batches: Batches) -> dict[str, float]:
    """One pass: every batch checked for its shape and touched (a checksum of every byte; on
    the GPU for a CUDA tensor, the device synchronized before the clock stops)."""
    c0, k0, t0 = _cpu_self(), _cpu_children(), time.perf_counter()
    n, checksum = 0, 0
    on_gpu: Any = None
    for b in batches():
        if not isinstance(b, np.ndarray) and getattr(b, "is_cuda", False):
            if b.dtype.itemsize != 1 or tuple(b.shape[1:]) != (SIZE, SIZE, 3):
                raise RuntimeError(f"a batch of {b.dtype} {tuple(b.shape)}")
            import torch

            s = b.reshape(-1).sum(dtype=torch.int64)
            on_gpu = s if on_gpu is None else on_gpu + s
            n += b.shape[0]
            continue
        a = np.ascontiguousarray(b)
        if a.dtype != np.uint8 or a.shape[1:] != (SIZE, SIZE, 3):
            raise RuntimeError(f"a batch of {a.dtype} {a.shape}, not (n, {SIZE}, {SIZE}, 3) uint8")
        checksum ^= int(a.reshape(-1).view(np.uint64).sum(dtype=np.uint64))
        n += a.shape[0]
    if on_gpu is not None:
        checksum ^= int(on_gpu.item())  # waits for the device
    dt = time.perf_counter() - t0
    own, children = _cpu_self() - c0, _cpu_children() - k0
    return {"images": n, "seconds": dt, "images_per_s": n / dt,
            "images_per_cpu_s": n / max(own + children, 1e-9),
            "trainer_cpu_ms_per_image": own / max(n, 1) * 1e3,
            "cpu_ms_per_image": (own + children) / max(n, 1) * 1e3}


def _parquet_files(work: Path) -> list[Path]:
    return sorted(p for p in (work / "parquet").iterdir() if p.suffix == ".parquet")


def _tfrecord_files(work: Path) -> list[Path]:
    return sorted(p for p in (work / "tfrecord").iterdir() if p.suffix == ".tfrecord")


def _hydrofeed(work: Path, batch_size: int) -> Batches:
    import hydrofeed as hf

    def run() -> Iterator[Any]:
        with ServeProcess(str(work / "parquet"), "--columns", "image,label",
                          "--images", f"image={SPEC}") as s:
            feed = hf.DataFeed(s.socket, batch_size=batch_size, connect_timeout=120)
            for b in feed.batches():
                yield b["image"]

    return run


def _tfdata(work: Path, batch_size: int) -> Batches:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    tf = importlib.import_module("tensorflow")
    files = [str(p) for p in _tfrecord_files(work)]
    spec = {"image/encoded": tf.io.FixedLenFeature([], tf.string),
            "image/class/label": tf.io.FixedLenFeature([], tf.int64)}

    def one(rec: Any) -> Any:
        ex = tf.io.parse_single_example(rec, spec)
        data = ex["image/encoded"]
        shape = tf.io.extract_jpeg_shape(data)
        h, w = shape[0], shape[1]
        # The 224 window of the image resized to 256 on its shorter side, in source pixels.
        side = tf.cast(tf.cast(tf.minimum(h, w), tf.float32) * (SIZE / RESIZE), tf.int32)
        top = tf.random.uniform([], 0, h - side + 1, dtype=tf.int32)
        left = tf.random.uniform([], 0, w - side + 1, dtype=tf.int32)
        img = tf.io.decode_and_crop_jpeg(data, tf.stack([top, left, side, side]), channels=3)
        img = tf.image.resize(img, [SIZE, SIZE])
        img = tf.image.random_flip_left_right(tf.cast(tf.round(img), tf.uint8))
        return img

    def run() -> Iterator[Any]:
        ds = (tf.data.TFRecordDataset(files)
              .map(one, num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)
              .batch(batch_size)
              .prefetch(tf.data.AUTOTUNE))
        for b in ds:
            yield b.numpy()

    return run


class _PillowImages:
    """Iterable over the Parquet files' images as ``(224, 224, 3)`` uint8 arrays, each DataLoader
    worker reading every ``num_workers``-th file."""

    def __init__(self, files: list[Path]) -> None:
        self.files = files

    def __iter__(self) -> Iterator[Any]:
        import pyarrow.parquet as pq
        import torch.utils.data
        from PIL import Image

        info = torch.utils.data.get_worker_info()
        wid, nw = (info.id, info.num_workers) if info is not None else (0, 1)
        rng = random.Random(wid)
        for f in self.files[wid::nw]:
            for rb in pq.ParquetFile(f).iter_batches(batch_size=64, columns=["image"]):
                for data in rb.column(0).to_pylist():
                    src = Image.open(io.BytesIO(data))
                    w, h = src.size
                    s = min(w, h)
                    src.draft("RGB", (w * RESIZE // s, h * RESIZE // s))
                    im = src.convert("RGB")
                    w, h = im.size
                    s = min(w, h)
                    size = ((RESIZE, (h * RESIZE + s // 2) // s) if w <= h
                            else ((w * RESIZE + s // 2) // s, RESIZE))
                    im = im.resize(size, Image.Resampling.BILINEAR)
                    left = rng.randint(0, size[0] - SIZE)
                    top = rng.randint(0, size[1] - SIZE)
                    im = im.crop((left, top, left + SIZE, top + SIZE))
                    if rng.random() < 0.5:
                        im = im.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
                    yield np.asarray(im)


def _torch(work: Path, batch_size: int) -> Batches:
    import torch.utils.data

    ds_cls = type("PillowImages", (_PillowImages, torch.utils.data.IterableDataset), {})
    ds = ds_cls(_parquet_files(work))
    workers = os.cpu_count() or 1

    def run() -> Iterator[Any]:
        dl = torch.utils.data.DataLoader(ds, batch_size=batch_size, num_workers=workers)
        for b in dl:
            yield b.numpy()

    return run


def _tfrecord_index(path: Path, out: Path) -> None:
    """DALI's index of a TFRecord file: ``offset size`` of each record, one a line."""
    lines, off = [], 0
    with open(path, "rb") as f:
        while head := f.read(12):
            (n,) = struct.unpack("<Q", head[:8])
            f.seek(n + 4, os.SEEK_CUR)
            lines.append(f"{off} {n + 16}\n")
            off += n + 16
    out.write_text("".join(lines))


def _dali(work: Path, batch_size: int, gpu: bool = False) -> Batches:
    dali = importlib.import_module("nvidia.dali")
    fn = importlib.import_module("nvidia.dali.fn")
    types = importlib.import_module("nvidia.dali.types")
    tfrec = importlib.import_module("nvidia.dali.tfrecord")
    files = _tfrecord_files(work)
    index = []
    for f in files:
        idx = f.with_suffix(".idx")
        _tfrecord_index(f, idx)
        index.append(str(idx))
    workers = os.cpu_count() or 1

    def pipe() -> Any:
        rec = fn.readers.tfrecord(
            path=[str(f) for f in files], index_path=index, name="reader",
            features={"image/encoded": tfrec.FixedLenFeature((), tfrec.string, ""),
                      "image/class/label": tfrec.FixedLenFeature([1], tfrec.int64, -1)})
        img = fn.decoders.image(rec["image/encoded"], device="mixed" if gpu else "cpu",
                                output_type=types.RGB)
        img = fn.resize(img, resize_shorter=RESIZE)
        return fn.crop_mirror_normalize(
            img, crop=(SIZE, SIZE), crop_pos_x=fn.random.uniform(range=(0.0, 1.0)),
            crop_pos_y=fn.random.uniform(range=(0.0, 1.0)), mirror=fn.random.coin_flip(),
            dtype=types.UINT8, output_layout="HWC")

    p = dali.pipeline_def(batch_size=batch_size, num_threads=workers,
                          device_id=0 if gpu else None)(pipe)()
    p.build()
    total = p.epoch_size("reader")

    def run() -> Iterator[Any]:
        n = 0
        while n < total:
            (out,) = p.run()
            if gpu:
                import torch

                arr = torch.stack([torch.from_dlpack(t) for t in out])  # type: ignore[attr-defined]
            else:
                arr = out.as_array()
            take = min(len(arr), total - n)
            n += take
            yield arr[:take]
        # The reader goes on into the next epoch (the batch that crossed it was cut above).

    return run


def _hydrofeed_cuda(spec: str) -> Callable[[Path, int], Batches]:
    def setup(work: Path, batch_size: int) -> Batches:
        import torch
        from torch.utils.dlpack import from_dlpack

        import hydrofeed as hf
        from hydrofeed import images

        if spec.endswith(",gpu"):
            images.warm("cuda")  # imports and the decoder's start, as the peers' setup has

        def run() -> Iterator[Any]:
            with ServeProcess(str(work / "parquet"), "--columns", "image,label",
                              "--images", f"image={spec}") as s:
                feed = hf.DataFeed(s.socket, batch_size=batch_size, connect_timeout=120)
                for b in feed.batches(device="cuda"):
                    col = b["image"]
                    t = col if isinstance(col, torch.Tensor) else from_dlpack(col)
                    yield t.reshape(t.shape[0], SIZE, SIZE, 3)

        return run

    return setup


def _nvjpeg(work: Path, batch_size: int) -> Batches:
    """torchvision's nvJPEG in the trainer, as a user writes it without a feeder."""
    import pyarrow.parquet as pq
    import torch
    import torch.nn.functional as F
    from torchvision.io import ImageReadMode, decode_jpeg

    files = _parquet_files(work)
    gen = torch.Generator().manual_seed(0)
    from hydrofeed import images

    images.warm("cuda")

    def run() -> Iterator[Any]:
        for f in files:
            for rb in pq.ParquetFile(f).iter_batches(batch_size=batch_size, columns=["image"]):
                data = [torch.frombuffer(bytearray(v), dtype=torch.uint8)
                        for v in rb.column(0).to_pylist()]
                out = torch.empty((len(data), SIZE, SIZE, 3), dtype=torch.uint8, device="cuda")
                imgs = decode_jpeg(data, mode=ImageReadMode.RGB, device="cuda")
                for i, img in enumerate(imgs):
                    h, w = img.shape[1:]
                    s = min(h, w)
                    size = (RESIZE, (w * RESIZE + s // 2) // s) if h <= w else \
                        ((h * RESIZE + s // 2) // s, RESIZE)
                    x = F.interpolate(img[None].float(), size=size, mode="bilinear",
                                      antialias=True, align_corners=False)
                    top = int(torch.randint(0, size[0] - SIZE + 1, (1,), generator=gen))
                    left = int(torch.randint(0, size[1] - SIZE + 1, (1,), generator=gen))
                    x = x[0, :, top:top + SIZE, left:left + SIZE]
                    if torch.rand(1, generator=gen).item() < 0.5:
                        x = x.flip(-1)
                    out[i] = x.round_().clamp_(0, 255).permute(1, 2, 0)
                yield out

    return run


def _dali_gpu(work: Path, batch_size: int) -> Batches:
    return _dali(work, batch_size, gpu=True)


def _setup(side: str, work: Path, batch_size: int) -> Batches:
    """Imports and setup (not timed); returns what the clock runs."""
    return {"hydrofeed": _hydrofeed, "tfdata": _tfdata, "torch": _torch,
            "dali": _dali, "hydrofeed_nvjpeg": _hydrofeed_cuda(f"{SPEC},gpu"),
            "hydrofeed_cpu": _hydrofeed_cuda(SPEC), "nvjpeg": _nvjpeg,
            "dali_gpu": _dali_gpu}[side](work, batch_size)


def _reason(e: BaseException) -> str:
    msg = " ".join(str(e).split())
    return f"{type(e).__name__}: {msg[:600]}" if msg else type(e).__name__


def run_one(side: str, work: Path, images: int, batch_size: int,
            min_secs: float = MIN_SECS) -> dict[str, Any]:
    """One side in this process: passes until ``min_secs`` of them went by."""
    module = {**SIDES, **GPU_SIDES}[side][0]
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        return {"status": "not installed", "reason": f"no module named {module!r}"}
    try:
        batches = _setup(side, work, batch_size)
        passes: list[dict[str, float]] = []
        while not passes or sum(p["seconds"] for p in passes) < min_secs:
            p = _consume(batches)
            if p["images"] != images:
                raise RuntimeError(f"{p['images']} images in a pass, expected {images}")
            passes.append(p)
    except Exception as e:  # a peer's failure is a result
        return {"status": "failed", "reason": _reason(e)}
    return {"status": "ran", "passes": passes}


def _child(args: list[str], timeout: float) -> dict[str, Any]:
    """``python -m hydrofeed.bench_images ARGS`` in a fresh process; its result file's JSON."""
    from hydrofeed.bench_peers import _child as child

    return child(args, timeout, module="hydrofeed.bench_images")


def _sig(v: float) -> float:
    return float(f"{v:.4g}")


def _gen(out: Path, fmt: str, images: int) -> None:
    subprocess.run([hydrofeed_bin(), "gen", "--images", "--format", fmt, "--rows", str(images),
                    "--files", "4", "--out", str(out)], check=True, stdout=subprocess.DEVNULL)


def _summary(passes: list[dict[str, float]], sides_s: list[float]) -> dict[str, Any]:
    med = {k: float(np.median([p[k] for p in passes]))
           for k in ("images_per_s", "images_per_cpu_s", "trainer_cpu_ms_per_image",
                     "cpu_ms_per_image")}
    return {
        "images_per_s": _sig(max(p["images_per_s"] for p in passes)),
        "median_images_per_s": _sig(med["images_per_s"]),
        "images_per_cpu_s": _sig(max(p["images_per_cpu_s"] for p in passes)),
        "median_images_per_cpu_s": _sig(med["images_per_cpu_s"]),
        "trainer_cpu_ms_per_image": _sig(med["trainer_cpu_ms_per_image"]),
        "cpu_ms_per_image": _sig(med["cpu_ms_per_image"]),
        "passes": len(passes),
        "shortest_side_s": _sig(min(sides_s)),
        "runs_images_per_s": [round(p["images_per_s"], 1) for p in passes],
        "runs_images_per_cpu_s": [round(p["images_per_cpu_s"], 1) for p in passes],
    }


def bench_images(images: int, repeat: int, batch_size: int, work: Path, timeout: float,
                 only: list[str] | None = None, min_secs: float = MIN_SECS,
                 gpu: bool = False) -> dict[str, Any]:
    table = GPU_SIDES if gpu else SIDES
    ours_side = "hydrofeed_nvjpeg" if gpu else "hydrofeed"
    peers = [s for s in table if s != ours_side]
    sides = [s for s in table if only is None or s in only or s == ours_side]
    binary = hydrofeed_bin()
    os.environ["HYDROFEED_BIN"] = shutil.copy2(binary, str(work / "hydrofeed"))
    print(f"images: generating {images} JPEGs (Parquet, TFRecord)", file=sys.stderr)
    t0 = time.perf_counter()
    _gen(work / "parquet", "parquet", images)
    _gen(work / "tfrecord", "tfrecord", images)
    gen_s = time.perf_counter() - t0
    data_bytes = sum(p.stat().st_size for p in _parquet_files(work))
    status: dict[str, dict[str, Any]] = {}
    from hydrofeed.bench_peers import rounds

    runs, side_s = rounds(
        sides, repeat, status, "images",
        lambda s: _child(["_run", s, "--work", str(work), "--images", str(images),
                          "--batch-size", str(batch_size), "--min-secs", str(min_secs)], timeout),
        lambda passes: ", ".join(f"{p['images_per_s']:,.0f}/s ({p['images_per_cpu_s']:,.0f}/cpu-s)"
                                 for p in passes),
    )

    def entry(s: str) -> dict[str, Any]:
        what = table[s][1]
        if s not in sides:
            return {"status": "skipped", "reason": "not in --only", "what": what}
        if s in status:
            return {**status[s], "what": what}
        return {"status": "ran", "what": what, **_summary(runs[s], side_s[s])}

    out_sides = {s: entry(s) for s in table}
    ours = out_sides[ours_side]
    ratios: dict[str, float] = {}
    for p in peers:
        if ours["status"] == "ran" and out_sides[p]["status"] == "ran":
            ratios[f"per_core_vs_{p}"] = _sig(ours["images_per_cpu_s"]
                                              / out_sides[p]["images_per_cpu_s"])
            ratios[f"per_core_vs_{p}_median"] = _sig(
                ours["median_images_per_cpu_s"] / out_sides[p]["median_images_per_cpu_s"])
            ratios[f"all_cores_vs_{p}"] = _sig(ours["images_per_s"] / out_sides[p]["images_per_s"])
    ran = [p for p in peers if out_sides[p]["status"] == "ran"]
    best = max(ran, key=lambda p: out_sides[p]["images_per_cpu_s"]) if ran else None
    target: dict[str, Any] = {"per_core_over_best_peer": TARGET, "best_peer_per_core": best}
    if best is not None and ours["status"] == "ran":
        target["ratio"] = ratios[f"per_core_vs_{best}"]
        target["met"] = ratios[f"per_core_vs_{best}"] >= TARGET
    return {
        "benchmark": "images_gpu" if gpu else "images",
        "ours": ours_side,
        "images": images,
        "batch_size": batch_size,
        "repeat": repeat,
        "min_secs": min_secs,
        "augment": f"{SPEC} (shorter side {RESIZE} bilinear, random {SIZE}x{SIZE} crop, random "
                   "horizontal flip) into (n, 224, 224, 3) uint8",
        "input": "hydrofeed gen --images: 4 Parquet files (image binary, label int64) and a "
                 "TFRecord copy (image/encoded, image/class/label); JPEGs about 500x375, "
                 "quality 90, about 10% grayscale and 10% progressive",
        "input_bytes": data_bytes,
        "gen_seconds": _sig(gen_s),
        "metric_note": "images_per_s: images into the trainer's loop per wall second (all "
                       "cores); images_per_cpu_s: per CPU-second of every process of the side "
                       "(trainer, serve, DataLoader workers), per core; trainer_cpu_ms_per_image:"
                       " CPU of the trainer's process per image; each side in a fresh process "
                       "per round, passes (one epoch each) until >= min_secs, sides alternated "
                       "over repeat rounds; best pass and median",
        "hydrofeed_bin": binary,
        "build": "release" if "/release/" in binary else "debug" if "/debug/" in binary else "?",
        "python": sys.executable,
        "cpus": os.cpu_count(),
        "sides": out_sides,
        "ratios": ratios,
        "target": target,
    }


def main(argv: list[str]) -> int:
    if argv[:1] == ["_run"]:
        p = argparse.ArgumentParser(prog="python -m hydrofeed.bench_images")
        p.add_argument("what")
        p.add_argument("side")
        p.add_argument("--work", type=Path, required=True)
        p.add_argument("--images", type=int, required=True)
        p.add_argument("--batch-size", type=int, default=128)
        p.add_argument("--min-secs", type=float, default=MIN_SECS)
        p.add_argument("--result", type=Path, required=True)
        c = p.parse_args(argv)
        res = run_one(c.side, c.work, c.images, c.batch_size, c.min_secs)
        c.result.write_text(json.dumps(res))
        return 0
    p = argparse.ArgumentParser(prog="python -m hydrofeed.bench images", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--images", type=int, default=3000, help="JPEGs generated (one epoch)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--timeout", type=float, default=600,
                   help="seconds one side of one round may take (setup included)")
    p.add_argument("--only", help="comma-separated sides to run (hydrofeed always runs): "
                   + ", ".join([*SIDES, *GPU_SIDES]))
    p.add_argument("--min-secs", type=float, default=MIN_SECS,
                   help="seconds each side runs at least, per round (passes repeated)")
    p.add_argument("--json", action="store_true", help="print JSON only")
    p.add_argument("--gpu", action="store_true",
                   help="into CUDA tensors: hydrofeed's nvJPEG path (gpu) against its CPU "
                   "decode staged to the GPU, torchvision's nvJPEG in the trainer, DALI's GPU "
                   "pipeline")
    a = p.parse_args(argv)
    only = a.only.split(",") if a.only else None
    with tempfile.TemporaryDirectory(prefix="hydrofeed-images-") as d:
        out = bench_images(a.images, a.repeat, a.batch_size, Path(d), a.timeout, only,
                           a.min_secs, a.gpu)
    if a.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{a.images} JPEGs, batch {a.batch_size}, {a.repeat} rounds of >= {a.min_secs} s "
              f"each, best pass (median); {out['cpus']} CPUs; build {out['build']}")
        for s, r in out["sides"].items():
            if r["status"] == "ran":
                print(f"  {s:10s} {r['images_per_s']:>8,.0f} images/s "
                      f"({r['median_images_per_s']:>8,.0f}) {r['images_per_cpu_s']:>7,.0f} per "
                      f"CPU-s ({r['median_images_per_cpu_s']:>7,.0f}) trainer "
                      f"{r['trainer_cpu_ms_per_image']:.2f} ms CPU/image")
            else:
                print(f"  {s:10s} {r['status']}: {r.get('reason', '')}")
        for k, v in out["ratios"].items():
            print(f"  {k}: {v}")
        print(f"  target: {out['target']}")
    return 0 if out["sides"][out["ours"]]["status"] == "ran" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
