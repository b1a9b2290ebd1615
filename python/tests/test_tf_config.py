"""TF_CONFIG is built in one place (hydrofeed-coord's cluster.rs): `hydrofeed launch` through the
reservation, the Spark integration through `hydrofeed._native.tf_config`."""

from __future__ import annotations

import json

import pytest

from hydrofeed import _native


def test_tf_config_is_the_cluster_and_the_task() -> None:
    spec = {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"], "ps": ["h3:2222"]}
    got = json.loads(_native.tf_config(json.dumps(spec), "worker", 1))
    assert got == {"cluster": spec, "task": {"type": "worker", "index": 1}}


def test_spark_sets_the_environment_as_tensorflowonspark_does() -> None:
    spec = {"worker": ["h1:2222"]}
    got = json.loads(_native.tf_config(json.dumps(spec), "worker", 0, "cloud"))
    assert got == {"cluster": spec, "task": {"type": "worker", "index": 0}, "environment": "cloud"}


def test_a_malformed_cluster_spec_is_a_value_error_naming_the_shape() -> None:
    with pytest.raises(ValueError, match="host:port"):
        _native.tf_config(json.dumps({"worker": "h1:2222"}), "worker", 0)
