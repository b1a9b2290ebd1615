"""WebP image columns (decoded by the pure-Rust ``image-webp``) against Pillow's decode (libwebp):
lossless pixel-exact, lossy within the tolerance docs/formats.md states, alpha dropped as
``convert("RGB")`` drops it, EXIF orientation applied on request, bad WebP a ``DataError``.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageOps

import hydrofeed

from test_images import _encode, _one, _parquet, _picture, _read

# Lossy WebP: the largest difference allowed from libwebp's decode (docs/formats.md, Images): none,
# the decoders agree.
LOSSY_TOLERANCE = 0


@pytest.mark.parametrize("mode", ["RGB", "RGBA"])
def test_lossless_webp_is_pixel_exact_against_pillow(tmp_path: Path, mode: str) -> None:
    im = Image.fromarray(_picture(61, 43, seed=8)).convert(mode)
    data = _encode(im, "WEBP", lossless=True)
    want = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    np.testing.assert_array_equal(_one(tmp_path, data, "image=crop:43x61"), want)


@pytest.mark.parametrize("quality", [50, 90])
@pytest.mark.parametrize("mode", ["RGB", "RGBA"])
def test_lossy_webp_against_pillow(tmp_path: Path, quality: int, mode: str) -> None:
    im = Image.fromarray(_picture(203, 151, seed=9)).convert(mode)
    data = _encode(im, "WEBP", quality=quality)
    want = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    got = _one(tmp_path, data, "image=crop:151x203")
    diff = np.abs(got.astype(int) - want.astype(int))
    assert diff.max() <= LOSSY_TOLERANCE, f"max difference {diff.max()}, mean {diff.mean():.4f}"


def test_webp_resized_and_oriented(tmp_path: Path) -> None:
    exif = Image.Exif()
    exif[0x0112] = 6
    src = Image.fromarray(_picture(120, 80, seed=10))
    data = _encode(src, "WEBP", lossless=True, exif=exif.tobytes())
    im = Image.open(io.BytesIO(data))
    upright = ImageOps.exif_transpose(im).convert("RGB")
    assert upright.size == (80, 120)
    np.testing.assert_array_equal(_one(tmp_path, data, "image=exif,crop:120x80"), np.asarray(upright))
    got = _one(tmp_path, data, "image=exif,resize:40,crop:60x40")
    want = np.asarray(upright.resize((40, 60), Image.BILINEAR))
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1


def test_bad_webp_is_a_data_error(tmp_path: Path) -> None:
    good = _encode(Image.fromarray(_picture(32, 32)), "WEBP", quality=80)
    path = _parquet(tmp_path, [good, good[: len(good) // 2], good], "bad.parquet")
    with pytest.raises(hydrofeed.DataError) as e:
        _read(path, "image=crop:16")
    msg = str(e.value)
    assert "bad.parquet" in msg and "row 1" in msg and '"image"' in msg and "WebP" in msg, msg
    ids, _ = _read(path, "image=crop:16", on_error="skip")
    assert list(ids) == [0, 2]
