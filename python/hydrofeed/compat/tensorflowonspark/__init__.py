"""``tensorflowonspark`` compatibility: change ``from tensorflowonspark import TFCluster, TFNode``
to ``from hydrofeed.compat.tensorflowonspark import TFCluster, TFNode`` and nothing else.

``TFCluster.run`` keeps TFoS's signature and defaults (``num_ps`` positional,
``input_mode=InputMode.TENSORFLOW``); the cluster runs on hydrofeed's barrier-mode nodes and
Arrow feeding. See docs/arch/spark.md for what differs.
"""

from hydrofeed.compat.tensorflowonspark import TFCluster, TFNode, compat

__all__ = ["TFCluster", "TFNode", "compat"]
