"""Expected values of generated datasets, read by TensorFlow (an independent reader)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def tf_read_mnist(d: Path) -> dict[str, np.ndarray]:
    import tensorflow as tf

    files = sorted(str(p) for p in d.iterdir() if p.suffix == ".tfrecord")
    spec = {
        "id": tf.io.FixedLenFeature([1], tf.int64),
        "image": tf.io.FixedLenFeature([784], tf.float32),
        "label": tf.io.FixedLenFeature([1], tf.int64),
    }
    cols: dict[str, list[np.ndarray]] = {"id": [], "image": [], "label": []}
    for rec in tf.data.TFRecordDataset(files).batch(1000):
        parsed = tf.io.parse_example(rec, spec)
        for k in cols:
            cols[k].append(parsed[k].numpy())
    return {k: np.concatenate(v) for k, v in cols.items()}
