"""Images decoded on the trainer's side (an image spec with ``gpu``, :mod:`hydrofeed.images`).

The feeder sends the JPEG bytes and a plan; the trainer decodes (nvJPEG on a GPU,
libjpeg-turbo through torchvision on the CPU), resizes, crops and flips. Against the feeder's
own decode of the same spec on the same rows: the crop's place and the flip are the same (the
same draws), the pixels within a stated tolerance (torch's resize is not
``fast_image_resize``'s; nvJPEG's IDCT is not libjpeg-turbo's). Through ``serve`` and the ring
as the trainer gets them, and with ``DataFeed.batches(device="cuda")`` where a GPU is.
"""

from __future__ import annotations

import io
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hydrofeed as hf
from hydrofeed import gpu, images

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")

SPEC = "image=resize:256,randcrop:224,flip,seed:11"
#: the feeder's decode against torchvision's libjpeg-turbo and torch's antialiased resize:
#: the mean absolute difference per value, and the share of values more than 2 levels apart
CPU_MEAN, CPU_FAR = 0.4, 0.005
#: against nvJPEG on a GPU, whose IDCT and chroma upsampling are not libjpeg-turbo's (measured
#: on an H200: mean 1.90, 27% of values more than 2 levels apart; a crop misplaced: mean 35)
GPU_MEAN, GPU_FAR = 2.5, 0.35


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory: pytest.TempPathFactory, hf_bin: str) -> Path:
    """48 ImageNet-like JPEGs by ``hydrofeed gen --images`` (some gray, some progressive)."""
    out = tmp_path_factory.mktemp("gpu_images")
    subprocess.run([hf_bin, "gen", "--images", "--format", "parquet", "--rows", "48",
                    "--out", str(out)], check=True, capture_output=True)
    return out


def _feeder_pixels(path: Path, spec: str) -> np.ndarray:
    out = []
    for b in hf.read(str(path), images=spec):
        col = b.column(b.schema.get_field_index("image"))
        out.append(col.values.values.values.to_numpy(zero_copy_only=False).reshape(len(b), 224,
                                                                                     224, 3))
    return np.concatenate(out)


def _trainer_pixels(path: Path, spec: str, device: str) -> np.ndarray:
    out = []
    for b in hf.read(str(path), images=spec):
        assert b.schema.names == ["image", "image.plan", "label"], b.schema.names
        d = images.decode(b, device=device)
        assert "image.plan" not in d and d["label"] is not None
        t = d["image"]
        assert t.dtype == torch.uint8 and tuple(t.shape) == (len(b), 224, 224, 3)
        out.append(t.cpu().numpy())
    return np.concatenate(out)


def _differ(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    d = np.abs(a.astype(np.int16) - b.astype(np.int16))
    return float(d.mean()), float((d > 2).mean())


def test_the_trainers_decode_places_the_crop_and_flip_as_the_feeder(jpegs: Path) -> None:
    want = _feeder_pixels(jpegs, SPEC)
    got = _trainer_pixels(jpegs, SPEC + ",gpu", "cpu")
    mean, far = _differ(got, want)
    print(f"feeder vs trainer (CPU) decode: mean |diff| {mean:.3f}, share > 2 levels {far:.4f}")
    assert mean < CPU_MEAN and far < CPU_FAR, (mean, far)
    # A crop placed or flipped otherwise is far off: the test can tell.
    other = _trainer_pixels(jpegs, SPEC.replace("seed:11", "seed:12") + ",gpu", "cpu")
    assert _differ(other, want)[0] > 5 * CPU_MEAN
    # Center crop, bicubic, lanczos, exact size: the same agreement.
    for spec in ("image=resize:256:bicubic,crop:224", "image=resize:240:lanczos,crop:224",
                 "image=size:224x224"):
        mean, far = _differ(_trainer_pixels(jpegs, spec + ",gpu", "cpu"),
                            _feeder_pixels(jpegs, spec))
        assert mean < CPU_MEAN and far < CPU_FAR, (spec, mean, far)


def test_through_the_ring_the_trainer_gets_bytes_and_plan(serve: Any, jpegs: Path) -> None:
    s = serve("--input", str(jpegs), "--images", SPEC + ",gpu", "--ring-mb", "16")
    feed = hf.DataFeed(str(s.sock), batch_size=16)
    got = []
    for b in feed.batches():
        assert isinstance(b["image"], pa.BinaryArray) and b["image.plan"].shape == (len(b), 7)
        got.append(images.decode(b, feed.schema, "cpu")["image"].numpy())
    want = _trainer_pixels(jpegs, SPEC + ",gpu", "cpu")
    np.testing.assert_array_equal(np.concatenate(got), want)
    assert images.columns(feed.schema) == {"image": (224, 224, "bilinear")}


def test_a_body_that_does_not_decode_names_the_row(tmp_path: Path, jpegs: Path) -> None:
    good = pq.read_table(next(jpegs.glob("*.parquet"))).column("image").to_pylist()[:4]
    bad = bytearray(good[2])
    bad[len(bad) // 3:] = b"\x00" * (len(bad) - len(bad) // 3)  # the header kept
    rows = [good[0], good[1], bytes(bad), good[3]]
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"image": pa.array(rows, pa.binary())}), path)
    with pytest.raises(hf.DataError, match=r"'image', row 2 of the batch"):
        for b in hf.read(str(path), images="image=crop:64,gpu"):
            images.decode(b, device="cpu")
    # With a null row before it, the bad row is still named by its place in the batch.
    path = tmp_path / "null_then_bad.parquet"
    pq.write_table(pa.table({"image": pa.array([None, good[1], bytes(bad), good[3]],
                                               pa.binary())}), path)
    with pytest.raises(hf.DataError, match=r"'image', row 2 of the batch"):
        for b in hf.read(str(path), images="image=crop:64,gpu"):
            images.decode(b, device="cpu")


