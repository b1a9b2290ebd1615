"""hydrofeed.torch with the real torch: epochs larger than the ring, DataLoader, kept tensors.

Every feed here is about 5x its 4 MiB ring, so an adapter or a script that keeps ring memory
either gets its batches copied out of the ring or stops the feeder (a hang: the timeouts make
it a failure). Expected values come from TensorFlow's own TFRecord reader.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hydrofeed as hf
from helpers import ADAPTER_ROWS, check_mnist_epoch, run_python

torch = pytest.importorskip("torch")
import hydrofeed.torch as ht  # noqa: E402

pytestmark = pytest.mark.timeout(180)

ROWS = ADAPTER_ROWS
RING_MB = "4"
BATCH = 100


def as_numpy(t: Any) -> np.ndarray:
    """A tensor's values, copied (so later ring reuse cannot change what was seen)."""
    assert isinstance(t, torch.Tensor), type(t)
    return np.array(t.numpy(), copy=True)


def check_epoch(batches: list[Any], adapter_want: dict[str, np.ndarray]) -> None:
    check_mnist_epoch(batches, adapter_want, ROWS)


def seen(el: dict[str, Any]) -> dict[str, np.ndarray]:
    return {k: as_numpy(el[k]) for k in ("id", "image", "label")}


def test_one_epoch_every_row_once(serve: Any, adapter_mnist: Path, adapter_want: Any) -> None:
    s = serve("--input", str(adapter_mnist), "--ring-mb", RING_MB)
    feed = hf.DataFeed(str(s.sock), batch_size=BATCH, timeout=60)
    ds = ht.IterableDataset(feed)
    assert isinstance(ds, torch.utils.data.IterableDataset)
    got = []
    for el in ds:
        assert sorted(el) == ["id", "image", "label"]
        assert el["image"].dtype == torch.float32 and el["image"].shape == (BATCH, 784)
        assert el["id"].dtype == torch.int64 and el["id"].shape == (BATCH,)
        got.append(seen(el))
    check_epoch(got, adapter_want)
    # The adapter keeps nothing, so nothing had to be copied out of the ring.
    assert feed.metrics()["pressure_copies"] == 0, feed.metrics()
    code, err = s.wait()
    assert code == 0, err


def test_two_epochs_back_to_back(serve: Any, adapter_mnist: Path, adapter_want: Any) -> None:
    s = serve("--input", str(adapter_mnist), "--ring-mb", RING_MB, "--epochs", "2")
    feed = hf.DataFeed(str(s.sock), batch_size=BATCH, timeout=60)
    ds = ht.IterableDataset(feed)
    for _ in range(2):
        check_epoch([seen(el) for el in ds], adapter_want)
    # The feed ended: a third iteration is empty, not a rerun.
    assert list(ds) == []
    assert feed.metrics()["rows"] == 2 * ROWS
    code, err = s.wait()
    assert code == 0, err


