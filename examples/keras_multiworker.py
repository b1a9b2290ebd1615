"""Keras `model.fit` across workers under `hydrofeed launch`: one model, trained synchronously by
every worker with `MultiWorkerMirroredStrategy`, each worker fed its own rows by hydrofeed.

    hydrofeed launch --workers 2 --input DATA --epochs 3 --batch-size 64 -- \\
        python examples/keras_multiworker.py --x x --y y --classes 2

`launch` sets `TF_CONFIG` (the strategy's cluster), the feed socket and the coordinator; every
worker takes the same number of steps per epoch, so the synchronous all-reduce never waits on
a worker that ran out of data. Keras 3 does not run `fit` under this strategy: tf-keras does
(`pip install tf-keras`; this script sets `TF_USE_LEGACY_KERAS=1` before importing TensorFlow).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402

import hydrofeed as hf  # noqa: E402
import hydrofeed.tf  # noqa: E402,F401


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--x", default="image", help="feature column (a fixed-size list)")
    ap.add_argument("--y", default="label", help="label column (int)")
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--epochs", type=int, default=int(os.environ.get("HYDROFEED_EPOCHS", "1")),
                    help="as many as the feed has (hydrofeed launch --epochs)")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--out", help="directory: each rank writes rank-N.json (losses, accuracies, a weights digest)")
    args = ap.parse_args()

    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # TF_CONFIG from hydrofeed launch
    feed = hf.DataFeed()
    ds = hf.tf.distributed_dataset(strategy, feed, x=args.x, y=args.y)
    with strategy.scope():
        model = keras.Sequential([
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(args.classes, activation="softmax"),
        ])
        model.compile(
            optimizer=keras.optimizers.SGD(learning_rate=args.lr),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
        )
    hist = model.fit(ds, epochs=args.epochs, steps_per_epoch=ds.steps_per_epoch, verbose=2)
    weights = np.concatenate([w.ravel() for w in model.get_weights()])
    result = {
        "rank": int(os.environ.get("HYDROFEED_RANK", "0")),
        "workers": int(os.environ.get("HYDROFEED_NUM_WORKERS", "1")),
        "replicas": int(strategy.num_replicas_in_sync),
        "steps_per_epoch": ds.steps_per_epoch,
        "loss": [float(v) for v in hist.history["loss"]],
        "accuracy": [float(v) for v in hist.history["accuracy"]],
        "weights_sha256": hashlib.sha256(weights.astype(np.float32).tobytes()).hexdigest(),
        "rows": int(feed.metrics()["rows"]),
    }
    print(json.dumps(result), flush=True)
    if args.out:
        with open(os.path.join(args.out, f"rank-{result['rank']}.json"), "w") as f:
            json.dump(result, f)


if __name__ == "__main__":
    main()
