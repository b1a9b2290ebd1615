"""Rows Spark holds pickled, made into objects by the extension's decoder
(``hydrofeed._native.unpickle_frame``): the objects of ``pickle.loads``, the same types,
values, order and sharing; what it does not decode goes to ``pickle.loads`` itself."""

from __future__ import annotations

import decimal
import math
import pickle
import random
import struct

import numpy as np
import pyarrow as pa
import pytest

from hydrofeed import _native
from hydrofeed.spark import rows


def _same(a, b, seen: set[tuple[int, int]] | None = None) -> bool:
    """Equal with the same types all the way down (floats bit for bit: NaN and -0.0 too; a
    container that holds itself compared once)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    seen = set() if seen is None else seen
    if isinstance(a, (list, tuple, dict)):
        if (id(a), id(b)) in seen:
            return True
        seen.add((id(a), id(b)))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y, seen) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k], seen) for k in a)
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b)
    return bool(a == b)


def _value(rng: random.Random, depth: int = 0, protocol: int = 5):
    """A value of the kinds the decoder takes (protocol 2 pickles ``bytes`` by a call to
    ``codecs.encode``, which it leaves to ``pickle.loads``)."""
    kinds = ["float", "int", "str", "none", "bool"] + (["bytes"] if protocol > 2 else [])
    if depth < 3:
        kinds += ["list", "tuple", "dict", "floats"]
    k = rng.choice(kinds)
    if k == "float":
        return rng.choice([rng.random(), -rng.random() * 1e300, 0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324])
    if k == "int":
        return rng.choice([rng.randrange(256), rng.randrange(256, 1 << 16), rng.randrange(1 << 16, 1 << 31),
                           -rng.randrange(1, 1 << 31), rng.randrange(1 << 31, 1 << 63), -(1 << 63),
                           (1 << 63) - 1, -(1 << 63) + 1, 0])
    if k == "str":
        return rng.choice(["", "x", "héllo wörld", "\ud800 lone surrogate", "ü" * 300, "a" * 70000])
    if k == "bytes":
        return rng.choice([b"", b"\x00\xff", bytes(300)])
    if k == "none":
        return None
    if k == "bool":
        return rng.random() < 0.5
    if k == "floats":  # a row's feature list, sometimes past pickle's 1000 items a batch
        return [rng.random() for _ in range(rng.choice([1, 3, 784, 999, 1000, 1001, 2500]))]
    n = rng.randrange(5)
    if k == "list":
        return [_value(rng, depth + 1, protocol) for _ in range(n)]
    if k == "tuple":
        return tuple(_value(rng, depth + 1, protocol) for _ in range(n))
    return {rng.choice(["a", "b", "k", 1, 2.5, (1, 2), None]): _value(rng, depth + 1, protocol) for _ in range(n)}


def _frame(blobs: list[bytes]) -> pa.Array:
    return pa.array(blobs, pa.binary())


def _no_pickle_loads(monkeypatch) -> None:
    def refused(*_a, **_k):
        raise AssertionError("pickle.loads called for a pickle the decoder takes")

    monkeypatch.setattr(pickle, "loads", refused)


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_what_it_decodes_is_what_pickle_loads_makes_without_pickle(monkeypatch, protocol):
    rng = random.Random(protocol)
    objs = [_value(rng, protocol=protocol) for _ in range(400)]
    objs += [([rng.random() for _ in range(784)], i % 10) for i in range(50)]  # Spark's MNIST rows
    blobs = [pickle.dumps(o, protocol=protocol) for o in objs]
    expected = [pickle.loads(b) for b in blobs]
    _no_pickle_loads(monkeypatch)
    got = _native.unpickle_frame(_frame(blobs), False)
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected)):
        assert _same(g, e), (i, repr(e)[:200], repr(g)[:200])


def test_batched_frames_give_the_rows_of_each_list_in_order(monkeypatch):
    rng = random.Random(7)
    batches = [[([rng.random() for _ in range(784)], rng.randrange(10)) for _ in range(k)] for k in (1, 5, 0, 40)]
    blobs = [pickle.dumps(b, protocol=5) for b in batches]
    _no_pickle_loads(monkeypatch)
    got = _native.unpickle_frame(pa.array(blobs, pa.large_binary()), True)
    want = [r for b in batches for r in b]
    assert len(got) == 46 and all(_same(g, w) for g, w in zip(got, want))


def test_an_object_a_pickle_refers_back_to_is_one_object(monkeypatch):
    floats, empty, key = [0.5, 1.5, 2.5], [], "label"
    objs = [[floats, floats], [empty, empty, floats], [{key: 1, "x": floats}, {key: 2, "x": floats}],
            ([floats] * 3, (floats, empty))]
    blobs = [pickle.dumps(o, protocol=p) for o in objs for p in (2, 5)]
    _no_pickle_loads(monkeypatch)
    got = _native.unpickle_frame(_frame(blobs), False)
    for p in (0, 1):
        a, b, c, d = got[p], got[2 + p], got[4 + p], got[6 + p]
        assert a[0] is a[1] and a[0] == floats
        assert b[0] is b[1] and b[0] == [] and b[2] == floats and b[0] is not b[2]
        k1, k2 = list(c[0])[0], list(c[1])[0]
        assert k1 is k2 and c[0]["x"] is c[1]["x"] == floats
        assert d[0][0] is d[0][2] is d[1][0] and d[1][1] == [] and d[0][0] == floats


def test_what_it_does_not_decode_goes_to_pickle_loads_as_it_would():
    shared = np.arange(3)
    others = [
        [shared, shared],  # one array twice: pickle.loads makes it once
        np.arange(5, dtype=np.float32),
        {1, 2, 3},
        decimal.Decimal("1.25"),
        1 << 100,
        -(1 << 64),
        bytearray(b"ab"),
    ]
    blobs = [pickle.dumps(o, protocol=p) for o in others for p in (2, 5)]
    blobs += [pickle.dumps([1.5, "x", None], protocol=p) for p in (0, 1)]  # text protocols
    got = _native.unpickle_frame(_frame(blobs), False)
    want = [pickle.loads(b) for b in blobs]
    assert all(_same(g, w) for g, w in zip(got, want))
    assert got[0][0] is got[0][1] and got[1][0] is got[1][1]  # the sharing kept


def test_a_bad_pickle_fails_as_pickle_loads_fails():
    good = pickle.dumps([[0.5] * 784, 3], protocol=5)
    for bad in (good[: len(good) // 2], good[:-1], b"\x80\x05G\x00", b"not a pickle", b""):
        with pytest.raises(Exception) as want:
            pickle.loads(bad)
        with pytest.raises(type(want.value)):
            _native.unpickle_frame(_frame([good, bad]), False)
    with pytest.raises(TypeError, match="null"):
        _native.unpickle_frame(pa.array([good, None], pa.binary()), False)
    with pytest.raises(TypeError, match="binary column"):
        _native.unpickle_frame(pa.array([1, 2]), False)


def test_the_hubs_frames_are_decoded_by_it(monkeypatch):
    rng = random.Random(3)
    batches = [[([rng.random() for _ in range(784)], i) for i in range(k)] for k in (30, 7)]
    frames = list(rows.pickled_frames([pickle.dumps(b, protocol=5) for b in batches], True))
    _no_pickle_loads(monkeypatch)
    got = [r for rb in frames for r in rows.unpickle_frame(rb)]
    assert all(_same(g, w) for g, w in zip(got, [r for b in batches for r in b])) and len(got) == 37


#: Opcodes that import or call: damaged pickles that hold one are not given to pickle.loads.
_CALLS = {"GLOBAL", "STACK_GLOBAL", "INST", "OBJ", "REDUCE", "NEWOBJ", "NEWOBJ_EX", "BUILD",
          "EXT1", "EXT2", "EXT4", "PERSID", "BINPERSID"}


def _calls(b: bytes) -> bool:
    """Whether ``b`` may import or call something before its end (or cannot be read far enough
    to tell)."""
    import pickletools

    try:
        return any(op.name in _CALLS for op, _, _ in pickletools.genops(b))
    except Exception:  # noqa: BLE001 - unreadable: pickle.loads may still act on its start
        return True


def test_damaged_pickles_decode_as_pickle_loads_or_fail_as_it_does():
    """Bytes flipped, dropped or cut in valid pickles (a hostile or broken peer): the decoder
    never crashes nor makes what ``pickle.loads`` refuses; where it takes a pickle its objects
    are ``pickle.loads``'."""
    rng = random.Random(11)
    seeds = [pickle.dumps(o, protocol=p) for p in (2, 5) for o in (
        [([rng.random() for _ in range(20)], 3), ([0.5] * 3, 300)],
        {"a": [1, 2.5, None], "b": ("x", b"y", True)},
        [[], [[]], (), {}, -5, 1 << 40],
    )]
    decoded = failed = 0
    for _ in range(6000):
        b = bytearray(rng.choice(seeds))
        for _ in range(rng.randrange(1, 4)):
            how, at = rng.randrange(3), rng.randrange(len(b))
            if how == 0:
                b[at] = rng.randrange(256)
            elif how == 1:
                del b[at]
            else:
                del b[at:]
            if not b:
                b.append(0x80)
        blob = bytes(b)
        if _calls(blob):
            continue
        try:
            want = pickle.loads(blob)
        except Exception as e:  # noqa: BLE001 - any failure of pickle's is the reference
            with pytest.raises(type(e)):
                _native.unpickle_frame(_frame([blob]), False)
            failed += 1
            continue
        got = _native.unpickle_frame(_frame([blob]), False)
        assert _same(got[0], want), (blob, got, want)
        decoded += 1
    assert decoded > 100 and failed > 100  # both kinds of damage were compared


