"""Image columns decoded by ``hydrofeed.read(images=...)`` against Pillow and TensorFlow.

PNG pixel-exact against Pillow; JPEG at full scale pixel-exact against Pillow and
``tf.io.decode_jpeg``; at a reduced DCT scale against Pillow's ``draft()``; resizes within +-1
of Pillow's same filter; the kinds refused by name; bad input as ``DataError`` or skipped.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
import struct
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

import hydrofeed


def _picture(w: int, h: int, seed: int = 0) -> np.ndarray:
    """A natural-ish RGB picture: smooth gradients, an edge, some noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    r = 128 + 100 * np.sin(x / 17.0) * np.cos(y / 23.0)
    g = (x * 255 // max(w - 1, 1)).astype(float)
    b = np.where(x + y > (w + h) // 2, 200.0, 40.0)
    a = np.stack([r, g, b], axis=-1) + rng.normal(0, 6, (h, w, 3))
    return a.clip(0, 255).astype(np.uint8)


def _encode(im: Image.Image, fmt: str, **kw: object) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **kw)
    return buf.getvalue()


def _parquet(tmp: Path, images: list[bytes], name: str = "images.parquet") -> str:
    path = tmp / name
    pq.write_table(
        pa.table({"id": pa.array(range(len(images)), pa.int64()), "image": pa.array(images, pa.binary())}),
        path,
    )
    return str(path)


def _read(path: str, spec: str, **kw: object) -> tuple[np.ndarray, np.ndarray]:
    """(ids, pixels (N, H, W, 3)) of every batch."""
    return _batches(hydrofeed.read(path, images=spec, **kw))


def _batches(reader: Iterable[pa.RecordBatch]) -> tuple[np.ndarray, np.ndarray]:
    ids, pixels = [], []
    for b in reader:
        col = b.column(b.schema.get_field_index("image"))
        t = col.type
        h, w = t.list_size, t.value_type.list_size
        flat = col.values.values.values.to_numpy(zero_copy_only=False)
        pixels.append(flat.reshape(len(b), h, w, 3))
        ids.append(b.column(0).to_numpy())
    return np.concatenate(ids), np.concatenate(pixels)


def _one(tmp: Path, data: bytes, spec: str) -> np.ndarray:
    return _read(_parquet(tmp, [data]), spec)[1][0]


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "L", "LA", "P"])
def test_png_is_pixel_exact_against_pillow(tmp_path: Path, mode: str) -> None:
    im = Image.fromarray(_picture(37, 23)).convert(mode)
    data = _encode(im, "PNG")
    want = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    got = _one(tmp_path, data, "image=crop:23x37")
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "kind", ["420", "444", "gray", "progressive"],
)
def test_jpeg_full_scale_is_pixel_exact_against_pillow_and_tensorflow(tmp_path: Path, kind: str) -> None:
    import tensorflow as tf

    im = Image.fromarray(_picture(203, 151, seed=1))
    kw: dict[str, object] = {"quality": 90}
    if kind == "444":
        kw["subsampling"] = 0
    if kind == "gray":
        im = im.convert("L")
    if kind == "progressive":
        kw["progressive"] = True
    data = _encode(im, "JPEG", **kw)
    got = _one(tmp_path, data, "image=crop:151x203")
    pil = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    np.testing.assert_array_equal(got, pil)
    tfd = tf.io.decode_jpeg(data, channels=3, dct_method="INTEGER_ACCURATE").numpy()
    np.testing.assert_array_equal(got, tfd)


def test_jpeg_from_tensorflows_encoder_through_tfrecord(tmp_path: Path) -> None:
    import tensorflow as tf

    path = tmp_path / "images.tfrecord"
    datas = [
        tf.io.encode_jpeg(tf.constant(_picture(64, 48, seed=s)), quality=90).numpy() for s in range(3)
    ]
    with tf.io.TFRecordWriter(str(path)) as w:
        for i, d in enumerate(datas):
            ex = tf.train.Example(
                features=tf.train.Features(
                    feature={
                        "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
                        "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[d])),
                    }
                )
            )
            w.write(ex.SerializeToString())
    ids, got = _read(str(path), "image=crop:48x64")
    assert list(ids) == [0, 1, 2]
    for d, g in zip(datas, got):
        np.testing.assert_array_equal(g, tf.io.decode_jpeg(d, channels=3, dct_method="INTEGER_ACCURATE").numpy())


