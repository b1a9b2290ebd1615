"""hydrofeed: feed training data from HDFS or local disk into TensorFlow, PyTorch and JAX."""

from hydrofeed._native import __version__

__all__ = ["__version__"]
