"""TensorFlowOnSpark's API on Spark barrier mode.

Most users want::

    from hydrofeed.spark import TFCluster, InputMode

    cluster = TFCluster.run(sc, main_fun, args, num_executors=2, input_mode=InputMode.SPARK)
    cluster.train(rdd_or_dataframe, num_epochs=2)       # Spark reads, rows travel as Arrow
    cluster.train_files("hdfs://nn/data", num_epochs=2)  # file mode: the nodes' feeders read
    cluster.shutdown()

``TFCluster`` is this package's ``cluster`` module re-exported under TFoS's name, so
``TFCluster.run(...)``, ``TFCluster.InputMode`` and the ``TFCluster.TFCluster`` class all work
as they do with ``from tensorflowonspark import TFCluster``.
"""

from hydrofeed.exceptions import FeedFilesError, TrainerFailedError
from hydrofeed.spark import cluster as TFCluster
from hydrofeed.spark.cluster import InputMode
from hydrofeed.spark.feed import SparkDataFeed
from hydrofeed.spark.node import NodeContext

__all__ = ["TFCluster", "InputMode", "TrainerFailedError", "FeedFilesError", "SparkDataFeed", "NodeContext"]