@pytest.mark.parametrize("scale", [2, 4, 8])
def test_reduced_scale_is_pillows_draft(tmp_path: Path, scale: int) -> None:
    w, h = 800, 600
    data = _encode(Image.fromarray(_picture(w, h, seed=2)), "JPEG", quality=90)
    sw, sh = -(-w // scale), -(-h // scale)
    # The resize target is exactly the scaled size: the DCT-scaled decode is all there is.
    got = _one(tmp_path, data, f"image=resize:{sh},crop:{sh}x{sw}")
    im = Image.open(io.BytesIO(data))
    im.draft("RGB", (sw, sh))
    assert im.size == (sw, sh)
    np.testing.assert_array_equal(got, np.asarray(im.convert("RGB")))


@pytest.mark.parametrize(
    "name,pil", [("bilinear", Image.BILINEAR), ("bicubic", Image.BICUBIC), ("lanczos", Image.LANCZOS)]
)
def test_resize_is_within_one_of_pillows_filter(tmp_path: Path, name: str, pil: int) -> None:
    src = Image.fromarray(_picture(301, 199, seed=3))
    data = _encode(src, "PNG")
    # Shorter side 199 -> 120, longer round(301 * 120 / 199) = 182.
    got = _one(tmp_path, data, f"image=resize:120:{name},crop:120x182")
    want = np.asarray(src.resize((182, 120), pil))
    diff = np.abs(got.astype(int) - want.astype(int))
    assert diff.max() <= 1, f"{name}: max difference {diff.max()}"
    got = _one(tmp_path, data, f"image=size:90x250:{name}")
    want = np.asarray(src.resize((250, 90), pil))
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1


def test_center_crop_random_crop_and_flip(tmp_path: Path) -> None:
    pic = _picture(40, 30, seed=4)
    data = _encode(Image.fromarray(pic), "PNG")
    path = _parquet(tmp_path, [data] * 64)
    _, center = _read(path, "image=crop:10x20")
    np.testing.assert_array_equal(center[0], pic[10:20, 10:30])
    _, flipped = _read(path, "image=crop:10x20,flip")
    mirrored = [bool((f == center[0][:, ::-1]).all()) for f in flipped]
    same = [bool((f == center[0]).all()) for f in flipped]
    assert all(m or s for m, s in zip(mirrored, same))
    assert 10 < sum(mirrored) < 54
    # Random crops: each one of the picture's windows; the same again on a second read.
    _, a = _read(path, "image=randcrop:10x20,seed:3")
    _, b = _read(path, "image=randcrop:10x20,seed:3")
    np.testing.assert_array_equal(a, b)
    windows = {(t, l) for t in range(21) for l in range(21) if (a[0] == pic[t : t + 10, l : l + 20]).all()}
    assert windows
    assert len({x.tobytes() for x in a}) > 10
    _, c = _read(path, "image=randcrop:10x20,seed:4")
    assert not np.array_equal(a, c)


def test_cmyk_jpeg_and_16_bit_png_are_refused_by_name(tmp_path: Path) -> None:
    cmyk = _encode(Image.fromarray(_picture(16, 16)).convert("CMYK"), "JPEG")
    with pytest.raises(hydrofeed.DataError, match="CMYK JPEG is not supported"):
        _one(tmp_path, cmyk, "image=crop:8")
    deep = _encode(Image.fromarray((np.arange(256, dtype=np.uint16).reshape(16, 16) * 200)), "PNG")
    assert Image.open(io.BytesIO(deep)).mode.startswith("I")
    with pytest.raises(hydrofeed.DataError, match="16-bit PNG is not supported"):
        _one(tmp_path, deep, "image=crop:8")


def _png_bomb(w: int, h: int) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 4096)) + chunk(b"IEND", b"")


