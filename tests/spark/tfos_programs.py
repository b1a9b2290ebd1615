"""TensorFlowOnSpark programs as TFoS's own examples feed them, run on the executors.

The feeding code keeps the calls and row idioms of TFoS's MNIST examples (``examples/mnist/keras/
mnist_spark.py`` and ``examples/mnist/estimator/mnist_spark.py`` of TFoS 2.2.5, and its Spark-mode
inference): ``TFNode.DataFeed(ctx.mgr, False)`` read one row at a time by a generator behind
``tf.data.Dataset.from_generator``; rows used as the Python objects they were fed as
(``np.array(example[0])`` on a list of ints, ``example[1]`` an int); the estimator's stop hook
(``terminate()`` then ``next_batch(1)``); ``next_batch`` + ``batch_results`` for inference. Only the
import differs (``hydrofeed.compat.tensorflowonspark``).

Rows are MNIST-like: the CSV lines TFoS's ``mnist_data_setup.py`` writes (``label,p0,...,p783``),
parsed by the examples' ``parse``. Each image carries its row id in its first two pixels, so the
test can tell which rows every rank trained on.
"""

from __future__ import annotations

import json
import os


def mnist_lines(n: int) -> list[str]:
    """``n`` CSV lines ``label,p0..p783`` (ints 0-255); row ``i`` has ``p0 = i // 256`` and
    ``p1 = i % 256``."""
    lines = []
    for i in range(n):
        pixels = [i // 256, i % 256] + [(i * 7 + k) % 256 for k in range(782)]
        lines.append(",".join(str(v) for v in [i % 10] + pixels))
    return lines


def parse(ln: str) -> tuple[list[int], int]:
    """The examples' ``parse``: a CSV line to ``(pixels, label)``."""
    vec = [int(x) for x in ln.split(",")]
    return (vec[1:], vec[0])


def row_ids(images) -> list[int]:
    """The row ids carried by a batch of ``(n, 28, 28, 1)`` images scaled to [0, 1]."""
    import numpy as np

    hi = np.rint(np.asarray(images)[:, 0, 0, 0] * 255.0).astype(int)
    lo = np.rint(np.asarray(images)[:, 0, 1, 0] * 255.0).astype(int)
    return (hi * 256 + lo).tolist()


def _dump(args, ctx, payload) -> None:
    path = os.path.join(args.out, f"rank{ctx.executor_id}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(payload, f)
    os.replace(path + ".tmp", path)


def mnist_train(args, ctx):
    """Keras training fed as TFoS's keras ``mnist_spark.py`` feeds it; with ``args.max_steps`` it
    stops early as the estimator example's ``StopFeedHook`` does."""
    import numpy as np
    import tensorflow as tf

    from hydrofeed.compat.tensorflowonspark import TFNode

    tf_feed = TFNode.DataFeed(ctx.mgr, False)

    def rdd_generator():
        while not tf_feed.should_stop():
            batch = tf_feed.next_batch(1)
            if len(batch) > 0:
                example = batch[0]
                image = np.array(example[0]).astype(np.float32) / 255.0
                image = np.reshape(image, (28, 28, 1))
                label = np.array(example[1]).astype(np.float32)
                label = np.reshape(label, (1,))
                yield (image, label)
            else:
                return

    ds = tf.data.Dataset.from_generator(
        rdd_generator, (tf.float32, tf.float32), (tf.TensorShape([28, 28, 1]), tf.TensorShape([1]))
    )
    ds = ds.batch(args.batch_size)

    model = tf.keras.Sequential(
        [
            tf.keras.Input(shape=(28, 28, 1)),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(32, activation="relu"),
            tf.keras.layers.Dense(10, activation="softmax"),
        ]
    )
    model.compile(loss=tf.keras.losses.sparse_categorical_crossentropy, optimizer=tf.keras.optimizers.SGD(learning_rate=0.01))

    ids: list[int] = []
    losses: list[float] = []
    for images, labels in ds:
        losses.append(float(model.train_on_batch(images, labels)))
        ids.extend(row_ids(images))
        if args.max_steps and len(losses) >= args.max_steps:
            break

    if args.max_steps:
        # the estimator example's StopFeedHook.end()
        tf_feed.terminate()
        tf_feed.next_batch(1)
    else:
        # terminating feed tells spark to skip processing further partitions
        tf_feed.terminate()
    _dump(args, ctx, {"ids": ids, "losses": losses, "worker_num": ctx.worker_num, "job_name": ctx.job_name})


def mnist_inference(args, ctx):
    """Spark-mode inference as TFoS feeds it: ``ctx.get_data_feed(train_mode=False)``,
    ``next_batch`` until ``should_stop()``, the batch turned into numpy arrays item by item, one
    result per row through ``batch_results``."""
    import numpy as np

    tf_feed = ctx.get_data_feed(train_mode=False)
    rows = 0
    while not tf_feed.should_stop():
        batch = tf_feed.next_batch(args.batch_size)
        if len(batch) > 0:
            images = []
            labels = []
            for item in batch:
                images.append(item[0])
                labels.append(item[1])
            xs = np.array(images).astype(np.float32) / 255.0
            ys = np.array(labels).astype(np.uint8)
            ids = (np.rint(xs[:, 0] * 255).astype(int) * 256 + np.rint(xs[:, 1] * 255).astype(int)).tolist()
            preds = [int(v) % 10 for v in xs.sum(axis=1) * 255]
            tf_feed.batch_results([f"{i} {int(y)} {p}" for i, y, p in zip(ids, ys, preds)])
            rows += len(batch)
    _dump(args, ctx, {"rows": rows})
