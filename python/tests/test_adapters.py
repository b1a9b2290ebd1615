"""The framework adapters and the batch surface: dense shapes from any format, epochs that
agree with the trainer's, the dataset's cardinality, read-only exports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hydrofeed as hf
from helpers import DLPackCapsule

pytestmark = pytest.mark.timeout(180)


def _write_lists(path: Path, rows: list[list[float]]) -> None:
    import tensorflow as tf

    with tf.io.TFRecordWriter(str(path)) as w:
        for i, r in enumerate(rows):
            f = {
                "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
                "v": tf.train.Feature(float_list=tf.train.FloatList(value=r)),
            }
            w.write(tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString())


def test_ragged_to_numpy_dense_when_uniform(serve: Any, tmp_path: Path) -> None:
    # Variable-length in the first records (one value), then four values: a ragged column.
    rows = [[float(i)] if i < 1 else [float(i)] * 4 for i in range(1)] + [
        [float(i), i + 0.5, i + 0.25, -i] for i in range(1, 41)
    ]
    _write_lists(tmp_path / "a.tfrecord", rows)
    s = serve("--input", str(tmp_path / "a.tfrecord"))
    feed = hf.DataFeed(str(s.sock), batch_size=10)
    batches = list(feed.batches())
    first = batches[0]["v"]
    if isinstance(first, hf.Ragged):
        with pytest.raises(ValueError, match="row lengths vary from 1 to 4"):
            first.to_numpy()
        with pytest.raises(ValueError, match="row lengths vary"):
            np.asarray(first)
    later = batches[1]["v"]
    assert isinstance(later, hf.Ragged)
    dense = later.to_numpy()
    assert dense.shape == (10, 4) and dense.dtype == np.float32
    np.testing.assert_array_equal(dense, np.array(rows[10:20], dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(later), dense)
    assert np.asarray(later, dtype=np.float64).dtype == np.float64


def test_tf_dataset_shapes_make_lists_dense(serve: Any, tmp_path: Path) -> None:
    import tensorflow as tf

    rows = [[float(i), i + 1.0, i + 2.0, i + 3.0, i + 4.0, i + 5.0] for i in range(50)]
    rows[7] = [1.0, 2.0]  # TFRecord inference then reads "v" as a variable list
    _write_lists(tmp_path / "a.tfrecord", rows[:7] + rows[8:])
    s = serve("--input", str(tmp_path / "a.tfrecord"))
    feed = hf.DataFeed(str(s.sock), batch_size=7)
    ds = hf.tf.dataset(feed, shapes={"v": (2, 3)})
    assert ds.element_spec["v"] == tf.TensorSpec((None, 2, 3), tf.float32)
    got = np.concatenate([el["v"].numpy() for el in ds])
    want = np.array(rows[:7] + rows[8:], dtype=np.float32).reshape(-1, 2, 3)
    np.testing.assert_array_equal(got, want)
    with pytest.raises(KeyError, match="shapes names no column 'nope'"):
        hf.tf.dataset(hf.DataFeed(str(serve("--input", str(tmp_path)).sock)), shapes={"nope": (1,)})


def _model() -> Any:
    import keras

    m = keras.Sequential([keras.Input((784,)), keras.layers.Dense(10, activation="softmax")])
    m.compile("adam", "sparse_categorical_crossentropy")
    return m


@pytest.mark.filterwarnings("ignore:Your input ran out of data")
def test_fit_with_more_epochs_than_the_feed_fails_clearly(serve: Any, mnist_dir: Path) -> None:
    s = serve("--input", str(mnist_dir), "--epochs", "1")
    feed = hf.DataFeed(str(s.sock), batch_size=250)
    ds = hf.tf.dataset(feed, x="image", y="label")
    with pytest.raises(Exception, match=r"asked for epoch 2, but the feed ended after 1 epoch"):
        _model().fit(ds, epochs=2, verbose=0, shuffle=False)


def test_fit_with_the_feeds_epochs_and_known_cardinality(serve: Any, mnist_dir: Path) -> None:
    s = serve("--input", str(mnist_dir), "--epochs", "3")
    feed = hf.DataFeed(str(s.sock), batch_size=250)
    ds = hf.tf.dataset(feed, x="image", y="label", steps_per_epoch=10)
    assert int(ds.cardinality()) == 10
    h = _model().fit(ds, epochs=3, verbose=0, shuffle=False)
    loss = h.history["loss"]
    assert len(loss) == 3 and all(np.isfinite(loss)) and all(v > 0 for v in loss), loss
    assert feed.metrics()["rows"] == 7500


def test_wrong_cardinality_is_an_error(serve: Any, mnist_dir: Path) -> None:
    s = serve("--input", str(mnist_dir))
    feed = hf.DataFeed(str(s.sock), batch_size=250)
    ds = hf.tf.dataset(feed, steps_per_epoch=12)
    with pytest.raises(Exception, match="expected to contain 12 elements but contained only 10"):
        for _ in ds:
            pass


def test_batch_len_is_rows_and_missing_column_names_the_columns(serve: Any, mnist_dir: Path) -> None:
    s = serve("--input", str(mnist_dir))
    feed = hf.DataFeed(str(s.sock), batch_size=64)
    b = feed.next()
    assert b is not None
    assert len(b) == 64 == b.num_rows
    assert list(b) == ["id", "image", "label"]
    with pytest.raises(KeyError, match=r"no column 'nope'; the batch has \['id', 'image', 'label'\]"):
        b["nope"]
    feed.close()


def test_legacy_dlpack_never_aliases_the_ring(serve: Any, mnist_dir: Path) -> None:
    import tensorflow as tf

    s = serve("--input", str(mnist_dir))
    feed = hf.DataFeed(str(s.sock), batch_size=64)
    b = feed.next()
    assert b is not None
    before = b["image"].copy()
    t = tf.experimental.dlpack.from_dlpack(b.dlpack("image"))
    np.testing.assert_array_equal(t.numpy(), before)
    # Writing through the exported tensor must not reach the ring.
    cap = b.dlpack("image")
    arr = np.from_dlpack(DLPackCapsule(cap))
    if arr.flags.writeable:
        arr[0, 0] = -12345.0
    np.testing.assert_array_equal(b["image"], before)
    feed.close()