def test_a_memo_slot_far_past_the_pickle_is_left_to_pickle_loads(monkeypatch):
    """``LONG_BINPUT`` of slot 2**24 - 1 in a 12-byte pickle: not a slot a pickler writes; the
    decoder allocates nothing for it (128 MB of slots) and ``pickle.loads`` makes the object."""
    blob = b"\x80\x02]r\xff\xff\xff\x00K\x01a."  # [1] stored in slot 2**24 - 1
    assert pickle.loads(blob) == [1]
    calls = []
    real = pickle.loads
    monkeypatch.setattr(pickle, "loads", lambda b: calls.append(1) or real(b))
    assert _native.unpickle_frame(_frame([blob]), False) == [[1]] and calls == [1]


def test_the_floats_it_makes_are_counted_freed_and_traced_as_any(monkeypatch):
    """Lists of floats are made at their size and filled in place: each float holds one
    reference (its list's), its memory is traced by ``tracemalloc`` and comes back when the
    rows are dropped, and the objects are plain lists and floats."""
    import gc
    import sys
    import tracemalloc

    rng = random.Random(3)
    batch = [([rng.random() for _ in range(784)], i) for i in range(200)]
    blob = pickle.dumps(batch, protocol=5)
    _no_pickle_loads(monkeypatch)
    gc.collect()
    blocks = sys.getallocatedblocks()
    tracemalloc.start()
    try:
        got = _native.unpickle_frame(_frame([blob]), True)
        traced, _ = tracemalloc.get_traced_memory()
        assert traced >= 200 * 784 * 24, traced  # every float of every row
        assert sys.getallocatedblocks() - blocks >= 200 * 784
        row = got[17][0]
        assert type(row) is list and all(type(x) is float for x in row) and row == batch[17][0]
        refs = sys.getrefcount(row[5])  # the list's reference, and the call's
        x = row[5]
        refs_named = sys.getrefcount(x)
        assert (refs, refs_named) == (2, 3)
        assert x + 1.0 == batch[17][0][5] + 1.0 and hash(x) == hash(batch[17][0][5])
        del x
        row.append(0.25)
        row[0] = "replaced"
        assert row[-1] == 0.25 and row[0] == "replaced" and len(row) == 785
        del got, row
        gc.collect()
        assert tracemalloc.get_traced_memory()[0] < traced // 10
    finally:
        tracemalloc.stop()
    assert sys.getallocatedblocks() - blocks < 200 * 784 // 100  # what they held came back


