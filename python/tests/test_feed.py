"""DataFeed against a real `hydrofeed serve` process, through the shared-memory ring."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import hydrofeed as hf
from helpers import DLPackCapsule, run_python, shm_listing, tf_read_mnist, wait_for

pytestmark = pytest.mark.timeout(120)


def test_every_row_once_in_order(serve: Any, mnist_dir: Path) -> None:
    want = tf_read_mnist(mnist_dir)
    s = serve("--input", str(mnist_dir), "--epochs", "2")
    feed = hf.DataFeed(str(s.sock), batch_size=300)
    got: dict[int, list[Any]] = {0: [], 1: []}
    sizes = []
    for b in feed.batches():
        assert isinstance(b["image"], np.ndarray)
        assert b["image"].shape == (b.num_rows, 784) and b["image"].dtype == np.float32
        got[b.epoch].append((b["id"].copy(), b["image"].copy(), b["label"].copy()))
        sizes.append(b.num_rows)
    # Rebatched to the size asked for across file boundaries; the last of each epoch is short.
    assert sizes == ([300] * 8 + [100]) * 2
    for epoch in (0, 1):
        ids = np.concatenate([g[0] for g in got[epoch]])
        np.testing.assert_array_equal(ids, want["id"].ravel())
        np.testing.assert_array_equal(np.concatenate([g[1] for g in got[epoch]]), want["image"])
        np.testing.assert_array_equal(
            np.concatenate([g[2] for g in got[epoch]]), want["label"].ravel()
        )
    st = feed.state()
    assert st["rows"] == 5000 and st["epochs_done"] == 2 and st["done"]
    m = feed.metrics()
    assert m["batches"] == 18 and m["bytes"] > 5000 * 784 * 4
    code, err = s.wait()
    assert code == 0, err


def test_tfos_next_batch_should_stop(serve: Any, mnist_dir: Path) -> None:
    s = serve("--input", str(mnist_dir), "--columns", "id,label")
    feed = hf.DataFeed(str(s.sock), batch_size=256)
    rows: list[tuple[Any, ...]] = []
    while not feed.should_stop():
        batch = feed.next_batch(100)
        rows.extend(batch)
        assert len(batch) <= 100
    assert len(rows) == 2500
    assert [r[0] for r in rows] == list(range(2500))
    feed.batch_results([1, 2, 3])
    assert feed.results == [1, 2, 3]
    feed.terminate()


def test_tfos_input_mapping(serve: Any, mnist_dir: Path) -> None:
    s = serve("--input", str(mnist_dir))
    feed = hf.DataFeed(str(s.sock), batch_size=100, input_mapping={"image": "x", "label": "y"})
    d = feed.next_batch(150)
    assert set(d) == {"x", "y"}
    assert d["x"].shape == (150, 784) and d["y"].shape == (150,)
    feed.terminate()


def _write_ragged(path: Path, n: int) -> list[list[int]]:
    import tensorflow as tf

    rows = [[i * 10 + k for k in range(i % 4)] for i in range(n)]
    with tf.io.TFRecordWriter(str(path)) as w:
        for i, r in enumerate(rows):
            ex = tf.train.Example(
                features=tf.train.Features(
                    feature={
                        "ids": tf.train.Feature(int64_list=tf.train.Int64List(value=r)),
                        "name": tf.train.Feature(
                            bytes_list=tf.train.BytesList(value=[f"row{i}".encode()])
                        ),
                        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[i, -i])),
                    }
                )
            )
            w.write(ex.SerializeToString())
    return rows


def test_dense_ragged_and_strings(serve: Any, tmp_path: Path) -> None:
    rows = _write_ragged(tmp_path / "r.tfrecord", 50)
    s = serve("--input", str(tmp_path / "r.tfrecord"))
    feed = hf.DataFeed(str(s.sock), batch_size=20)
    seen = 0
    for b in feed.batches():
        rag = b["ids"]
        assert isinstance(rag, hf.Ragged)
        values, splits = rag
        assert splits[0] == 0 and len(splits) == b.num_rows + 1
        for j in range(b.num_rows):
            assert list(values[splits[j] : splits[j + 1]]) == rows[seen + j]
        names = b["name"]
        assert isinstance(names, pa.Array)
        assert names.to_pylist()[0] in (f"row{seen}", f"row{seen}".encode())
        x = b["x"]
        assert x.shape == (b.num_rows, 2)
        assert x[0, 0] == seen
        seen += b.num_rows
    assert seen == 50


def test_arrays_view_ring_memory(serve: Any, mnist_dir: Path) -> None:
    s = serve("--input", str(mnist_dir))
    feed = hf.DataFeed(str(s.sock), batch_size=500)
    first = feed.next()
    assert first is not None
    img = first["image"]
    owner = img.base
    # The chain: ndarray -> BufferOwner (holds the Arrow buffer, which holds the ring slot).
    assert type(owner).__name__ == "BufferOwner"
    addr = img.__array_interface__["data"][0]
    assert addr == owner.address
    assert not img.flags.writeable and not img.flags.owndata
    copy = img.copy()
    assert copy.__array_interface__["data"][0] != addr
    assert addr % 64 == 0
    # Not in the heap of this process: inside the ring mapping (a memfd).
    maps = Path("/proc/self/maps").read_text().splitlines()
    region = [
        ln for ln in maps
        if int(ln.split()[0].split("-")[0], 16) <= addr < int(ln.split()[0].split("-")[1], 16)
    ]
    assert region and "memfd" in region[0], region
    # Still valid and unchanged after later batches went through the ring.
    rest = list(feed.batches())
    assert len(rest) == 4
    del rest
    gc.collect()
    np.testing.assert_array_equal(img, copy)
    # The Arrow view is the same memory.
    rb = first.to_arrow()
    buf = rb.column(1).values.buffers()[1]
    assert buf.address == addr


def test_released_arrays_free_ring_space(serve: Any, mnist_dir: Path) -> None:
    # A 4 MiB ring holds about ten 100-row batches (314 KB each).
    s = serve("--input", str(mnist_dir), "--ring-mb", "4")
    feed = hf.DataFeed(str(s.sock), batch_size=100, timeout=30, on_ring_pressure="raise")
    held = []
    with pytest.raises(hf.RingExhaustedError, match="holds .* batches"):
        for _ in range(25):
            b = feed.next(timeout=1.0)
            assert b is not None
            held.append(b["image"])  # keeps the ring slot alive
    assert 5 <= len(held) < 25
    n = len(held) * 100
    del held, b
    gc.collect()
    # Released: the feeder continues, and the rest arrives.
    n += sum(b.num_rows for b in feed.batches())
    assert n == 2500
    assert feed.metrics()["pressure_copies"] == 0


def test_feeder_killed_raises_peer_lost_fast(serve: Any, mnist_dir: Path) -> None:
    s = serve("--input", str(mnist_dir), "--ring-mb", "4")
    feed = hf.DataFeed(str(s.sock), batch_size=100)
    assert feed.next() is not None
    os.kill(s.proc.pid, signal.SIGKILL)
    s.proc.wait(timeout=10)
    killed = time.monotonic()
    with pytest.raises(hf.PeerLostError, match="gone"):
        while True:
            b = feed.next()
            assert b is not None
    # Frames committed before the kill may be delivered first; the loss is seen within 1 s.
    assert time.monotonic() - killed < 1.0


TRAINER = """
import sys, time, hydrofeed as hf
feed = hf.DataFeed(sys.argv[1], batch_size=100)
b = feed.next()
print("got", b.num_rows, flush=True)
time.sleep(60)
"""


def test_trainer_killed_serve_exits(serve: Any, mnist_dir: Path, tmp_path: Path) -> None:
    before = shm_listing()
    s = serve("--input", str(mnist_dir), "--ring-mb", "4")
    script = tmp_path / "trainer.py"
    script.write_text(TRAINER)
    child = subprocess.Popen(
        [sys.executable, str(script), str(s.sock)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().startswith("got 100")
        child.kill()
        child.wait(timeout=10)
        code, err = s.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate(timeout=10)
    assert code != 0
    assert "peer lost" in err and "trainer" in err, err
    assert not s.sock.exists()
    assert shm_listing() - before == set()


@pytest.mark.filterwarnings("ignore:`shuffle=True` was passed:UserWarning")
@pytest.mark.filterwarnings("ignore:Your input ran out of data:UserWarning")
def test_keras_fits_on_feed(serve: Any, mnist_dir: Path) -> None:
    import keras

    s = serve("--input", str(mnist_dir), "--epochs", "2")
    feed = hf.DataFeed(str(s.sock), batch_size=250)
    ds = hf.tf.dataset(feed, x="image", y="label")
    assert ds.element_spec[0].shape.as_list() == [None, 784]
    model = keras.Sequential([keras.Input((784,)), keras.layers.Dense(10, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy")
    h = model.fit(ds, epochs=2, verbose=0)
    assert len(h.history["loss"]) == 2 and all(np.isfinite(h.history["loss"]))
    assert feed.metrics()["rows"] == 5000


def test_tf_dataset_ragged_spec(serve: Any, tmp_path: Path) -> None:
    import tensorflow as tf

    rows = _write_ragged(tmp_path / "r.tfrecord", 30)
    s = serve("--input", str(tmp_path / "r.tfrecord"))
    feed = hf.DataFeed(str(s.sock), batch_size=10)
    ds = hf.tf.dataset(feed)
    spec = ds.element_spec
    assert isinstance(spec["ids"], tf.RaggedTensorSpec)
    assert spec["name"].dtype == tf.string
    got = [r for el in ds for r in el["ids"].to_list()]
    assert got == rows


CTRL_C = """
import faulthandler, signal, sys, hydrofeed as hf
faulthandler.register(signal.SIGUSR1)  # the test asks for a traceback if it hangs
# A shell that starts a command in the background (`cmd &`, no job control) hands it SIGINT
# ignored, and Python then keeps it ignored: give this process the ordinary Ctrl-C handler.
signal.signal(signal.SIGINT, signal.default_int_handler)
feed = hf.DataFeed(sys.argv[1], batch_size=100)
feed.next_batch(100)
print("ready", flush=True)
try:
    while not feed.should_stop():
        feed.next_batch(100)
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    sys.exit(0)
print("no interrupt", flush=True)
sys.exit(3)
"""


def test_ctrl_c_interrupts_next_batch(serve: Any, mnist_dir: Path, tmp_path: Path) -> None:
    s = serve("--input", str(mnist_dir), "--ring-mb", "4")
    script = tmp_path / "ctrlc.py"
    script.write_text(CTRL_C)
    child = subprocess.Popen(
        [sys.executable, str(script), str(s.sock)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        # Freeze the feeder: the trainer now blocks in next_batch waiting on the ring.
        os.kill(s.proc.pid, signal.SIGSTOP)
        # Drain what was already committed so the child is really waiting.
        time.sleep(1.0)
        child.send_signal(signal.SIGINT)
        try:
            out, _ = child.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGUSR1)  # where is it stuck?
            time.sleep(1.0)
            child.kill()
            out, err = child.communicate(timeout=10)
            raise AssertionError(f"no exit 30 s after Ctrl-C; stdout {out!r}; stacks:\n{err}") from None
    finally:
        if child.poll() is None:
            child.kill()
        os.kill(s.proc.pid, signal.SIGCONT)
    assert child.returncode == 0, out
    assert "KeyboardInterrupt" in out


FORK = """
import os, sys, hydrofeed as hf
feed = hf.DataFeed(sys.argv[1], batch_size=100)
pid = os.fork()
if pid == 0:
    try:
        feed.next_batch(10)
    except hf.HydrofeedError as e:
        os._exit(0 if "fork" in str(e) and "create a new DataFeed" in str(e) else 2)
    os._exit(1)