def test_a_png_row_is_refused_by_the_feeder_or_skipped(tmp_path: Path, jpegs: Path) -> None:
    from PIL import Image

    good = pq.read_table(next(jpegs.glob("*.parquet"))).column("image").to_pylist()[:3]
    buf = io.BytesIO()
    Image.new("RGB", (300, 300)).save(buf, "PNG")
    path = tmp_path / "mixed.parquet"
    pq.write_table(pa.table({"image": pa.array([good[0], buf.getvalue(), good[1]])}), path)
    with pytest.raises(hf.DataError, match=r"row 1.*a PNG.*gpu decodes JPEG only"):
        list(hf.read(str(path), images="image=crop:64,gpu"))
    kept = sum(len(b) for b in hf.read(str(path), images="image=crop:64,gpu", on_error="skip"))
    assert kept == 2


@pytest.mark.skipif(not gpu.available()[0], reason=f"needs a CUDA device: {gpu.available()[1]}")
def test_on_a_gpu_nvjpeg_batches_arrive_as_cuda_tensors(serve: Any, jpegs: Path) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs torch built with CUDA")
    s = serve("--input", str(jpegs), "--images", SPEC + ",gpu", "--ring-mb", "16")
    feed = hf.DataFeed(str(s.sock), batch_size=16)
    got = []
    for b in feed.batches(device="cuda:0"):
        t = b["image"]
        assert t.is_cuda and t.dtype == torch.uint8 and tuple(t.shape[1:]) == (224, 224, 3)
        got.append(t.cpu().numpy())
    want = _feeder_pixels(jpegs, SPEC)
    mean, far = _differ(np.concatenate(got), want)
    print(f"feeder vs nvJPEG decode: mean |diff| {mean:.3f}, share > 2 levels {far:.4f}")
    assert mean < GPU_MEAN and far < GPU_FAR, (mean, far)


def test_without_a_gpu_decode_on_cuda_says_no_cuda_device(jpegs: Path) -> None:
    if torch.cuda.is_available():
        pytest.skip("this host has a CUDA device")
    b = next(iter(hf.read(str(jpegs), images=SPEC + ",gpu")))
    with pytest.raises(hf.NoCudaDeviceError, match="no CUDA device"):
        images.decode(b, device="cuda")


def test_struct_large_binary_and_null_rows(tmp_path: Path, jpegs: Path) -> None:
    """A Hugging Face ``struct<bytes, path>`` column and a ``large_binary`` one give the pixels
    of the plain binary column; a null row is zeros and its neighbours are unchanged."""
    src = next(jpegs.glob("*.parquet"))
    t = pq.read_table(src)
    data = t.column("image").combine_chunks()
    spec = SPEC + ",gpu"
    want = np.concatenate([images.decode(b, device="cpu")["image"].numpy()
                           for b in hf.read(str(src), images=spec)])
    paths = pa.array([f"{i}.jpg" for i in range(len(data))])
    tables = {
        "struct": pa.table({"image": pa.StructArray.from_arrays([data, paths],
                                                                names=["bytes", "path"]),
                            "label": t.column("label")}),
        "large": pa.table({"image": data.cast(pa.large_binary()), "label": t.column("label")}),
    }
    for kind, table in tables.items():
        path = tmp_path / f"{kind}.parquet"
        pq.write_table(table, path)
        got = np.concatenate([images.decode(b, device="cpu")["image"].numpy()
                              for b in hf.read(str(path), images=spec)])
        np.testing.assert_array_equal(got, want, err_msg=kind)
    rows = data.to_pylist()
    rows[3] = None
    path = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"image": pa.array(rows, pa.binary()), "label": t.column("label")}),
                   path)
    got = np.concatenate([images.decode(b, device="cpu")["image"].numpy()
                          for b in hf.read(str(path), images=spec)])
    assert not got[3].any()
    np.testing.assert_array_equal(np.delete(got, 3, axis=0), np.delete(want, 3, axis=0))