def test_bad_images_are_data_errors_naming_file_row_and_column(tmp_path: Path) -> None:
    good = _encode(Image.fromarray(_picture(32, 32)), "JPEG", quality=90)
    truncated = good[: len(good) // 2]
    # Bytes 200-264 are the end of the first Huffman table and the start of the second: noise
    # there, from fixed seeds, so that a failure names the bytes that made it.
    corrupt = [good[:200] + np.random.default_rng(seed).bytes(64) + good[264:] for seed in range(8)]
    bads = [truncated, *corrupt, _png_bomb(60000, 60000), b"not an image"]
    for i, bad in enumerate(bads):
        images = [good, good, bad, good]
        path = _parquet(tmp_path, images, f"bad{i}.parquet")
        with pytest.raises(hydrofeed.DataError) as e:
            _read(path, "image=crop:16")
        msg = str(e.value)
        assert f"bad{i}.parquet" in msg and "row 2" in msg and '"image"' in msg, msg
        if bad.startswith(b"\x89PNG"):
            assert "60000x60000" in msg and "over the limit" in msg, msg
        for _ in range(3):
            reader = hydrofeed.read(path, images="image=crop:16", on_error="skip")
            ids, px = _batches(reader)
            skipped = [(s["path"], s["split"], s["start"], s["end"]) for s in reader.skipped]
            why = f"bad image {i} ({bad[:300].hex()}...): {msg}; skipped {reader.skipped}"
            assert list(ids) == [0, 1, 3], why
            assert skipped == [(path, 0, 2, 3)], why
            assert '"image"' in reader.skipped[0]["reason"], why
            assert px.shape == (3, 16, 16, 3)


def test_a_spec_that_does_not_parse_is_a_value_error(tmp_path: Path) -> None:
    path = _parquet(tmp_path, [_encode(Image.fromarray(_picture(8, 8)), "PNG")])
    with pytest.raises(ValueError, match="one fixed size"):
        hydrofeed.read(path, images="image=resize:256")
    with pytest.raises(hydrofeed.HydrofeedError, match="not in the schema"):
        hydrofeed.read(path, images="picture=crop:4")


@pytest.mark.parametrize("name,pil", [("bilinear", Image.BILINEAR), ("lanczos", Image.LANCZOS)])
def test_jpeg_crop_decoded_from_its_region_is_pillows_resize_and_crop(tmp_path: Path, name: str, pil: int) -> None:
    # A center crop well inside the image: the JPEG is decoded only within the crop's region
    # (docs/formats.md, Images, "Speed"); the pixels are Pillow's whole decode, resized, cropped.
    data = _encode(Image.fromarray(_picture(301, 199, seed=11)), "JPEG", quality=90)
    got = _one(tmp_path, data, f"image=resize:120:{name},crop:64x80")
    resized = np.asarray(Image.open(io.BytesIO(data)).convert("RGB").resize((182, 120), pil))
    top, left = (120 - 64) // 2, (182 - 80) // 2
    want = resized[top : top + 64, left : left + 80]
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1


def test_an_input_of_bad_images_lists_its_first_ten_thousand_skips_and_counts_them_all(tmp_path: Path) -> None:
    good = _encode(Image.fromarray(_picture(8, 8)), "PNG")
    images = [b"not an image"] * 10_050 + [good]
    reader = hydrofeed.read(_parquet(tmp_path, images), images="image=crop:8", on_error="skip")
    ids, _ = _batches(reader)
    assert list(ids) == [10_050]
    assert reader.skipped_records == 10_050
    assert len(reader.skipped) == 10_000
    assert [(s["start"], s["end"]) for s in reader.skipped[:2]] == [(0, 1), (1, 2)]
    assert "not a JPEG, PNG or WebP" in reader.skipped[-1]["reason"]
