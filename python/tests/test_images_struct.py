"""Image columns held as ``struct<bytes: binary, path: string>`` (the layout of Hugging Face
``datasets``' ``Image`` feature in Parquet): the spec names the struct column, its ``bytes`` field is
decoded, and the tensor column keeps the struct's name. Pixels against Pillow's decode.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

import hydrofeed
from hydrofeed._proc import ServeProcess

from test_images import _encode, _picture

# The schema metadata `datasets` writes beside such a column (its feature types), kept so the file
# is laid out as one `Dataset.to_parquet` writes.
_HF_META = {
    b"huggingface": json.dumps(
        {"info": {"features": {"label": {"dtype": "int64", "_type": "Value"}, "image": {"_type": "Image"}}}}
    ).encode()
}


def _struct_table(images: list[bytes | None], paths: list[str | None], binary: pa.DataType) -> pa.Table:
    image_type = pa.struct([("bytes", binary), ("path", pa.string())])
    image = pa.array(
        [{"bytes": b, "path": p} for b, p in zip(images, paths)],
        image_type,
    )
    table = pa.table({"label": pa.array(range(len(images)), pa.int64()), "image": image})
    return table.replace_schema_metadata(_HF_META)


def _read(path: str, spec: str, **kw: object) -> tuple[np.ndarray, np.ndarray, list[pa.Field]]:
    labels, pixels, fields = [], [], []
    for b in hydrofeed.read(path, images=spec, **kw):
        col = b.column(b.schema.get_field_index("image"))
        h, w = col.type.list_size, col.type.value_type.list_size
        pixels.append(col.values.values.values.to_numpy(zero_copy_only=False).reshape(len(b), h, w, 3))
        labels.append(b.column(b.schema.get_field_index("label")).to_numpy())
        fields = list(b.schema)
    return np.concatenate(labels), np.concatenate(pixels), fields


@pytest.mark.parametrize("binary", [pa.binary(), pa.large_binary()])
def test_struct_bytes_are_decoded_under_the_struct_name(tmp_path: Path, binary: pa.DataType) -> None:
    pics = [_picture(40, 30, seed=s) for s in range(4)]
    datas = [_encode(Image.fromarray(p), "PNG" if s % 2 else "JPEG", quality=90) for s, p in enumerate(pics)]
    path = tmp_path / "hf.parquet"
    pq.write_table(_struct_table(list(datas), [f"img{i}.png" for i in range(4)], binary), path)
    assert pq.read_schema(path).field("image").type.num_fields == 2
    labels, got, fields = _read(str(path), "image=crop:30x40")
    assert list(labels) == [0, 1, 2, 3]
    assert [f.name for f in fields] == ["label", "image"]
    for d, g in zip(datas, got):
        np.testing.assert_array_equal(g, np.asarray(Image.open(io.BytesIO(d)).convert("RGB")))


def test_a_struct_without_bytes_names_its_path(tmp_path: Path) -> None:
    good = _encode(Image.fromarray(_picture(16, 16)), "PNG")
    path = tmp_path / "by_path.parquet"
    pq.write_table(_struct_table([good, None, good], ["a.png", "/data/b.png", "c.png"], pa.binary()), path)
    with pytest.raises(hydrofeed.DataError) as e:
        _read(str(path), "image=crop:8")
    msg = str(e.value)
    assert "by_path.parquet" in msg and "row 1" in msg and '"image"' in msg and "/data/b.png" in msg, msg
    labels, px, _ = _read(str(path), "image=crop:8", on_error="skip")
    assert list(labels) == [0, 2] and px.shape == (2, 8, 8, 3)


def test_a_struct_without_a_bytes_field_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "other.parquet"
    t = pa.table({"image": pa.array([{"data": b"x", "path": "a"}], pa.struct([("data", pa.binary()), ("path", pa.string())]))})
    pq.write_table(t, path)
    with pytest.raises(hydrofeed.HydrofeedError, match='"bytes" field'):
        hydrofeed.read(str(path), images="image=crop:4")


def test_a_struct_column_through_serve_to_a_data_feed(tmp_path: Path) -> None:
    # The feeder's plan carries the struct's type in the tensor field's metadata to its reader.
    datas = [_encode(Image.fromarray(_picture(40, 30, seed=s)), "JPEG", quality=90) for s in range(6)]
    (tmp_path / "data").mkdir()
    table = _struct_table(list(datas), [f"{i}.jpg" for i in range(6)], pa.binary())
    pq.write_table(table, tmp_path / "data" / "part-0.parquet")
    got: dict[int, np.ndarray] = {}
    with ServeProcess(str(tmp_path / "data"), "--columns", "image,label", "--images", "image=crop:30x40") as s:
        feed = hydrofeed.DataFeed(s.socket, batch_size=4, connect_timeout=120)
        for b in feed.batches():
            for label, img in zip(b["label"], b["image"]):
                got[int(label)] = np.asarray(img)
    assert sorted(got) == list(range(6))
    for i, d in enumerate(datas):
        np.testing.assert_array_equal(got[i], np.asarray(Image.open(io.BytesIO(d)).convert("RGB")))
