"""EXIF orientation in image specs (``exif``) against Pillow's ``ImageOps.exif_transpose``.

Without ``exif`` the orientation is ignored, as TensorFlow's ``decode_jpeg`` ignores it; with it
each of the 8 orientations turns the image upright exactly as Pillow does, at full scale and at a
reduced DCT scale (Pillow's ``draft()``), for JPEG and PNG (``eXIf``).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image, ImageOps

import hydrofeed

from test_images import _picture


def _with_orientation(pic: np.ndarray, fmt: str, orientation: int, **kw: object) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = orientation
    buf = io.BytesIO()
    Image.fromarray(pic).save(buf, fmt, exif=exif.tobytes(), **kw)
    return buf.getvalue()


def _read_one(tmp: Path, data: bytes, spec: str) -> np.ndarray:
    path = tmp / "one.parquet"
    pq.write_table(pa.table({"image": pa.array([data], pa.binary())}), path)
    (batch,) = list(hydrofeed.read(str(path), images=spec))
    col = batch.column(0)
    h, w = col.type.list_size, col.type.value_type.list_size
    return col.values.values.values.to_numpy(zero_copy_only=False).reshape(h, w, 3)


@pytest.mark.parametrize("orientation", range(1, 9))
def test_jpeg_orientation_is_pillows_exif_transpose(tmp_path: Path, orientation: int) -> None:
    data = _with_orientation(_picture(203, 151, seed=5), "JPEG", orientation, quality=90)
    im = Image.open(io.BytesIO(data))
    assert im.getexif()[0x0112] == orientation
    want = np.asarray(ImageOps.exif_transpose(im).convert("RGB"))
    h, w = want.shape[:2]
    np.testing.assert_array_equal(_read_one(tmp_path, data, f"image=exif,crop:{h}x{w}"), want)
    # Without `exif` the stored pixels, as TensorFlow's decode_jpeg gives them.
    stored = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    np.testing.assert_array_equal(_read_one(tmp_path, data, "image=crop:151x203"), stored)


@pytest.mark.parametrize("orientation", [3, 6, 8])
def test_orientation_at_a_reduced_scale_is_pillows_draft_transposed(tmp_path: Path, orientation: int) -> None:
    data = _with_orientation(_picture(800, 600, seed=6), "JPEG", orientation, quality=90)
    im = Image.open(io.BytesIO(data))
    im.draft("RGB", (200, 150))
    assert im.size == (200, 150)
    want = np.asarray(ImageOps.exif_transpose(im).convert("RGB"))
    h, w = want.shape[:2]
    got = _read_one(tmp_path, data, f"image=exif,resize:150,crop:{h}x{w}")
    np.testing.assert_array_equal(got, want)
    # An exact size after a quarter turn: the DCT scale covers the turned sides.
    got = _read_one(tmp_path, data, f"image=exif,size:{h}x{w}")
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("orientation", [2, 6, 7])
def test_png_exif_chunk_orientation(tmp_path: Path, orientation: int) -> None:
    data = _with_orientation(_picture(37, 23, seed=7), "PNG", orientation)
    im = Image.open(io.BytesIO(data))
    want = np.asarray(ImageOps.exif_transpose(im).convert("RGB"))
    h, w = want.shape[:2]
    np.testing.assert_array_equal(_read_one(tmp_path, data, f"image=exif,crop:{h}x{w}"), want)
