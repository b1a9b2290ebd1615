"""hydrofeed.jax with the real JAX (CPU): epochs larger than the ring, kept arrays, ragged and
string columns, a jitted training step over the feed.

The big feeds here are about 5x their 4 MiB ring; on the CPU backend a jax.Array may view ring
memory, so an adapter or array that holds it wrongly either loses values or stops the feeder
(a hang: the timeouts make it a failure). Expected values come from TensorFlow's TFRecord
reader.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hydrofeed as hf
from helpers import ADAPTER_ROWS, check_mnist_epoch, tf_read_mnist

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import hydrofeed.jax as hj  # noqa: E402

pytestmark = pytest.mark.timeout(180)

ROWS = ADAPTER_ROWS
RING_MB = "4"
BATCH = 100


def as_numpy(a: Any) -> np.ndarray:
    """An array's values, copied (so later ring reuse cannot change what was seen)."""
    assert isinstance(a, jax.Array), type(a)
    return np.array(a, copy=True)


def seen(el: dict[str, Any]) -> dict[str, np.ndarray]:
    return {k: as_numpy(el[k]) for k in ("id", "image", "label")}


def check_epoch(batches: list[Any], adapter_want: dict[str, np.ndarray]) -> None:
    check_mnist_epoch(batches, adapter_want, ROWS)


def test_one_epoch_every_row_once(serve: Any, adapter_mnist: Path, adapter_want: Any) -> None:
    s = serve("--input", str(adapter_mnist), "--ring-mb", RING_MB)
    feed = hf.DataFeed(str(s.sock), timeout=60)
    got = []
    for el in hj.dataset(feed, batch_size=BATCH):
        assert sorted(el) == ["id", "image", "label"]
        assert el["image"].dtype == jnp.float32 and el["image"].shape == (BATCH, 784)
        assert el["id"].shape == (BATCH,)
        got.append(seen(el))
    check_epoch(got, adapter_want)
    # Neither the adapter nor JAX kept a batch once its arrays were gone.
    assert feed.metrics()["pressure_copies"] == 0, feed.metrics()
    code, err = s.wait()
    assert code == 0, err


def test_two_epochs_back_to_back(serve: Any, adapter_mnist: Path, adapter_want: Any) -> None:
    s = serve("--input", str(adapter_mnist), "--ring-mb", RING_MB, "--epochs", "2")
    feed = hf.DataFeed(str(s.sock), batch_size=BATCH, timeout=60)
    ds = hj.dataset(feed)
    for _ in range(2):
        check_epoch([seen(el) for el in ds], adapter_want)
    assert list(ds) == []  # the feed ended: no third epoch
    assert feed.metrics()["rows"] == 2 * ROWS
    code, err = s.wait()
    assert code == 0, err


