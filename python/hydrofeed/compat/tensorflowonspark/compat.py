"""TFoS ``compat`` module (TF version shims) for TF 2.x / Keras 3."""

from __future__ import annotations

import tempfile
from typing import Any


def export_saved_model(model: Any, export_dir: str, is_chief: bool = False) -> None:
    """The chief exports a SavedModel to ``export_dir``; other nodes to a throwaway directory
    (multi-worker strategies need every node to take part in the save)."""
    target = export_dir if is_chief else tempfile.mkdtemp(prefix="hydrofeed-worker-model-")
    try:
        if hasattr(model, "export"):
            model.export(target)
        else:
            import tensorflow as tf

            tf.saved_model.save(model, target)
    finally:
        if not is_chief:
            import shutil

            shutil.rmtree(target, ignore_errors=True)


def disable_auto_shard(options: Any) -> None:
    """Turns tf.data auto-sharding off (each node already gets its own data)."""
    import tensorflow as tf

    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF


def is_gpu_available() -> bool:
    """Whether TensorFlow sees a GPU."""
    import tensorflow as tf

    return len(tf.config.list_physical_devices("GPU")) > 0