def test_the_zeros_of_a_list_of_floats_are_one_object(monkeypatch):
    """Images and one-hot vectors fed as lists are mostly ``0.0``: a list's zeros are one
    float object, held once per item (as CPython shares its own small values). ``-0.0`` and
    every other value stay objects of their own; the values, their bits and the pickle of the
    rows are those of ``pickle.loads``; the shared zero is freed with the last list holding it."""
    import gc
    import sys

    rng = random.Random(5)
    image = [0.0 if rng.random() < 0.8 else rng.randrange(1, 256) / 255.0 for _ in range(784)]
    image[3], image[4] = -0.0, 0.0
    batch = [(list(image), i) for i in range(50)]
    blob = pickle.dumps(batch, protocol=5)
    _no_pickle_loads(monkeypatch)
    gc.collect()
    blocks = sys.getallocatedblocks()
    got = _native.unpickle_frame(_frame([blob]), True)
    row = got[7][0]
    zeros = [x for x in row if x == 0.0 and math.copysign(1.0, x) > 0]
    assert len(zeros) > 500 and all(z is zeros[0] for z in zeros)
    assert row[3] is not row[4] and math.copysign(1.0, row[3]) < 0
    others = [x for x in row if x != 0.0]
    assert len({id(x) for x in others}) == len(others)
    count, first = len(zeros), zeros[0]
    del zeros
    refs = sys.getrefcount(first)
    assert refs == count + 2  # the row's items, `first`, the call's
    assert _same(got, batch) and pickle.dumps(got, protocol=5) == blob
    # 50 rows of ~160 other values each, not 50 x 784 floats
    assert sys.getallocatedblocks() - blocks < 50 * 784 // 3
    del got, row, first, others
    gc.collect()
    assert sys.getallocatedblocks() - blocks < 100