def test_batches_reads_every_epoch(serve: Any, adapter_mnist: Path, adapter_want: Any) -> None:
    s = serve("--input", str(adapter_mnist), "--ring-mb", RING_MB, "--epochs", "2")
    feed = hf.DataFeed(str(s.sock), timeout=60)
    got = [seen(el) for el in hj.batches(feed, BATCH)]
    assert len(got) == 2 * ROWS // BATCH
    check_epoch(got[: ROWS // BATCH], adapter_want)
    check_epoch(got[ROWS // BATCH :], adapter_want)
    code, err = s.wait()
    assert code == 0, err


@pytest.mark.parametrize("every", [10, 1])
def test_kept_arrays_keep_their_values(serve: Any, adapter_mnist: Path, adapter_want: Any, every: int) -> None:
    s = serve("--input", str(adapter_mnist), "--ring-mb", RING_MB)
    feed = hf.DataFeed(str(s.sock), batch_size=BATCH, timeout=60)
    kept = [el for i, el in enumerate(hj.dataset(feed)) if i % every == 0]
    assert len(kept) == -(-ROWS // BATCH // every)
    # Checked only now, after the feeder wrote the whole epoch (5x the ring) past them.
    for el in kept:
        ids = as_numpy(el["id"])
        np.testing.assert_array_equal(as_numpy(el["image"]), adapter_want["image"][ids])
        np.testing.assert_array_equal(as_numpy(el["label"]).ravel(), adapter_want["label"].ravel()[ids])
    if every == 1:
        check_epoch([seen(el) for el in kept], adapter_want)
    code, err = s.wait()
    assert code == 0, err


def test_a_cpu_array_holds_its_ring_slot(serve: Any, adapter_mnist: Path, adapter_want: Any) -> None:
    """Where JAX wraps the ring's memory without a copy, the array keeps the slot: the feed
    copies it out of the ring rather than letting the feeder overwrite it."""
    s = serve("--input", str(adapter_mnist), "--ring-mb", RING_MB)
    feed = hf.DataFeed(str(s.sock), batch_size=BATCH, timeout=60)
    feed._feed.warn_pressure = False
    b = feed.next()
    assert b is not None
    first = hj.to_jax(b["image"])
    ids = b["id"].copy()
    if first.unsafe_buffer_pointer() != b["image"].ctypes.data:
        pytest.skip(f"JAX copies host arrays on {jax.default_backend()}")
    del b
    rows = BATCH
    for b in feed.batches():
        rows += b.num_rows
        assert b["image"].ctypes.data != first.unsafe_buffer_pointer()
    del b
    assert rows == ROWS
    np.testing.assert_array_equal(np.asarray(first), adapter_want["image"][ids])
    m = feed.metrics()
    assert m["copied_batches"] >= 1, m
    code, err = s.wait()
    assert code == 0, err


def test_donated_arrays_never_write_the_ring(serve: Any, adapter_mnist: Path, adapter_want: Any) -> None:
    s = serve("--input", str(adapter_mnist), "--ring-mb", RING_MB)
    feed = hf.DataFeed(str(s.sock), batch_size=BATCH, timeout=60)
    step = jax.jit(lambda x: x * 2.0 + 1.0, donate_argnums=0)
    n = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Some donated buffers were not usable"
        for b in feed.batches():
            before = b["image"].copy()
            y = step(hj.to_jax(b["image"]))
            np.testing.assert_array_equal(np.asarray(y), before * 2.0 + 1.0)
            np.testing.assert_array_equal(b["image"], before)
            np.testing.assert_array_equal(b["image"], adapter_want["image"][b["id"]])
            n += b.num_rows
    assert n == ROWS


def test_ragged_and_string_columns(serve: Any, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    v = [[float(i)] * (i % 4) for i in range(50)]
    names = [f"row{i}" * (i % 3) for i in range(50)]
    pq.write_table(
        pa.table(
            {
                "id": pa.array(range(50), pa.int64()),
                "v": pa.array(v, pa.list_(pa.float32())),
                "name": pa.array(names),
            }
        ),
        tmp_path / "r.parquet",
    )
    s = serve("--input", str(tmp_path / "r.parquet"))
    feed = hf.DataFeed(str(s.sock), batch_size=7, timeout=30)
    got_v: list[list[float]] = []
    got_names: list[str] = []
    for el in hj.dataset(feed):
        values, splits = el["v"]
        assert isinstance(values, jax.Array) and isinstance(splits, jax.Array)
        assert values.dtype == jnp.float32 and splits.dtype == jnp.int32
        vals, sp = np.asarray(values), np.asarray(splits)
        assert sp[0] == 0 and sp[-1] == len(vals) and len(sp) == len(el["id"]) + 1
        got_v += [vals[sp[i] : sp[i + 1]].tolist() for i in range(len(sp) - 1)]
        assert isinstance(el["name"], pa.Array)
        got_names += el["name"].to_pylist()
    assert got_v == v
    assert got_names == names


def _loss(params: Any, x: Any, y: Any) -> Any:
    logits = x @ params["w"] + params["b"]
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))


@jax.jit
def _step(params: Any, x: Any, y: Any) -> tuple[Any, Any]:
    loss, g = jax.value_and_grad(_loss)(params, x, y)
    return jax.tree_util.tree_map(lambda p, d: p - 0.5 * d, params, g), loss


def _params() -> Any:
    return {"w": jnp.zeros((784, 10), jnp.float32), "b": jnp.zeros((10,), jnp.float32)}


def test_jitted_training_over_the_feed(serve: Any, mnist_dir: Path) -> None:
    """Softmax regression, 3 epochs of 10 batches: the parameters match the same steps run on
    the reference reader's rows in the order the feed gave them."""
    s = serve("--input", str(mnist_dir), "--epochs", "3")
    feed = hf.DataFeed(str(s.sock), timeout=60)
    ds = hj.dataset(feed, batch_size=250)
    params = _params()
    order: list[np.ndarray] = []
    losses: list[list[float]] = []
    for _ in range(3):
        losses.append([])
        for el in ds:
            params, loss = _step(params, el["image"], el["label"])
            losses[-1].append(float(loss))
            order.append(np.array(el["id"]))
    assert [len(e) for e in losses] == [10, 10, 10]
    assert all(np.isfinite(e).all() for e in losses), losses
    assert np.mean(losses[2]) < np.mean(losses[0]), losses
    for e in range(3):
        np.testing.assert_array_equal(np.sort(np.concatenate(order[10 * e : 10 * e + 10])), np.arange(2500))

    ref = tf_read_mnist(mnist_dir)
    replay = _params()
    for ids in order:
        replay, _ = _step(replay, jnp.asarray(ref["image"][ids]), jnp.asarray(ref["label"].ravel()[ids]))
    for k in params:
        np.testing.assert_allclose(np.asarray(params[k]), np.asarray(replay[k]), rtol=1e-5, atol=1e-6)
    code, err = s.wait()
    assert code == 0, err


def test_missing_jax_is_a_clear_import_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jax", None)
    with pytest.raises(ImportError, match=r"hydrofeed.jax needs JAX: pip install"):
        hj.to_jax(np.zeros(3))


def test_global_batch_sharded_across_local_devices(serve: Any, hf_bin: str, tmp_path: Path) -> None:
    """global_batches: each batch one jax.Array laid out over 4 (host-platform) devices."""
    import os
    import subprocess

    from helpers import run_python

    data = tmp_path / "data"
    subprocess.run([hf_bin, "gen", "--format", "parquet", "--rows", "1000", "--out",
                    str(data)], check=True, capture_output=True)
    s = serve("--input", str(data))
    code = f"""
import os, numpy as np
import jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import hydrofeed as hf, hydrofeed.jax as hj
assert len(jax.devices()) == 4
sh = NamedSharding(Mesh(np.array(jax.devices()), ("data",)), P("data"))
ids = []
for b in hj.global_batches(hf.DataFeed({str(s.sock)!r}), sh, batch_size=100):
    assert b["image"].shape == (100, 784) and b["image"].sharding == sh
    assert sorted(x.data.shape[0] for x in b["image"].addressable_shards) == [25] * 4
    ids.extend(np.asarray(b["id"]).tolist())
assert sorted(ids) == list(range(1000)), len(ids)
print("OK")
"""
    r = run_python(code, timeout=120,
                   env={**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4"})
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-3000:]


def test_jax_distributed_under_launch(hf_bin: str, tmp_path: Path) -> None:
    """Two processes of `hydrofeed launch` join jax.distributed with the launcher's coordinates
    and build one global batch per step from both ranks' rows."""
    import json
    import os
    import subprocess

    data, out = tmp_path / "data", tmp_path / "out"
    out.mkdir()
    subprocess.run([hf_bin, "gen", "--format", "parquet", "--rows", "1000", "--files", "2",
                    "--out", str(data)], check=True, capture_output=True)
    r = subprocess.run(
        [hf_bin, "launch", "--workers", "2", "--input", str(data), "--batch-size", "50", "--",
         sys.executable, str(Path(__file__).parent / "jax_trainer.py")],
        env={**os.environ, "OUT": str(out)}, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    ranks = [json.loads((out / f"rank-{k}.json").read_text()) for k in range(2)]
    assert ranks[0]["steps"] == ranks[1]["steps"] == 10
    assert ranks[0]["sums"] == ranks[1]["sums"], "both processes see the global batch"
    assert sum(ranks[0]["sums"]) == sum(range(1000))
    assert sorted(ranks[0]["ids"] + ranks[1]["ids"]) == list(range(1000))
