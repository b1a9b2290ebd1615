"""The GPU staging path (``batches(device="cuda:N")``, ``hydrofeed.gpu``, ``launch --gpus``,
``bench gpu``).

Without a CUDA device: every entry point raises ``NoCudaDeviceError`` / says "no CUDA device",
and the tests that need a GPU skip with the driver's reason. With one (and torch built with
CUDA): device batches against pyarrow's reading of the same Parquet files, zero-copy through
DLPack, ring slots released at copy completion, buffer reuse ordered after the consumer's
stream, JAX, a fork child refused, ``launch --gpus auto``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hydrofeed as hf
from hydrofeed import gpu

OK, WHY = gpu.available()
needs_gpu = pytest.mark.skipif(not OK, reason=f"needs a CUDA device: {WHY}")


def _torch_cuda() -> Any:
    try:
        import torch
    except ImportError:
        pytest.skip("needs torch")
    if not torch.cuda.is_available():
        pytest.skip("needs torch built with CUDA (this torch sees no GPU)")
    return torch


@pytest.fixture(scope="module")
def pq_mnist(tmp_path_factory: pytest.TempPathFactory, hf_bin: str) -> Path:
    """6000 MNIST-shaped rows (image, label, id) in 3 Parquet files, by `hydrofeed gen`."""
    out = tmp_path_factory.mktemp("gpu_mnist")
    subprocess.run([hf_bin, "gen", "--format", "parquet", "--rows", "6000", "--files", "3",
                    "--out", str(out)], check=True, capture_output=True)
    return out


def _reference(d: Path) -> dict[str, np.ndarray]:
    """The files as pyarrow reads them, sorted by id."""
    import pyarrow.parquet as pq

    t = pq.read_table(sorted(str(p) for p in d.iterdir() if p.suffix == ".parquet"))
    ids = t.column("id").to_numpy()
    order = np.argsort(ids)
    img = t.column("image").combine_chunks().flatten().to_numpy().reshape(-1, 784)
    return {"id": ids[order], "image": img[order], "label": t.column("label").to_numpy()[order]}


def test_cuda_ordinals() -> None:
    assert gpu.cuda_ordinal("cuda") == 0
    assert gpu.cuda_ordinal("cuda:3") == 3
    assert gpu.cuda_ordinal(2) == 2
    for bad in ("cpu", "cuda:x", -1, True, object()):
        with pytest.raises(ValueError):
            gpu.cuda_ordinal(bad)


@pytest.mark.skipif(OK, reason="this host has a CUDA device")
def test_without_a_gpu_every_entry_point_says_no_cuda_device(
    serve: Any, pq_mnist: Path, hf_bin: str, tmp_path: Path
) -> None:
    s = serve("--input", str(pq_mnist))
    feed = hf.DataFeed(str(s.sock), batch_size=100)
    with pytest.raises(hf.NoCudaDeviceError, match="^no CUDA device: "):
        next(feed.batches(device="cuda:0"))
    # The CPU path of the same feed is unchanged.
    assert sum(len(b) for b in feed.batches()) == 6000
    with pytest.raises(hf.NoCudaDeviceError, match="no CUDA device"):
        gpu.h2d_bandwidth(1 << 20)
    with pytest.raises(hf.NoCudaDeviceError):
        gpu.gpus()
    r = subprocess.run([hf_bin, "bench", "gpu", "--python", sys.executable, "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["skipped"].startswith("no CUDA device"), out
    r = subprocess.run([hf_bin, "launch", "--gpus", "auto", "--input", str(pq_mnist), "--",
                        sys.executable, "-c", "pass"], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "--gpus auto: no CUDA device" in r.stderr, r.stderr


@needs_gpu
def test_device_batches_are_the_rows_pyarrow_reads(serve: Any, pq_mnist: Path) -> None:
    torch = _torch_cuda()
    s = serve("--input", str(pq_mnist), "--ring-mb", "4")
    feed = hf.DataFeed(str(s.sock), batch_size=250)
    got: dict[str, list[Any]] = {"id": [], "image": [], "label": []}
    for b in feed.batches(device="cuda:0"):
        assert isinstance(b, gpu.DeviceBatch) and len(b) <= 250
        for k in got:
            col = b[k]
            assert isinstance(col, gpu.CudaTensor) and col.device == "cuda:0"
            t = torch.from_dlpack(col)
            assert t.is_cuda and t.data_ptr() == col.data_ptr, "DLPack made a copy"
            got[k].append(t.cpu().numpy())
    want = _reference(pq_mnist)
    ids = np.concatenate(got["id"])
    order = np.argsort(ids)
    np.testing.assert_array_equal(ids[order], want["id"])
    np.testing.assert_array_equal(np.concatenate(got["image"])[order], want["image"])
    np.testing.assert_array_equal(np.concatenate(got["label"])[order], want["label"])
    m = feed.metrics()["gpu"]
    assert m["batches"] == 24 and m["bytes"] > 6000 * 784 * 4
    assert m["path"] in ("registered", "bounce"), m
    assert 0 <= m["input_wait_fraction"] <= 1 and 0 <= m["utilization"] <= 100, m
    if m["path"] == "registered":
        assert m["registered_copies"] == 24, m
    else:
        assert m["refused"], m  # the driver's reason is kept


@needs_gpu
def test_the_bounce_path_gives_the_same_rows(serve: Any, pq_mnist: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """HYDROFEED_CUDA_REGISTER=0: the path taken where the driver refuses to register the ring
    (each batch through a pinned bounce buffer), on a real GPU."""
    torch = _torch_cuda()
    monkeypatch.setenv("HYDROFEED_CUDA_REGISTER", "0")
    s = serve("--input", str(pq_mnist), "--ring-mb", "4")
    feed = hf.DataFeed(str(s.sock), batch_size=500)
    ids, imgs = [], []
    for b in feed.batches(device="cuda:0"):
        ids.append(torch.from_dlpack(b["id"]).cpu().numpy())
        imgs.append(torch.from_dlpack(b["image"]).cpu().numpy())
    m = feed.metrics()["gpu"]
    assert m["path"] == "bounce" and m["bounced_copies"] == 12, m
    want = _reference(pq_mnist)
    order = np.argsort(np.concatenate(ids))
    np.testing.assert_array_equal(np.concatenate(ids)[order], want["id"])
    np.testing.assert_array_equal(np.concatenate(imgs)[order], want["image"])


@needs_gpu
def test_kept_device_batches_never_hold_the_ring(serve: Any, pq_mnist: Path) -> None:
    """Every batch of an epoch 4.5x the ring is kept: the ring slots go back as the copies
    complete, so the feed neither hangs nor copies held batches out of the ring."""
    torch = _torch_cuda()
    s = serve("--input", str(pq_mnist), "--ring-mb", "4")
    feed = hf.DataFeed(str(s.sock), batch_size=500, timeout=60)
    kept = [(torch.from_dlpack(b["id"]), torch.from_dlpack(b["image"]))
            for b in feed.batches(device="cuda:0")]
    m = feed.metrics()
    assert m["pressure_copies"] == 0, m
    ids = torch.cat([i for i, _ in kept]).cpu().numpy()
    assert sorted(ids.tolist()) == list(range(6000))
    want = _reference(pq_mnist)
    img = torch.cat([x for _, x in kept]).cpu().numpy()
    np.testing.assert_array_equal(img[np.argsort(ids)], want["image"])


@needs_gpu
def test_a_reused_buffer_waits_for_the_stream_that_read_it(serve: Any, pq_mnist: Path) -> None:
    """A kernel queued on a side stream still reads batch k when its tensors are dropped and
    the pool hands batch k's buffer to later batches: its result is batch k's."""
    torch = _torch_cuda()
    s = serve("--input", str(pq_mnist))
    feed = hf.DataFeed(str(s.sock), batch_size=1000)
    it = feed.batches(device="cuda:0")
    side = torch.cuda.Stream()
    b = next(it)
    with torch.cuda.stream(side):
        x = torch.from_dlpack(b["image"])
        want = x.double().sum().item()  # synchronous: the reference
        big = torch.randn(4096, 4096, device="cuda")
        for _ in range(40):  # keep the side stream busy well past the next copies
            big = big @ big / 64
        late = x.double().sum()
    del x, b
    rest = [torch.from_dlpack(d["image"]).sum().item() for d in it]
    assert len(rest) == 5
    side.synchronize()
    assert late.item() == want


@needs_gpu
def test_two_threads_share_a_device_feed(serve: Any, pq_mnist: Path) -> None:
    """Two threads calling next() on one device feed while a third reads its metrics: no
    deadlock (a next() waiting for the other never holds the GIL), every row once."""
    import threading
    import time

    torch = _torch_cuda()
    s = serve("--input", str(pq_mnist))
    feed = hf.DataFeed(str(s.sock), batch_size=100)
    dev = feed.device_feed("cuda:0")
    got: list[list[Any]] = [[], []]

    def reader(i: int) -> None:
        while (b := dev.next()) is not None:
            got[i].append(torch.from_dlpack(b["id"]).cpu().numpy())

    ts = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(2)]
    for t in ts:
        t.start()
    deadline = time.monotonic() + 60
    while any(t.is_alive() for t in ts) and time.monotonic() < deadline:
        assert dev.metrics()["device"] == "cuda:0"
        time.sleep(0.001)
    assert not any(t.is_alive() for t in ts), "next() from two threads deadlocked"
    ids = np.concatenate([x for g in got for x in g])
    assert sorted(ids.tolist()) == list(range(6000))


@needs_gpu
def test_jax_takes_device_batches_without_device_put(serve: Any, pq_mnist: Path) -> None:
    try:
        import jax
    except ImportError:
        pytest.skip("needs jax")
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        pytest.skip("needs a jax with CUDA (this jax sees no GPU)")
    import hydrofeed.jax as hj

    s = serve("--input", str(pq_mnist))
    feed = hf.DataFeed(str(s.sock), batch_size=1000)
    ids = []
    for b in hj.batches(feed, device=gpus[0]):
        assert b["image"].devices() == {gpus[0]}
        assert b["image"].shape[1] == 784
        ids.append(np.asarray(b["id"]))
    assert sorted(np.concatenate(ids).tolist()) == list(range(6000))


@needs_gpu
def test_a_fork_child_cannot_use_the_parents_device_feed(serve: Any, pq_mnist: Path) -> None:
    s = serve("--input", str(pq_mnist))
    feed = hf.DataFeed(str(s.sock), batch_size=1000)
    dev = feed.device_feed("cuda:0")
    assert dev.next() is not None
    pid = os.fork()
    if pid == 0:  # the child: refused, and the parent's feed untouched
        try:
            dev.next()
            os._exit(1)
        except hf.HydrofeedError as e:
            os._exit(0 if "fork()" in str(e) else 2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert sum(len(b) for b in iter(dev.next, None)) == 5000


@needs_gpu
def test_launch_gpus_auto_gives_each_trainer_its_gpu(pq_mnist: Path, hf_bin: str,
                                                     tmp_path: Path) -> None:
    n = len(gpu.gpus())
    trainer = tmp_path / "t.py"
    trainer.write_text(
        "import os, hydrofeed as hf\n"
        "f = hf.DataFeed()\n"
        "rows = sum(len(b) for b in f.batches(device='cuda'))\n"
        "print('RANK', os.environ['HYDROFEED_RANK'], os.environ['CUDA_VISIBLE_DEVICES'], rows,"
        " f.metrics()['gpu']['path'], flush=True)\n"
    )
    r = subprocess.run([hf_bin, "launch", "--gpus", "auto", "--input", str(pq_mnist),
                        "--batch-size", "500", "--", sys.executable, str(trainer)],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [ln.split() for ln in r.stdout.splitlines() if "RANK" in ln]
    assert sorted(ln[-4] for ln in lines) == [str(i) for i in range(n)], r.stdout
    assert sum(int(ln[-2]) for ln in lines) == 6000, r.stdout
    assert "rank 0 -> GPU 0" in r.stderr


@needs_gpu
def test_bench_gpu_reports_the_three_h2d_paths(hf_bin: str) -> None:
    _torch_cuda()
    r = subprocess.run([hf_bin, "bench", "gpu", "--python", sys.executable, "--json",
                        "--rows", "20000", "--repeat", "1", "--h2d-mib", "16",
                        "--h2d-iters", "4"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout)
    g = out["h2d_gb_per_s"]
    assert all(g[k] > 0 for k in ("ring", "pinned", "pageable", "torch_pageable")), g
    assert out["same_checksum"], out["results"]
    assert set(out["ratios"]) >= {"ring_h2d_vs_pinned", "ring_h2d_vs_pageable",
                                  "feed_vs_dataloader_pinned"}


@needs_gpu
def test_gpu_utilization_reaches_prometheus_and_tensorboard(pq_mnist: Path, hf_bin: str,
                                                            tmp_path: Path) -> None:
    """A trainer taking device batches under `launch`: NVML's utilisation of its GPU travels
    with its acks to the feeder (`hydrofeed_feed_gpu_utilization{rank="0"}`, percent in
    [0, 100]) and reaches the chief's TensorBoard scalars (`feed/gpu_utilization`)."""
    from test_launch_metrics import events, free_port, samples, scrapes

    trainer = tmp_path / "t.py"
    trainer.write_text(
        "import time, hydrofeed as hf\n"
        "f = hf.DataFeed()\n"
        "for b in f.batches(device='cuda'):\n"
        "    time.sleep(0.02)\n"
    )
    tb, port = tmp_path / "tb", free_port()
    p = subprocess.Popen(
        [hf_bin, "launch", "--workers", "1", "--input", str(pq_mnist), "--batch-size", "100",
         "--epochs", "3", "--feeder-metrics", f"127.0.0.1:{port}", "--tensorboard", str(tb),
         "--", sys.executable, str(trainer)],
        env=dict(os.environ, HYDROFEED_METRICS_EVERY="0.3"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    seen: list[float] = []
    try:
        for text in scrapes(p, port, timeout=240):
            u = samples(text, "hydrofeed_feed_gpu_utilization").get("0")
            if u is not None:
                seen.append(u)
        err = p.communicate(timeout=60)[1]
    finally:
        p.kill()
    assert p.returncode == 0, err[-3000:]
    assert seen, "no scrape carried the GPU's utilisation:\n" + err[-3000:]
    assert all(0.0 <= v <= 100.0 for v in seen), seen
    files = sorted((tb / "hydrofeed").glob("events.out.tfevents.*"))
    assert len(files) == 1, files
    tags = [v.tag for ev in events(files[0]) for v in ev.summary.value]
    assert "feed/gpu_utilization" in tags, sorted(set(tags))
