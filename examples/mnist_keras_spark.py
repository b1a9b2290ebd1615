"""TensorFlowOnSpark's MNIST Keras example (InputMode.SPARK), on hydrofeed.

Compared with TFoS's examples/mnist/keras/mnist_spark.py the changes are the imports
(``hydrofeed.spark`` instead of ``tensorflowonspark``), Keras 3 / TF 2.21 APIs
(``model.export`` instead of ``tf.keras.experimental.export_saved_model``), and batches taken
as numpy columns with ``input_mapping`` instead of one row at a time. ``--synthetic N`` makes
MNIST-shaped random data when no MNIST CSV is at hand.
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

    # Rows are (pixels, label): with input_mapping each batch arrives as numpy columns.
    tf_feed = ctx.get_data_feed(train_mode=True, input_mapping={"a_pixels": "image", "b_label": "label"})

    def rdd_generator():
        while not tf_feed.should_stop():
            batch = tf_feed.next_batch(args.batch_size)
            if len(batch["label"]) == 0:
                continue
            images = np.asarray(batch["image"], dtype=np.float32).reshape(-1, 28, 28, 1) / 255.0
            labels = np.asarray(batch["label"], dtype=np.float32)
            yield images, labels

    ds = tf.data.Dataset.from_generator(
        rdd_generator,
        output_signature=(
            tf.TensorSpec(shape=(None, 28, 28, 1), dtype=tf.float32),
            tf.TensorSpec(shape=(None,), dtype=tf.float32),
        ),
    )
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    ds = ds.with_options(options)

    with strategy.scope():
        multi_worker_model = build_and_compile_cnn_model()
        optimizer = multi_worker_model.optimizer
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(reduction="none")

    # MultiWorkerMirroredStrategy is synchronous: every worker must run the same number of steps.
    # Partitions are spread over the workers by Spark, so as in TFoS we stop at 90% of the
    # expected steps per worker and terminate the feed (Spark skips the remaining partitions).
    steps_per_epoch = args.num_rows / args.batch_size
    max_steps_per_worker = max(1, int(steps_per_epoch / ctx.num_workers * 0.9))

    # Keras 3's model.fit() does not run under MultiWorkerMirroredStrategy (keras-team/keras
    # issue 20585), so the step is the tf.distribute custom loop from the TF guide.
    @tf.function
    def train_step(iterator):
        def step_fn(images, labels):
            with tf.GradientTape() as tape:
                probs = multi_worker_model(images, training=True)
                per_example = loss_fn(labels, probs)
                loss = tf.nn.compute_average_loss(per_example)
            grads = tape.gradient(loss, multi_worker_model.trainable_variables)
            optimizer.apply_gradients(zip(grads, multi_worker_model.trainable_variables))
            return loss

        images, labels = next(iterator)
        per_replica = strategy.run(step_fn, args=(images, labels))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    iterator = iter(strategy.experimental_distribute_dataset(ds))
    for epoch in range(args.epochs):
        total = 0.0
        for _ in range(max_steps_per_worker):
            total += float(train_step(iterator))
        print(f"{ctx.job_name}:{ctx.task_index} epoch {epoch + 1}: loss {total / max_steps_per_worker:.4f}", flush=True)

    ctx.export_saved_model(multi_worker_model, args.export_dir)
    tf_feed.terminate()


if __name__ == "__main__":
    import argparse

    from pyspark.conf import SparkConf
    from pyspark.context import SparkContext

    from hydrofeed.spark import InputMode, TFCluster

    sc = SparkContext(conf=SparkConf().setAppName("mnist_keras_hydrofeed"))
    executors = sc._conf.get("spark.executor.instances")
    num_executors = int(executors) if executors is not None else 1

    parser = argparse.ArgumentParser()
    parser.add_argument("--batch_size", help="number of records per batch", type=int, default=64)
    parser.add_argument("--cluster_size", help="number of nodes in the cluster", type=int, default=num_executors)
    parser.add_argument("--epochs", help="number of epochs", type=int, default=3)
    parser.add_argument("--images_labels", help="path to MNIST images and labels in CSV (label,pixel0,...,pixel783)")
    parser.add_argument("--synthetic", help="use N random MNIST-shaped rows instead of --images_labels", type=int, default=0)
    parser.add_argument("--export_dir", help="path to export saved_model", default="mnist_export")
    parser.add_argument("--tensorboard", help="launch tensorboard process", action="store_true")
    args = parser.parse_args()
    print("args:", args)

    if args.synthetic:
        def synth(i):
            import numpy as np

            rng = np.random.default_rng(i)
            return (rng.integers(0, 256, 784, dtype=np.int64).astype(np.float32), int(i % 10))

        images_labels = sc.range(args.synthetic, numSlices=max(4, args.cluster_size * 2)).map(synth)
    else:
        def parse(ln):
            vec = [int(x) for x in ln.split(",")]
            return (vec[1:], vec[0])

        images_labels = sc.textFile(args.images_labels).map(parse)
    images_labels = images_labels.cache()
    args.num_rows = images_labels.count()

    cluster = TFCluster.run(sc, main_fun, args, args.cluster_size, num_ps=0, tensorboard=args.tensorboard,
                            input_mode=InputMode.SPARK, master_node="chief")
    cluster.train(images_labels, args.epochs)
    cluster.shutdown()
    sc.stop()