def test_dataloader_without_workers(serve: Any, adapter_mnist: Path, adapter_want: Any) -> None:
    s = serve("--input", str(adapter_mnist), "--ring-mb", RING_MB, "--epochs", "2")
    feed = hf.DataFeed(str(s.sock), batch_size=BATCH, timeout=60)
    loader = torch.utils.data.DataLoader(ht.IterableDataset(feed), batch_size=None, num_workers=0)
    for _ in range(2):
        got = []
        for el in loader:
            assert isinstance(el["image"], torch.Tensor) and el["image"].shape == (BATCH, 784)
            got.append(seen(el))
        check_epoch(got, adapter_want)
    code, err = s.wait()
    assert code == 0, err


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_dataloader_workers_are_refused_clearly(
    serve: Any, adapter_mnist: Path, adapter_want: Any, context: str
) -> None:
    s = serve("--input", str(adapter_mnist), "--ring-mb", RING_MB)
    feed = hf.DataFeed(str(s.sock), batch_size=BATCH, timeout=60)
    ds = ht.IterableDataset(feed)
    loader = torch.utils.data.DataLoader(
        ds, batch_size=None, num_workers=2, multiprocessing_context=context
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's own advice on pickling errors
        with pytest.raises(Exception, match=r"num_workers=0") as exc:
            for _ in loader:
                pass
    assert "hydrofeed" in str(exc.value), exc.value
    # The refusal consumed nothing: the trainer's own iteration reads the whole epoch.
    check_epoch([seen(el) for el in ds], adapter_want)
    code, err = s.wait()
    assert code == 0, err


@pytest.mark.parametrize("every", [10, 1])
def test_kept_zero_copy_tensors_keep_their_values(
    serve: Any, adapter_mnist: Path, adapter_want: Any, every: int
) -> None:
    s = serve("--input", str(adapter_mnist), "--ring-mb", RING_MB)
    feed = hf.DataFeed(str(s.sock), batch_size=BATCH, timeout=60)
    ds = ht.IterableDataset(feed, copy=False)
    kept = [el for i, el in enumerate(ds) if i % every == 0]
    # Checked only now, after the feeder wrote the whole epoch (5x the ring) past them.
    if every == 1:
        check_epoch([{k: as_numpy(el[k]) for k in el} for el in kept], adapter_want)
        m = feed.metrics()
        # Every tensor views the ring and was kept: the ring could only go on by copying
        # held batches out of it.
        assert m["copied_batches"] > 0, m
    for el in kept:
        ids = as_numpy(el["id"])
        np.testing.assert_array_equal(as_numpy(el["image"]), adapter_want["image"][ids])
        np.testing.assert_array_equal(as_numpy(el["label"]).ravel(), adapter_want["label"].ravel()[ids])
    assert len(kept) == -(-ROWS // BATCH // every)
    code, err = s.wait()
    assert code == 0, err


@pytest.mark.parametrize("every", [10, 1])
def test_kept_tensors_keep_their_values(serve: Any, adapter_mnist: Path, adapter_want: Any, every: int) -> None:
    s = serve("--input", str(adapter_mnist), "--ring-mb", RING_MB)
    feed = hf.DataFeed(str(s.sock), batch_size=BATCH, timeout=60)
    kept = [el for i, el in enumerate(ht.IterableDataset(feed)) if i % every == 0]
    for el in kept:
        ids = as_numpy(el["id"])
        np.testing.assert_array_equal(as_numpy(el["image"]), adapter_want["image"][ids])
    if every == 1:
        check_epoch([{k: as_numpy(el[k]) for k in el} for el in kept], adapter_want)
    code, err = s.wait()
    assert code == 0, err


IN_PLACE = r"""
import numpy as np, torch
import hydrofeed as hf, hydrofeed.torch as ht
feed = hf.DataFeed({sock!r}, batch_size=100, timeout=60)
kept = list(ht.IterableDataset(feed))  # 5x the ring: held batches are copied out of it
before = [t["image"].clone() for t in kept]
for t in kept:
    t["image"].mul_(2.0)  # the usual in-place normalisation
for t, b in zip(kept, before):
    assert torch.equal(t["image"], b * 2.0)
print("ok", len(kept), feed.metrics()["copied_batches"])
"""


def test_in_place_ops_on_kept_tensors(serve: Any, adapter_mnist: Path) -> None:
    """torch has no read-only tensors: a tensor from the adapter is written in place as often
    as not, so it must not be a view of ring memory (read-only once copied out under
    pressure: SIGSEGV)."""
    s = serve("--input", str(adapter_mnist), "--ring-mb", RING_MB)
    r = run_python(IN_PLACE.format(sock=str(s.sock)), timeout=120)
    assert r.returncode == 0 and "ok 65" in r.stdout, (r.returncode, r.stdout, r.stderr[-3000:])
    code, err = s.wait()
    assert code == 0, err


@pytest.mark.parametrize("every", [10, 1])
def test_plain_from_dlpack_on_batches_kept(serve: Any, adapter_mnist: Path, adapter_want: Any, every: int) -> None:
    s = serve("--input", str(adapter_mnist), "--ring-mb", RING_MB)
    feed = hf.DataFeed(str(s.sock), timeout=60)
    kept = []
    with warnings.catch_warnings():
        # Keeping every batch pins the ring: the feed copies them out once and warns once.
        warnings.simplefilter("ignore", hf.RingPressureWarning)
        for i, b in enumerate(feed.batches(BATCH)):
            t = torch.from_dlpack(b["image"])
            assert t.data_ptr() == b["image"].ctypes.data  # a view: no copy
            if i % every == 0:
                kept.append((torch.from_dlpack(b["id"]), t))
            del b, t
    if every == 1:
        ids = [as_numpy(i) for i, _ in kept]
        check_epoch(
            [{"id": i, "image": as_numpy(t), "label": adapter_want["label"][i]} for i, (_, t) in zip(ids, kept)],
            adapter_want,
        )
        assert feed.metrics()["copied_batches"] > 0, feed.metrics()
    for i, t in kept:
        np.testing.assert_array_equal(as_numpy(t), adapter_want["image"][as_numpy(i)])
    assert len(kept) == -(-ROWS // BATCH // every)
    code, err = s.wait()
    assert code == 0, err


def test_ddp_gloo_two_ranks_under_launch(hf_bin: str, tmp_path: Path) -> None:
    """DistributedDataParallel (gloo) across 2 ranks of `hydrofeed launch`, configured by the
    launcher's RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT as torchrun users expect: equal
    steps, every row once per epoch, the same weights on both ranks, and a falling loss."""
    import json
    import os
    import subprocess
    import sys

    data, out = tmp_path / "data", tmp_path / "out"
    out.mkdir()
    subprocess.run([hf_bin, "gen", "--format", "parquet", "--rows", "4000", "--files", "4",
                    "--out", str(data)], check=True, capture_output=True)
    r = subprocess.run(
        [hf_bin, "launch", "--workers", "2", "--input", str(data), "--epochs", "3",
         "--batch-size", "50", "--seed", "1", "--",
         sys.executable, str(Path(__file__).parent / "ddp_trainer.py")],
        env={**os.environ, "OUT": str(out)}, capture_output=True, text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    ranks = [json.loads((out / f"rank-{k}.json").read_text()) for k in range(2)]
    assert [x["world"] for x in ranks] == [2, 2]
    assert ranks[0]["steps"] == ranks[1]["steps"] == 3 * 4000 // (2 * 50)
    ids = sorted(ranks[0]["ids"] + ranks[1]["ids"])
    assert ids == sorted(list(range(4000)) * 3)
    assert ranks[0]["checksum"] == pytest.approx(ranks[1]["checksum"], rel=1e-9)
    for x in ranks:
        assert x["last"] < 0.7 * x["first"], x
