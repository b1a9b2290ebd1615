"""``hydrofeed gen --images``: ImageNet-like JPEGs in Parquet and TFRecord, read by independent
readers (pyarrow, TensorFlow's TFRecordDataset and parse_single_example, Pillow) and read back
by hydrofeed with ``images=``."""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

import hydrofeed
from hydrofeed._proc import hydrofeed_bin

ROWS = 60


def _gen(out: Path, fmt: str, rows: int = ROWS, files: int = 2, seed: int = 3) -> list[Path]:
    subprocess.run([hydrofeed_bin(), "gen", "--images", "--format", fmt, "--rows", str(rows),
                    "--files", str(files), "--seed", str(seed), "--out", str(out)],
                   check=True, stdout=subprocess.DEVNULL)
    return sorted(out.iterdir())


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("gen_images")
    _gen(d / "parquet", "parquet")
    _gen(d / "tfrecord", "tfrecord")
    return d


def _parquet_rows(d: Path) -> tuple[list[bytes], list[int]]:
    t = pq.ParquetDataset(str(d / "parquet")).read()
    assert str(t.schema.field("image").type) == "binary"
    assert str(t.schema.field("label").type) == "int64"
    return t.column("image").to_pylist(), t.column("label").to_pylist()


def test_parquet_holds_imagenet_like_jpegs(data: Path) -> None:
    images, labels = _parquet_rows(data)
    assert len(images) == ROWS
    assert all(0 <= v < 1000 for v in labels)
    modes, progressive, sizes = [], 0, []
    for b in images:
        im = Image.open(io.BytesIO(b))
        assert im.format == "JPEG"
        im.load()  # decodes whole: no truncation, no corrupt data
        modes.append(im.mode)
        progressive += bool(im.info.get("progressive"))
        w, h = im.size
        assert 330 <= min(w, h) and max(w, h) <= 560, im.size
        sizes.append(len(b))
    assert set(modes) <= {"RGB", "L"} and "L" in modes and "RGB" in modes
    assert 1 <= progressive < ROWS // 2
    assert 60_000 < np.mean(sizes) < 200_000, np.mean(sizes)


def test_the_same_seed_writes_the_same_bytes(tmp_path: Path) -> None:
    a = _gen(tmp_path / "a", "parquet", rows=4, files=1)
    b = _gen(tmp_path / "b", "parquet", rows=4, files=1)
    c = _gen(tmp_path / "c", "parquet", rows=4, files=1, seed=4)
    rows = [pq.read_table(p[0]).column("image").to_pylist() for p in (a, b, c)]
    assert rows[0] == rows[1] and rows[0] != rows[2]


def test_tfrecord_holds_the_same_rows_as_imagenets_examples(data: Path) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    tf = pytest.importorskip("tensorflow")
    files = [str(p) for p in sorted((data / "tfrecord").iterdir())]
    spec = {
        "image/encoded": tf.io.FixedLenFeature([], tf.string),
        "image/class/label": tf.io.FixedLenFeature([], tf.int64),
        "image/format": tf.io.FixedLenFeature([], tf.string),
        "image/height": tf.io.FixedLenFeature([], tf.int64),
        "image/width": tf.io.FixedLenFeature([], tf.int64),
    }
    images, labels = _parquet_rows(data)
    n = 0
    for i, rec in enumerate(tf.data.TFRecordDataset(files)):
        ex = tf.io.parse_single_example(rec, spec)
        encoded = ex["image/encoded"].numpy()
        assert encoded == images[i]
        assert int(ex["image/class/label"]) == labels[i]
        assert ex["image/format"].numpy() == b"JPEG"
        px = tf.io.decode_jpeg(encoded, channels=3).numpy()
        assert px.shape == (int(ex["image/height"]), int(ex["image/width"]), 3)
        n += 1
    assert n == ROWS


def test_hydrofeed_reads_them_back_as_pixels(data: Path) -> None:
    spec = "resize:256,crop:224"
    got = {}
    for fmt, column in (("parquet", "image"), ("tfrecord", "image/encoded")):
        pixels, labels = [], []
        for b in hydrofeed.read(str(data / fmt), images=f"{column}={spec}"):
            col = b.column(b.schema.get_field_index(column))
            flat = col.values.values.values.to_numpy(zero_copy_only=False)
            pixels.append(flat.reshape(len(b), 224, 224, 3))
            label = "label" if fmt == "parquet" else "image/class/label"
            labels.append(b.column(b.schema.get_field_index(label)).to_numpy())
        got[fmt] = (np.concatenate(pixels), np.concatenate(labels))
    assert got["parquet"][0].shape == (ROWS, 224, 224, 3)
    assert np.array_equal(got["parquet"][0], got["tfrecord"][0])
    assert np.array_equal(got["parquet"][1], got["tfrecord"][1])
    # Within +-2 of Pillow on the first image: draft() at the same DCT scale, the same resize
    # and center crop (test_images holds the exact comparisons).
    images, _ = _parquet_rows(data)
    im = Image.open(io.BytesIO(images[0]))
    w, h = im.size
    short = min(w, h)
    # draft() to the smallest DCT scale still covering the resize, as hydrofeed chooses it.
    im.draft("RGB", (w * 256 // short, h * 256 // short))
    im = im.convert("RGB")
    w, h = im.size
    short = min(w, h)
    long = ((max(w, h) * 256 + short // 2) // short)
    size = (256, long) if w <= h else (long, 256)
    im = im.resize(size, Image.BILINEAR)
    w, h = im.size
    left, top = (w - 224) // 2, (h - 224) // 2
    ref = np.asarray(im.crop((left, top, left + 224, top + 224)))
    diff = np.abs(ref.astype(int) - got["parquet"][0][0].astype(int))
    assert diff.max() <= 2, diff.max()
