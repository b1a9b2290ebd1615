"""InputMode.TENSORFLOW: roles, TF_CONFIG, ps stopped at shutdown, gang restarts."""

from __future__ import annotations

import json
import os

import pytest

import spark_funs
from hydrofeed.spark import InputMode, TFCluster, TrainerFailedError

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]


def _data(tmp_path, parts):
    d = tmp_path / "data"
    d.mkdir()
    for i, n in enumerate(parts):
        (d / f"part-{i}").write_text("".join(f"{j}\n" for j in range(n)))
    out = tmp_path / "out"
    out.mkdir()
    return str(d), str(out)


def _load(out, rank):
    with open(os.path.join(out, f"rank{rank}.json")) as f:
        return json.load(f)


def test_chief_and_worker_read_their_own_data(sc, tmp_path):
    data, out = _data(tmp_path, [5, 7])
    cluster = TFCluster.run(sc, spark_funs.tf_mode, {"out": out, "data": data}, 2,
                            input_mode=InputMode.TENSORFLOW, master_node="chief")
    assert cluster.cluster_meta["cluster_template"] == {"chief": [0], "worker": [1]}
    cluster.shutdown()
    chief, worker = _load(out, 0), _load(out, 1)
    assert (chief["job"], chief["index"], chief["rows"]) == ("chief", 0, 5)
    assert (worker["job"], worker["index"], worker["rows"]) == ("worker", 0, 7)
    spec = {n["job_name"]: [f"{n['host']}:{n['port']}"] for n in cluster.cluster_info}
    assert chief["tf_config"] == {"cluster": spec, "task": {"type": "chief", "index": 0}, "environment": "cloud"}
    assert worker["tf_config"]["task"] == {"type": "worker", "index": 0}


def test_ps_node_is_stopped_by_shutdown(sc, tmp_path):
    data, out = _data(tmp_path, [0, 3])
    cluster = TFCluster.run(sc, spark_funs.tf_mode, {"out": out, "data": data}, 2, num_ps=1,
                            input_mode=InputMode.TENSORFLOW)
    assert cluster.cluster_meta["cluster_template"] == {"ps": [0], "worker": [1]}
    cluster.shutdown()  # the ps loops forever: shutdown must stop it, not wait for it
    assert _load(out, 1)["rows"] == 3
    assert not os.path.exists(os.path.join(out, "rank0.json"))


def test_failure_without_restarts_raises_naming_the_rank(sc, tmp_path):
    data, out = _data(tmp_path, [3, 3])
    cluster = TFCluster.run(sc, spark_funs.tf_mode, {"out": out, "data": data, "fail_first_attempt": 1}, 2,
                            input_mode=InputMode.TENSORFLOW, reservation_timeout=120)
    with pytest.raises(TrainerFailedError, match="first attempt fails on purpose") as ei:
        cluster.shutdown()
    assert ei.value.rank == 1 and ei.value.exit_code == 1


def test_gang_restarts_after_a_failure(sc, tmp_path):
    data, out = _data(tmp_path, [4, 6])
    cluster = TFCluster.run(sc, spark_funs.tf_mode, {"out": out, "data": data, "fail_first_attempt": 1}, 2,
                            input_mode=InputMode.TENSORFLOW, max_restarts=1)
    cluster.shutdown()
    w0, w1 = _load(out, 0), _load(out, 1)
    assert (w0["rows"], w1["rows"]) == (4, 6)
    assert w1["attempt"] == 1  # the failing rank ran twice: the whole gang was restarted
    assert sorted(p for p in os.listdir(out) if p.startswith("attempt-1")) == ["attempt-1-0", "attempt-1-1"]


def test_tensorboard_runs_on_the_chief_and_stops_with_the_cluster(sc, tmp_path):
    import time
    import urllib.error
    import urllib.request

    out = tmp_path / "out"
    out.mkdir()
    logdir = tmp_path / "tb"
    cluster = TFCluster.run(sc, spark_funs.record_ids, {"out": str(out)}, 2, input_mode=InputMode.SPARK,
                            master_node="chief", tensorboard=True, log_dir=str(logdir))
    url = cluster.tensorboard_url()
    chief = [n for n in cluster.cluster_info if n["job_name"] == "chief"][0]
    assert url == f"http://{chief['host']}:{chief['tb_port']}"
    assert url in (sc.getLocalProperty("spark.job.description") or "")
    body, deadline = None, time.monotonic() + 60
    while body is None and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/data/logdir", timeout=5) as r:
                body = json.loads(r.read())
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.5)
    assert body is not None, f"TensorBoard did not answer at {url}"
    assert body["logdir"] == str(logdir)
    cluster.shutdown()
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        urllib.request.urlopen(url + "/data/logdir", timeout=5)
