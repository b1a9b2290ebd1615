"""Differential tests: ``hydrofeed.read`` against the reference readers, on random data.

Hypothesis generates random schemas and rows (every primitive with its extremes, nulls, nested
lists / structs / maps, dictionaries, many row groups / stripes / blocks, every codec the
writer has), writes them with an independent writer, and reads the file twice: with
``hydrofeed.read`` and with the format's reference reader. The two tables must be equal value
by value once the reference side is put through the format's type mapping, which is the one
docs/formats.md documents, and nothing more: a difference the mapping does not explain is a
defect.

| format | writer | reference reader |
|---|---|---|
| Parquet | pyarrow.parquet | pyarrow.parquet |
| ORC | pyarrow.orc, and pyorc | pyarrow.orc |
| Avro | fastavro | fastavro (its Python values, typed by the documented mapping) |
| TFRecord | tf.io.TFRecordWriter, tf.train.Example | tf.data.TFRecordDataset + tf.io.parse_example |

Profiles (``HYPOTHESIS_PROFILE``): ``default`` runs 200 examples per test, ``fuzz`` 5000
(``make fuzz-diff``). A failure prints the shrunk example, the column, row and both values, and
the ``@reproduce_failure`` blob that replays it.

The tests are in ``test_differential_<format>.py`` (``parquet``, ``orc``, ``avro``,
``tfrecord``), each with its format's known defects in their narrowest form. This module holds
what they share: the profiles, reading through hydrofeed and comparing, row counts and column
values, and the Arrow types and values that Parquet and ORC (through pyarrow) are written from.
"""

from __future__ import annotations

import decimal
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import hydrofeed as hf


# ---- profiles ----------------------------------------------------------------------------

