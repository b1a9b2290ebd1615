"""The Spark API's argument checks: ``ArgumentError`` (a ``ValueError``, and an ``AssertionError``
as TensorFlowOnSpark's own ``assert`` checks), raised before anything starts, also under
``python -O``; no Spark needed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hydrofeed.exceptions import ArgumentError
from hydrofeed.spark import InputMode, TFCluster
from hydrofeed.spark.files import FileFeedOptions, order_args, steps_per_epoch

HERE = os.path.dirname(os.path.abspath(__file__))
PYROOT = os.path.abspath(os.path.join(HERE, "..", "..", "python"))


def _cluster(input_mode: int) -> TFCluster.TFCluster:
    c = TFCluster.TFCluster()  # not started: a check that let a call through would fail otherwise
    c.input_mode = input_mode
    return c


def test_feeding_needs_spark_input_mode_a_known_queue_and_epochs() -> None:
    tf_mode = _cluster(InputMode.TENSORFLOW)
    with pytest.raises(ArgumentError, match=r"^TFCluster.train\(\) requires InputMode.SPARK$"):
        tf_mode.train(None)
    with pytest.raises(ArgumentError, match=r"^TFCluster.inference\(\) requires InputMode.SPARK$"):
        tf_mode.inference(None)
    with pytest.raises(ArgumentError, match=r"requires InputMode.SPARK \(nodes with a data feed\)"):
        tf_mode.train_files("/data")
    spark_mode = _cluster(InputMode.SPARK)
    with pytest.raises(ArgumentError, match="^Unknown queue: other$"):
        spark_mode.train(None, qname="other")
    with pytest.raises(ArgumentError, match="^Unknown queue: other$"):
        spark_mode.inference(None, qname="other")
    with pytest.raises(ArgumentError, match="^num_epochs cannot be negative$"):
        spark_mode.train(None, num_epochs=-1)


def test_argument_error_is_what_tfos_and_earlier_versions_raised() -> None:
    # TFoS asserts (AssertionError); hydrofeed's run() and train_files() raised ValueError.
    with pytest.raises(AssertionError):
        _cluster(InputMode.TENSORFLOW).train(None)
    with pytest.raises(ValueError):
        _cluster(InputMode.SPARK).train_files("/data", batch_size=0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"format": "csv"}, "format must be one of"),
        ({"remainder": "keep"}, "remainder must be one of"),
        ({"batch_size": 0}, "batch_size must be at least 1"),
        ({"num_epochs": -1}, "num_epochs cannot be negative"),
        ({"order": "random"}, "order must be 'fixed' or 'dynamic'"),
        ({"shuffle_buffer": -1}, "shuffle_buffer cannot be negative"),
        ({"filter": " "}, "filter must be a SQL predicate"),
    ],
)
def test_train_files_checks_its_arguments_first(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ArgumentError, match=message):
        _cluster(InputMode.SPARK).train_files("/data", **kwargs)  # type: ignore[arg-type]


def test_file_feed_options_are_made_plain() -> None:
    o = FileFeedOptions.of(
        "/data", format=None, columns="a, b,,", num_epochs=0, shuffle=False, seed=None, batch_size=8,
        remainder="pad", feed_timeout=5, allow_changed_input=False, skip_errors=False, memory_mb=64,
        decode_threads=0, schema=None, shuffle_buffer=100, cycle_length=None, order=None, tls=True, snapshot=3,
    )  # fmt: skip
    assert o.columns == ["a", "b"] and o.epochs == 10 and o.seed == 0 and o.snapshot == "3"
    assert o.order == ["--shuffle-buffer", "100"]
    assert o.feeder_fields()["batch_size"] == 8
    with pytest.raises(ArgumentError):
        steps_per_epoch(100, 2, 10, remainder="keep")
    with pytest.raises(ArgumentError):
        order_args("random", 0, None)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_executors": 2, "num_ps": 3}, "requires 3 nodes, but only 2 executors available"),
        ({"num_executors": 2, "num_ps": 2}, "requires at least one worker or master/chief node"),
        ({"num_executors": 2, "eval_node": True}, "evaluator nodes is only supported in InputMode.TENSORFLOW"),
    ],
)
def test_run_checks_the_node_counts_before_touching_spark(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ArgumentError, match=message):
        TFCluster.run(None, print, None, **kwargs)  # type: ignore[arg-type]


def test_checks_stay_under_python_O() -> None:
    code = (
        "from hydrofeed.exceptions import ArgumentError\n"
        "from hydrofeed.spark import InputMode, TFCluster\n"
        "c = TFCluster.TFCluster()\n"
        "try:\n"
        "    c.train(None)\n"
        "except ArgumentError as e:\n"
        "    print('raised:', e)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([PYROOT, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "raised: TFCluster.train() requires InputMode.SPARK" in out.stdout


def test_no_state_is_shared_between_clusters() -> None:
    a, b = TFCluster.TFCluster(), TFCluster.TFCluster()
    a.cluster_info.append({"executor_id": 0})
    a.cluster_meta["id"] = "a"
    a.queues.append("extra")
    assert b.cluster_info == [] and b.cluster_meta == {} and b.queues == ["input", "output", "error"]