_ROUNDS = r"""
import json, pickle, random, resource, sys
import pyarrow as pa
from hydrofeed import _native

rng = random.Random(7)
rows = [([rng.random() for _ in range(784)], i) for i in range(300)]  # ~5.6 MB of floats
frame = pa.array([pickle.dumps(rows[k:k + 30], protocol=5) for k in range(0, 300, 30)], pa.binary())
del rows
faults = []
for _ in range(4):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    got = _native.unpickle_frame(frame, True)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    assert len(got) == 300 and len(got[299][0]) == 784
    del got
print(json.dumps({"faults": faults, "cache": _native.arena_cache()}))
"""


def _rounds(env_extra: dict[str, str]) -> dict:
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONMALLOC", "HYDROFEED_ARENA_CACHE_MB")}
    env.update(env_extra)
    out = subprocess.run([sys.executable, "-c", _ROUNDS], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def test_rows_made_batch_after_batch_reuse_the_memory_of_the_dropped_ones():
    """A trainer makes a batch of rows, uses it and drops it, again and again. CPython hands the
    memory of the dropped batch's floats back to the kernel, and the next batch would fault in
    fresh zeroed pages for all of them: the decoder keeps freed arenas for the next batch
    (``HYDROFEED_ARENA_CACHE_MB``, 0: off). Counted in page faults, not in time."""
    on = _rounds({})
    first, *later = on["faults"]
    assert first > 300 * 784 * 24 // 4096 // 2, on  # the first batch takes its pages
    assert max(later) < first // 2, on  # the next ones reuse them
    assert on["cache"][0] and on["cache"][1] > 0, on  # it holds the last batch's arenas
    off = _rounds({"HYDROFEED_ARENA_CACHE_MB": "0"})
    assert off["cache"] == [False, 0], off
    assert min(off["faults"][1:]) > off["faults"][0] // 2, off  # without it every batch faults