_, status = os.waitpid(pid, 0)
assert len(feed.next_batch(10)) == 10  # the parent still works
print("child exit", os.waitstatus_to_exitcode(status))
"""


def test_use_after_fork_raises(serve: Any, mnist_dir: Path, tmp_path: Path) -> None:
    s = serve("--input", str(mnist_dir))
    script = tmp_path / "fork.py"
    script.write_text(FORK)
    r = subprocess.run(
        [sys.executable, str(script), str(s.sock)], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    assert "child exit 0" in r.stdout


def test_bad_input_raises_data_error_in_trainer(serve: Any, mnist_dir: Path, tmp_path: Path) -> None:
    src = sorted(mnist_dir.iterdir())[0]
    bad = tmp_path / "bad" / "part-0.tfrecord"
    bad.parent.mkdir()
    data = bytearray(src.read_bytes())
    rec = 12 + 3200  # about one record in: corrupt the payload of a later record
    data[rec * 100 + 500] ^= 0xFF
    bad.write_bytes(bytes(data))
    s = serve("--input", str(bad.parent))
    feed = hf.DataFeed(str(s.sock), batch_size=10)
    rows = 0
    with pytest.raises(hf.DataError, match=r"part-0\.tfrecord.*byte offset \d+") as ei:
        for b in feed.batches():
            rows += b.num_rows
    assert "feeder (pid" in str(ei.value)
    assert 0 < rows < 1000
    code, err = s.wait()
    assert code != 0 and "part-0.tfrecord" in err


def test_no_feeder_address(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("HYDROFEED_FEED_SOCKET", raising=False)
    with pytest.raises(ValueError, match="HYDROFEED_FEED_SOCKET"):
        hf.DataFeed()
    monkeypatch.setenv("HYDROFEED_FEED_SOCKET", str(tmp_path / "none.sock"))
    with pytest.raises(FileNotFoundError, match="hydrofeed serve"):
        hf.DataFeed(connect_timeout=0.3)


def test_env_address(serve: Any, mnist_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = serve("--input", str(mnist_dir), "--columns", "id")
    monkeypatch.setenv("HYDROFEED_FEED_SOCKET", str(s.sock))
    feed = hf.DataFeed(batch_size=2500)
    b = feed.next()
    assert b is not None and b.num_rows == 2500 and list(b.keys()) == ["id"]
    assert feed.next() is None and feed.should_stop()
    wait_for(lambda: s.proc.poll() is not None)
    assert run_python("import hydrofeed").returncode == 0


def test_dlpack_numpy_zero_copy_tf_copy(serve: Any, mnist_dir: Path) -> None:
    import tensorflow as tf

    s = serve("--input", str(mnist_dir), "--columns", "image,label")
    feed = hf.DataFeed(str(s.sock), batch_size=100)
    b = feed.next()
    assert b is not None
    img = b["image"]
    addr = img.__array_interface__["data"][0]
    # numpy (DLPack 1.0, read-only flag): same memory.
    assert np.from_dlpack(img).__array_interface__["data"][0] == addr
    # TensorFlow (legacy DLPack, which cannot say read-only) through Batch.dlpack: a copy,
    # never a writeable alias of the ring.
    t = tf.experimental.dlpack.from_dlpack(b.dlpack("image"))
    assert t.shape == (100, 784) and t.dtype == tf.float32
    np.testing.assert_array_equal(t.numpy(), img)
    # (t.numpy() copies; TF's own DLPack export shows where the tensor's memory is.)

    back = np.from_dlpack(DLPackCapsule(tf.experimental.dlpack.to_dlpack(t)))
    assert back.__array_interface__["data"][0] != addr
    np.testing.assert_array_equal(back, img)
    with pytest.raises(KeyError):
        b.dlpack("nope")
    feed.terminate()
