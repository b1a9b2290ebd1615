"""map_fun bodies the Spark tests run on the executors (importable there via PYTHONPATH)."""

from __future__ import annotations

import json
import os
import signal


def _dump(args, ctx, payload):
    path = os.path.join(args["out"], f"rank{ctx.executor_id}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(payload, f)
    os.replace(path + ".tmp", path)


def results(out, n):
    """What ranks 0..n-1 dumped with :func:`_dump` (test side)."""
    res = {}
    for r in range(n):
        with open(os.path.join(out, f"rank{r}.json")) as f:
            res[r] = json.load(f)
    return res


def processes(match):
    """Pids of the processes whose argv (list of bytes) ``match`` accepts (test side)."""
    pids = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if match(argv):
                pids.append(int(pid))
        except (OSError, ValueError):
            pass
    return pids


def left_after(match, timeout=20.0):
    """Waits up to ``timeout`` s for the processes ``match`` selects to go; returns those left."""
    import time

    deadline = time.monotonic() + timeout
    while processes(match) and time.monotonic() < deadline:
        time.sleep(0.2)
    return processes(match)


def record_ids(args, ctx):
    """Consumes the feed TFoS-style and records every id it saw."""
    feed = ctx.get_data_feed(train_mode=True)
    ids, batches = [], 0
    while not feed.should_stop():
        batch = feed.next_batch(args.get("batch", 32))
        if len(batch) == 0:
            continue
        batches += 1
        ids.extend(int(row[0]) for row in batch)
        if args.get("step_sleep"):
            import time

            time.sleep(args["step_sleep"])  # a training step
        if args.get("fail_rank") == ctx.executor_id and batches >= 2:
            raise ValueError(f"boom on executor {ctx.executor_id}")
        if args.get("kill_rank") == ctx.executor_id and batches >= args.get("kill_after", 2):
            once = os.path.join(args["out"], "killed-once")
            if not args.get("kill_once") or not os.path.exists(once):
                open(once, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
    _dump(args, ctx, {"ids": ids, "batches": batches, "job": ctx.job_name, "index": ctx.task_index,
                      "tf_config": os.environ.get("TF_CONFIG"), "num_workers": ctx.num_workers,
                      "cuda": os.environ.get("CUDA_VISIBLE_DEVICES")})


def record_columns(args, ctx):
    """Consumes a DataFrame feed with input_mapping (dict of numpy columns)."""
    feed = ctx.get_data_feed(train_mode=True, input_mapping={"id": "x_id", "features": "x"})
    ids, shapes = [], set()
    while not feed.should_stop():
        cols = feed.next_batch(50)
        if len(cols["x_id"]) == 0:
            continue
        ids.extend(int(i) for i in cols["x_id"])
        first = cols["x"][0]
        shapes.add(f"{type(cols['x']).__name__} of {type(first).__name__}{list(first.shape)} {first.dtype}; ids {cols['x_id'].dtype}")
    _dump(args, ctx, {"ids": ids, "shapes": sorted(shapes)})


def double_it(args, ctx):
    """Inference: one result per row, in order."""
    feed = ctx.get_data_feed(train_mode=False)
    while not feed.should_stop():
        batch = feed.next_batch(args.get("batch", 7))
        if len(batch) == 0:
            continue
        feed.batch_results([(int(r[0]), int(r[0]) * 2) for r in batch])


def keras_train(args, ctx):
    """A TFoS-style Keras loop: feed.next_batch -> numpy -> train_on_batch."""
    import numpy as np
    import tensorflow as tf

    tf.random.set_seed(ctx.task_index)
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss="mse")
    feed = ctx.get_data_feed()
    losses = []
    while not feed.should_stop():
        batch = feed.next_batch(64)
        if len(batch) == 0:
            continue
        x = np.stack([r[0] for r in batch]).astype("float32")
        y = np.array([r[1] for r in batch], dtype="float32")
        losses.append(float(model.train_on_batch(x, y)))
    _dump(args, ctx, {"losses": losses})


def tf_mode(args, ctx):
    """InputMode.TENSORFLOW: reads its own data, reports its role and TF_CONFIG; ps waits."""
    import time

    if ctx.job_name == "ps":
        while True:  # a parameter server serves until the cluster stops it
            time.sleep(0.2)
    marker = os.path.join(args["out"], f"attempt-{ctx.executor_id}")
    attempt = len([p for p in os.listdir(args["out"]) if p.startswith(f"attempt-{ctx.executor_id}")])
    open(f"{marker}-{attempt}", "w").close()
    if args.get("fail_first_attempt") == ctx.executor_id and attempt == 0:
        raise RuntimeError("first attempt fails on purpose")
    with open(os.path.join(args["data"], f"part-{ctx.executor_id}")) as f:
        n = sum(1 for _ in f)
    _dump(args, ctx, {"job": ctx.job_name, "index": ctx.task_index, "rows": n,
                      "tf_config": json.loads(os.environ["TF_CONFIG"]), "attempt": attempt})


def tfos_terminate_early(args, ctx):
    """TFoS's Keras example shape: DataFeed(ctx.mgr, False) for training, terminate() when done."""
    from hydrofeed.compat.tensorflowonspark import TFNode

    tf_feed = TFNode.DataFeed(ctx.mgr, False)
    seen = 0
    while not tf_feed.should_stop() and seen < args["stop_after"]:
        batch = tf_feed.next_batch(1)
        seen += len(batch)
    tf_feed.terminate()  # Spark still schedules the other partitions: they must be skipped
    try:
        ctx.start_cluster_server()
        tf1 = "no error"
    except NotImplementedError as e:
        tf1 = str(e)
    _dump(args, ctx, {"seen": seen, "tf1": tf1, "abs": TFNode.hdfs_path(ctx, "model"),
                      "abs_root": ctx.absolute_path("/data")})


def tfos_inference(args, ctx):
    from hydrofeed.compat.tensorflowonspark import TFNode

    tf_feed = TFNode.DataFeed(ctx.mgr, False)
    while not tf_feed.should_stop():
        batch = tf_feed.next_batch(args["batch"])
        if len(batch) > 0:
            tf_feed.batch_results([f"{r[0]}:{ctx.executor_id}" for r in batch])


def tfos_rows(args, ctx):
    """TFoS's feeding loop as its examples write it: ``ctx.get_data_feed(train_mode=True)``,
    ``next_batch`` until ``should_stop()``, and rows used as the Python objects they were fed
    as (``row[1] == [...]`` on a list column)."""
    feed = ctx.get_data_feed(train_mode=True)
    ids, bad = [], []
    while not feed.should_stop():
        for row in feed.next_batch(args["batch"]):
            if not (isinstance(row[0], int) and isinstance(row[1], list) and row[1] == [0.0, 0.5, float(row[0])]):
                bad.append(repr(row)[:200])
            ids.append(row[0])
    _dump(args, ctx, {"ids": ids, "bad": bad[:5]})


def record_rows(args, ctx):
    """Consumes the feed TFoS-style and keeps every row as it came, pickled to
    ``rows<executor>.pkl`` (the test compares them with the rows fed, types included)."""
    import pickle

    feed = ctx.get_data_feed(train_mode=True)
    rows = []
    while not feed.should_stop():
        rows.extend(feed.next_batch(args.get("batch", 32)))
    with open(os.path.join(args["out"], f"rows{ctx.executor_id}.pkl"), "wb") as f:
        pickle.dump(rows, f)


class Unloadable:
    """Pickles fine; unpickling it raises (a row the trainer cannot load)."""

    def __reduce__(self):
        return (_refuse_to_load, ("row 7's payload",))


def _refuse_to_load(what):
    raise ValueError(f"{what} cannot be loaded here")