_COMMON: dict[str, Any] = dict(
    deadline=None,
    database=None,
    print_blob=True,
    derandomize=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
# `make test` runs the same 200 examples per test every time (derandomized: a red CI run is a
# change in hydrofeed, not a new draw); `make fuzz-diff` draws new ones on every run.
settings.register_profile("default", max_examples=200, **(_COMMON | {"derandomize": True}))
settings.register_profile("fuzz", max_examples=5000, **_COMMON)
# Applied per test (not loaded globally), so other test files keep hypothesis's own defaults.
PROFILE_NAME = os.environ.get("HYPOTHESIS_PROFILE", "default")
PROFILE = settings.get_profile(PROFILE_NAME)
# The per-test watchdog (pytest.ini says 300 s) grows with the number of examples.
# Each test module sets `pytestmark = TIMEOUT`.
TIMEOUT = pytest.mark.timeout(max(300, PROFILE.max_examples * 2))

I64 = (-(2**63), 2**63 - 1)
I32 = (-(2**31), 2**31 - 1)
NS_PER = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
DAY = 86_400


# ---- reading and comparing -----------------------------------------------------------------


def read_hf(path: Path, **kw: Any) -> pa.Table:
    """The whole input through ``hydrofeed.read``, as one table of the reader's schema."""
    r = hf.read(str(path), **kw)
    batches = list(r)
    if kw.get("batch_size"):
        assert all(b.num_rows == kw["batch_size"] for b in batches[:-1]), [b.num_rows for b in batches]
    return pa.Table.from_batches(batches, schema=r.schema)


def _float_eq(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def _value_eq(a: Any, b: Any) -> bool:
    """Python values equal, NaN equal to NaN and -0.0 apart from 0.0, recursively."""
    if isinstance(a, float) and isinstance(b, float):
        return _float_eq(a, b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_value_eq(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_value_eq(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _plain_type(t: pa.DataType) -> pa.DataType:
    """``t`` with temporal types as their integers and dictionaries decoded, for to_pylist
    (exact: nanoseconds and out-of-datetime-range values survive)."""
    if pa.types.is_dictionary(t):
        return _plain_type(t.value_type)
    if pa.types.is_timestamp(t) or pa.types.is_duration(t) or pa.types.is_date64(t) or pa.types.is_time64(t):
        return pa.int64()
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pa.int32()
    if isinstance(t, pa.ExtensionType):
        return _plain_type(t.storage_type)
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_plain_type(t.key_type)), t.item_field.with_type(_plain_type(t.item_type)))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(_plain_type(t.value_type)), t.list_size)
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_plain_type(t.value_type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_plain_type(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_plain_type(f.type)) for f in t])
    return t


def _pylist(col: pa.ChunkedArray) -> list[Any]:
    col = col.combine_chunks() if col.num_chunks else pa.array([], col.type)
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    if isinstance(col.type, pa.ExtensionType):
        col = col.storage
    plain = _plain_type(col.type)
    return (col.cast(plain) if plain != col.type else col).to_pylist()


def assert_same(got: pa.Table, want: pa.Table) -> None:
    """Same schema (types, names, nullability; metadata aside) and the same values, row by row.

    Arrow ``equals`` first; where it says no (NaN is never equal to itself there), value by
    value, and the first difference is reported with its column, row and both values.
    """
    assert got.schema.equals(want.schema, check_metadata=False), (
        f"schemas differ:\nhydrofeed:\n{got.schema}\nreference (after the documented mapping):\n{want.schema}"
    )
    assert got.num_rows == want.num_rows, f"hydrofeed read {got.num_rows} rows, the reference {want.num_rows}"
    if got.equals(want):
        return
    for name, g, w in zip(got.column_names, got.columns, want.columns):
        if g.equals(w):
            continue
        gl, wl = _pylist(g), _pylist(w)
        for row, (a, b) in enumerate(zip(gl, wl)):
            if not _value_eq(a, b):
                raise AssertionError(
                    f"column {name!r} ({g.type}), row {row}:\n  hydrofeed: {a!r}\n  reference: {b!r}"
                )


def pick_columns(draw: st.DrawFn, names: list[str]) -> list[str] | None:
    """No projection, or a random subset in a random order (projection is by top-level name)."""
    if not names or draw(st.booleans()):
        return None
    return draw(st.permutations(names).flatmap(lambda p: st.integers(1, len(p)).map(lambda k: list(p[:k]))))


def read_options(draw: st.DrawFn, names: list[str]) -> dict[str, Any]:
    kw: dict[str, Any] = {}
    cols = pick_columns(draw, names)
    if cols is not None:
        kw["columns"] = cols
    bs = draw(st.sampled_from([None, None, 1, 7, 100]))
    if bs is not None:
        kw["batch_size"] = bs
    return kw


def project(t: pa.Table, kw: dict[str, Any]) -> pa.Table:
    return t.select(kw["columns"]) if "columns" in kw else t


# ---- rows: a small pool of drawn values spread over many rows ------------------------------


@st.composite
def n_rows(draw: st.DrawFn) -> int:
    """Mostly small; one case in ten crosses many row groups / stripes / blocks."""
    k = draw(st.integers(0, 9))
    if k < 6:
        return draw(st.integers(0, 40))
    if k < 9:
        return draw(st.integers(0, 300))
    return draw(st.integers(1000, 4000))


@st.composite
def column_values(draw: st.DrawFn, value: st.SearchStrategy[Any], n: int, nullable: bool = True) -> list[Any]:
    """``n`` values: drawn one by one for small ``n``, else spread from a pool of drawn values
    (hypothesis would spend minutes drawing thousands of nested values)."""
    v = st.one_of(st.none(), value) if nullable else value
    if nullable and draw(st.integers(0, 19)) == 0:
        return [None] * n
    if n <= 40:
        return draw(st.lists(v, min_size=n, max_size=n))
    pool = draw(st.lists(v, min_size=1, max_size=40))
    rnd = draw(st.randoms(use_true_random=False))
    return [pool[rnd.randrange(len(pool))] for _ in range(n)]


def with_huge(draw: st.DrawFn, values: list[Any], make: Callable[[int], Any]) -> list[Any]:
    """Now and then one value of ~100 KiB (pages, blocks and buffers larger than usual)."""
    if values and draw(st.integers(0, 24)) == 0:
        values = list(values)
        values[draw(st.integers(0, len(values) - 1))] = make(draw(st.integers(50_000, 150_000)))
    return values


def text(max_size: int = 12) -> st.SearchStrategy[str]:
    return st.one_of(st.just(""), st.text(max_size=max_size), st.text(st.characters(codec="ascii"), max_size=max_size))


# ---- Arrow types and values (Parquet, ORC through pyarrow) ----------------------------------


_WIDE = decimal.Context(prec=100)


def dec(v: int, scale: int) -> decimal.Decimal:
    """``v * 10**-scale`` exactly (the default context would round to 28 digits)."""
    return decimal.Decimal(v).scaleb(-scale, context=_WIDE)


def _ts_range(unit: str, fit_ns: bool) -> tuple[int, int]:
    return (I64[0] // NS_PER[unit] + 1, I64[1] // NS_PER[unit]) if fit_ns else I64


def arrow_leaf_types(fmt: str) -> st.SearchStrategy[pa.DataType]:
    common = [
        st.just(pa.bool_()),
        st.sampled_from([pa.int8(), pa.int16(), pa.int32(), pa.int64()]),
        st.sampled_from([pa.float32(), pa.float64()]),
        st.sampled_from([pa.string(), pa.large_string(), pa.binary(), pa.large_binary()]),
        st.integers(1, 20).map(pa.binary),
        st.sampled_from([pa.date32(), pa.date64()]),
        st.builds(pa.timestamp, st.sampled_from(["s", "ms", "us", "ns"]), st.sampled_from([None, "UTC", "+01:00", "America/New_York"])),
        st.integers(1, 38).flatmap(lambda p: st.integers(0, p).map(lambda s: pa.decimal128(p, s))),
    ]
    if fmt == "parquet":
        common += [
            st.sampled_from([pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]),
            st.just(pa.float16()),
            st.sampled_from([pa.time32("s"), pa.time32("ms"), pa.time64("us"), pa.time64("ns")]),
            st.builds(pa.duration, st.sampled_from(["s", "ms", "us", "ns"])),
            st.integers(1, 76).flatmap(lambda p: st.integers(0, p).map(lambda s: pa.decimal256(p, s))),
            st.just(pa.null()),
        ]
    return st.one_of(common)


def arrow_types(fmt: str, depth: int = 2) -> st.SearchStrategy[pa.DataType]:
    leaf = arrow_leaf_types(fmt)
    if depth == 0:
        return leaf
    inner = arrow_types(fmt, depth - 1)
    keys = st.sampled_from([pa.string(), pa.int32(), pa.int64()])
    nested = st.one_of(
        inner.map(pa.list_),
        inner.map(pa.large_list),
        st.tuples(inner, st.integers(1, 4)).map(lambda a: pa.list_(a[0], a[1])),
        st.lists(inner, min_size=1, max_size=3).map(lambda ts: pa.struct([(f"f{i}", t) for i, t in enumerate(ts)])),
        st.tuples(keys, inner).map(lambda a: pa.map_(a[0], a[1])),
    )
    return st.one_of(leaf, leaf, nested)


def arrow_values(t: pa.DataType, fmt: str) -> st.SearchStrategy[Any]:
    """Non-null Python values of ``t``; temporal values as their integers (see ``build``)."""
    fit_ns = fmt == "orc"  # pyarrow.orc hands every ORC timestamp out as timestamp[ns]
    if pa.types.is_boolean(t):
        return st.booleans()
    if pa.types.is_integer(t):
        info = (t.bit_width, pa.types.is_signed_integer(t))
        lo, hi = (-(2 ** (info[0] - 1)), 2 ** (info[0] - 1) - 1) if info[1] else (0, 2 ** info[0] - 1)
        return st.integers(lo, hi)
    if pa.types.is_floating(t):
        return st.floats(width=t.bit_width)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or t == pa.string_view():
        return text()
    if pa.types.is_fixed_size_binary(t):
        return st.binary(min_size=t.byte_width, max_size=t.byte_width)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or t == pa.binary_view():
        return st.binary(max_size=12)
    if pa.types.is_date32(t):
        lo, hi = (-(2**31), 2**31 - 1) if not fit_ns else (I64[0] // (DAY * 10**9) + 1, I64[1] // (DAY * 10**9))
        return st.integers(lo, hi)
    if pa.types.is_date64(t):
        lo, hi = (I64[0] // (DAY * 1000) + 1, I64[1] // (DAY * 1000)) if not fit_ns else (I64[0] // (DAY * 10**9) + 1, I64[1] // (DAY * 10**9))
        return st.integers(lo, hi).map(lambda d: d * DAY * 1000)
    if pa.types.is_time32(t) or pa.types.is_time64(t):
        return st.integers(0, DAY * (10**9 // NS_PER[t.unit]) - 1)
    if pa.types.is_timestamp(t):
        lo, hi = _ts_range(t.unit, fit_ns)
        if fmt == "parquet" and t.unit == "s":  # Parquet has no seconds: written as ms
            lo, hi = I64[0] // 1000 + 1, I64[1] // 1000
        return st.integers(lo, hi)
    if pa.types.is_duration(t):
        if t.unit == "s":
            return st.integers(I64[0] // 1000 + 1, I64[1] // 1000)
        return st.integers(*I64)
    if pa.types.is_decimal(t):
        big = 10**t.precision - 1
        return st.integers(-big, big).map(lambda v, s=t.scale: dec(v, s))
    if pa.types.is_null(t):
        return st.none()
    if pa.types.is_map(t):
        return st.dictionaries(arrow_values(t.key_type, fmt), st.one_of(st.none(), arrow_values(t.item_type, fmt)), max_size=3).map(
            lambda d: list(d.items())
        )
    if pa.types.is_fixed_size_list(t):
        return st.lists(st.one_of(st.none(), arrow_values(t.value_type, fmt)), min_size=t.list_size, max_size=t.list_size)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return st.lists(st.one_of(st.none(), arrow_values(t.value_type, fmt)), max_size=4)
    if pa.types.is_struct(t):
        return st.fixed_dictionaries({f.name: st.one_of(st.none(), arrow_values(f.type, fmt)) for f in t})
    raise AssertionError(f"no values for {t}")


def build(values: list[Any], t: pa.DataType) -> pa.Array:
    """An array of ``t`` from values drawn by ``arrow_values`` (temporal ones as integers)."""
    plain = _plain_type(t)
    a = pa.array(values, type=plain)
    return a.cast(t) if plain != t else a


@dataclass
class ArrowCase:
    table: pa.Table
    write: dict[str, Any]
    read: dict[str, Any]

    def __repr__(self) -> str:
        return f"ArrowCase(rows={self.table.num_rows}, write={self.write}, read={self.read},\n{self.table.schema},\n{self.table.to_pydict()!r:.4000})"


@st.composite
def arrow_table(draw: st.DrawFn, fmt: str) -> pa.Table:
    n = draw(n_rows())
    cols: dict[str, pa.Array] = {}
    for i in range(draw(st.integers(1, 5))):
        name = f"c{i}" + (draw(st.sampled_from(["", "", "_é", " x", "ü.ß"])) if fmt == "parquet" else "")
        if fmt == "parquet" and draw(st.integers(0, 5)) == 0:
            vt = draw(st.sampled_from([pa.string(), pa.binary(), pa.int64(), pa.float64()]))
            vals = draw(column_values(arrow_values(vt, fmt), n))
            cols[name] = pa.array(vals, type=vt).dictionary_encode()
            continue
        t = draw(arrow_types(fmt))
        vals = draw(column_values(arrow_values(t, fmt), n))
        if t in (pa.string(), pa.large_string(), pa.string_view()):
            vals = with_huge(draw, vals, lambda k: "ñ" * k)
        elif t in (pa.binary(), pa.large_binary(), pa.binary_view()):
            vals = with_huge(draw, vals, lambda k: b"\x00\xff" * k)
        cols[name] = build(vals, t)
    return pa.table(cols)
