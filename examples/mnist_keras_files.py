"""TensorFlowOnSpark's MNIST Keras example in hydrofeed's file mode.

Same model and training loop as ``mnist_keras_spark.py``; the data does not go through Spark:
``cluster.train_files()`` starts a coordinator in the driver and a feeder on every node, which
reads the Parquet files (local or ``hdfs://``) and hands each trainer its batches through
shared memory. Every worker gets exactly the same number of batches per epoch, so the
synchronous loop runs exactly ``steps_per_epoch`` steps (no 90% guess, no ``terminate()``).

Data: Parquet with a ``image`` column (784 numbers, list or fixed-size list) and a ``label``
column, e.g. written by Spark (``df.write.parquet``) or pyarrow; ``--synthetic N`` writes N
random MNIST-shaped rows to ``--images_labels`` first.
"""

from __future__ import annotations


def main_fun(args, ctx):
    import numpy as np
    import tensorflow as tf

    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # TF_CONFIG is set by hydrofeed

    def build_and_compile_cnn_model():
        model = tf.keras.Sequential([
            tf.keras.Input(shape=(28, 28, 1)),
            tf.keras.layers.Conv2D(32, 3, activation="relu"),
            tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(10, activation="softmax"),
        ])
        model.compile(
            loss=tf.keras.losses.sparse_categorical_crossentropy,
            optimizer=tf.keras.optimizers.SGD(learning_rate=0.01),
            metrics=["accuracy"],
        )
        return model

    tf_feed = ctx.get_data_feed(train_mode=True, input_mapping={"image": "image", "label": "label"})

    def generator():
        while not tf_feed.should_stop():
            batch = tf_feed.next_batch(args.batch_size)
            if len(batch["label"]) == 0:
                continue
            images = np.asarray(batch["image"], dtype=np.float32).reshape(-1, 28, 28, 1) / 255.0
            labels = np.asarray(batch["label"], dtype=np.float32)
            yield images, labels

    ds = tf.data.Dataset.from_generator(
        generator,
        output_signature=(
            tf.TensorSpec(shape=(None, 28, 28, 1), dtype=tf.float32),
            tf.TensorSpec(shape=(None,), dtype=tf.float32),
        ),
    )
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    ds = ds.with_options(options)

    with strategy.scope():
        model = build_and_compile_cnn_model()
        optimizer = model.optimizer
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(reduction="none")

    @tf.function
    def train_step(iterator):
        def step_fn(images, labels):
            with tf.GradientTape() as tape:
                probs = model(images, training=True)
                loss = tf.nn.compute_average_loss(loss_fn(labels, probs))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        images, labels = next(iterator)
        per_replica = strategy.run(step_fn, args=(images, labels))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    iterator = iter(strategy.experimental_distribute_dataset(ds))
    for epoch in range(args.epochs):
        total = 0.0
        for _ in range(args.steps_per_epoch):  # the same on every worker: the coordinator deals equal steps
            total += float(train_step(iterator))
        print(f"{ctx.job_name}:{ctx.task_index} epoch {epoch + 1}: loss {total / args.steps_per_epoch:.4f}", flush=True)

    ctx.export_saved_model(model, args.export_dir)


def write_synthetic(path: str, rows: int, files: int = 4) -> None:
    """Random MNIST-shaped rows as Parquet (pyarrow): image 784 x float32, label int64."""
    import os

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(path, exist_ok=True)
    rng = np.random.default_rng(0)
    per = -(-rows // files)
    for k in range(files):
        n = min(per, rows - k * per)
        if n <= 0:
            break
        img = rng.integers(0, 256, n * 784).astype(np.float32)
        pq.write_table(
            pa.table({
                "image": pa.FixedSizeListArray.from_arrays(pa.array(img), 784),
                "label": pa.array(rng.integers(0, 10, n)),
            }),
            os.path.join(path, f"part-{k:05d}.parquet"),
        )


if __name__ == "__main__":
    import argparse

    from pyspark.conf import SparkConf
    from pyspark.context import SparkContext

    from hydrofeed.spark import InputMode, TFCluster
    from hydrofeed.spark.files import steps_per_epoch, total_rows

    sc = SparkContext(conf=SparkConf().setAppName("mnist_keras_hydrofeed_files"))
    executors = sc._conf.get("spark.executor.instances")
    num_executors = int(executors) if executors is not None else 1

    parser = argparse.ArgumentParser()
    parser.add_argument("--batch_size", help="number of records per batch (per worker, per step)", type=int, default=64)
    parser.add_argument("--cluster_size", help="number of nodes in the cluster", type=int, default=num_executors)
    parser.add_argument("--epochs", help="number of epochs", type=int, default=3)
    parser.add_argument("--images_labels", help="Parquet files with image (784 numbers) and label columns", required=True)
    parser.add_argument("--synthetic", help="first write N random MNIST-shaped rows to --images_labels", type=int, default=0)
    parser.add_argument("--export_dir", help="path to export saved_model", default="mnist_export")
    parser.add_argument("--tensorboard", help="launch tensorboard process", action="store_true")
    args = parser.parse_args()
    print("args:", args)

    if args.synthetic:
        write_synthetic(args.images_labels, args.synthetic)
    workers = args.cluster_size  # every node is a worker (chief included) in this example
    args.steps_per_epoch = steps_per_epoch(total_rows(args.images_labels), workers, args.batch_size)

    cluster = TFCluster.run(sc, main_fun, args, args.cluster_size, num_ps=0, tensorboard=args.tensorboard,
                            input_mode=InputMode.SPARK, master_node="chief")
    cluster.train_files(args.images_labels, columns=["image", "label"], num_epochs=args.epochs,
                        batch_size=args.batch_size, shuffle=True)
    cluster.shutdown()
    sc.stop()
