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
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import io
import math
import os
import random
import struct
import tempfile
import uuid
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.orc as po
import pyarrow.parquet as pq
import pyorc
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
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
pytestmark = pytest.mark.timeout(max(300, PROFILE.max_examples * 2))

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


# ---- Parquet -------------------------------------------------------------------------------


@st.composite
def parquet_cases(draw: st.DrawFn) -> ArrowCase:
    t = draw(arrow_table("parquet"))
    write = dict(
        compression=draw(st.sampled_from(["NONE", "SNAPPY", "GZIP", "BROTLI", "LZ4", "ZSTD"])),
        row_group_size=draw(st.sampled_from([None, 1, 3, 50, 1000])),
        data_page_size=draw(st.sampled_from([None, 64, 4096])),
        use_dictionary=draw(st.booleans()),
        version="2.6",  # 2.4 has no nanoseconds: pyarrow would refuse or truncate them
        data_page_version=draw(st.sampled_from(["1.0", "2.0"])),
        store_schema=draw(st.booleans()),
        write_statistics=draw(st.booleans()),
        write_page_checksum=draw(st.booleans()),
    )
    return ArrowCase(t, write, read_options(draw, t.column_names))


def stored_arrow_schema(path: Path) -> pa.Schema | None:
    """The Arrow schema a writer stored in the footer (``ARROW:schema``), if any."""
    md = pq.read_metadata(path).metadata or {}
    raw = md.get(b"ARROW:schema")
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(raw))) if raw else None


def _date64_back(ref: pa.DataType, stored: pa.DataType) -> pa.DataType:
    """``ref`` with date32 made date64 wherever the stored Arrow type has date64."""
    if pa.types.is_date32(ref) and pa.types.is_date64(stored):
        return pa.date64()
    kids = [ref.field(i) for i in range(ref.num_fields)]
    skids = [stored.field(i) for i in range(stored.num_fields)] if ref.num_fields == stored.num_fields else []
    if not skids or pa.types.is_dictionary(ref):
        return ref
    new = [k.with_type(_date64_back(k.type, sk.type)) for k, sk in zip(kids, skids)]
    if pa.types.is_struct(ref):
        return pa.struct(new)
    if pa.types.is_map(ref):
        return pa.map_(ref.key_field, _map_item(ref, stored))
    if pa.types.is_large_list(ref):
        return pa.large_list(new[0])
    if pa.types.is_fixed_size_list(ref):
        return pa.list_(new[0], ref.list_size)
    if pa.types.is_list(ref):
        return pa.list_(new[0])
    return ref


def _map_item(ref: pa.DataType, stored: pa.DataType) -> pa.Field:
    return ref.item_field.with_type(_date64_back(ref.item_type, stored.item_type))


def normalize_parquet(t: pa.Table, stored: pa.Schema | None) -> pa.Table:
    """The documented Parquet mapping (docs/formats.md), applied to pyarrow's result. Where
    the writer stored its Arrow schema, hydrofeed keeps two types pyarrow does not restore:
    a dictionary column stays one (pyarrow decodes all but string / binary dictionaries), and
    date64 stays date64 (pyarrow reads the Parquet date as date32)."""
    cols = []
    for f, c in zip(t.schema, t.columns):
        s = stored.field(f.name).type if stored is not None and f.name in stored.names else None
        if s is not None and pa.types.is_dictionary(s) and not pa.types.is_dictionary(f.type):
            c = c.dictionary_encode() if c.num_chunks else pa.chunked_array([], pa.dictionary(pa.int32(), f.type))
        elif s is not None:
            want = _date64_back(f.type, s)
            if want != f.type:
                c = c.cast(want)
        cols.append(c)
    return pa.Table.from_arrays(cols, schema=pa.schema([f.with_type(c.type) for f, c in zip(t.schema, cols)]))


@PROFILE
@given(case=parquet_cases())
def test_parquet_matches_pyarrow(case: ArrowCase) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "data.parquet"
        pq.write_table(case.table, p, **case.write)
        # The reference must agree with the file it reads: pyarrow can read fewer rows than the
        # footer and the written table hold, or fail on a column of the same file
        # (test_parquet_rows_pyarrow_loses); such an example says nothing about hydrofeed.
        try:
            ref = pq.read_table(p)
        except pa.ArrowInvalid as e:
            note(f"pyarrow cannot read the file it wrote: {e}")
            assume(False)
        assume(ref.num_rows == pq.ParquetFile(p).metadata.num_rows == case.table.num_rows)
        want = normalize_parquet(project(ref, case.read), stored_arrow_schema(p))
        got = read_hf(p, **case.read)
    assert_same(got, want)


# ---- ORC -----------------------------------------------------------------------------------


def normalize_orc(t: pa.Table) -> pa.Table:
    """The documented ORC mapping (docs/formats.md), applied to pyarrow.orc's result."""
    return t


@st.composite
def orc_pyarrow_cases(draw: st.DrawFn) -> ArrowCase:
    t = draw(arrow_table("orc"))
    write = dict(
        compression=draw(st.sampled_from(["UNCOMPRESSED", "SNAPPY", "ZLIB", "LZ4", "ZSTD"])),
        stripe_size=draw(st.sampled_from([64 * 1024 * 1024, 4096, 1])),
        batch_size=draw(st.sampled_from([1024, 7, 1])),
        row_index_stride=draw(st.sampled_from([10000, 1000])),
        file_version=draw(st.sampled_from(["0.11", "0.12"])),
        dictionary_key_size_threshold=draw(st.sampled_from([0.0, 1.0])),
    )
    return ArrowCase(t, write, read_options(draw, t.column_names))


@PROFILE
@given(case=orc_pyarrow_cases())
def test_orc_pyarrow_writer_matches_pyarrow(case: ArrowCase) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "data.orc"
        po.write_table(case.table, p, **case.write)
        want = normalize_orc(project(po.read_table(p), case.read))
        got = read_hf(p, **case.read)
    assert_same(got, want)


class _NsTimestamp(pyorc.converters.ORCConverter):
    """ORC timestamps as integer nanoseconds since the epoch (pyorc's default goes through
    datetime: microseconds, years 1-9999)."""

    @staticmethod
    def to_orc(*args: Any) -> tuple[int, int]:
        sec, ns = divmod(args[0], 10**9)
        return sec, ns

    @staticmethod
    def from_orc(*args: Any) -> int:
        return args[0] * 10**9 + args[1]


class _DaysDate(pyorc.converters.ORCConverter):
    @staticmethod
    def to_orc(*args: Any) -> int:
        return args[0]

    @staticmethod
    def from_orc(*args: Any) -> int:
        return args[0]


@dataclass
class OrcType:
    text: str
    values: st.SearchStrategy[Any] = field(repr=False)


def orc_types(depth: int = 2) -> st.SearchStrategy[OrcType]:
    ns = (I64[0] + 10**9, I64[1] - 10**9)  # pyarrow.orc returns timestamp[ns]
    leaf = st.one_of(
        st.just(OrcType("boolean", st.booleans())),
        st.just(OrcType("tinyint", st.integers(-128, 127))),
        st.just(OrcType("smallint", st.integers(-(2**15), 2**15 - 1))),
        st.just(OrcType("int", st.integers(*I32))),
        st.just(OrcType("bigint", st.integers(*I64))),
        st.just(OrcType("float", st.floats(width=32))),
        st.just(OrcType("double", st.floats())),
        st.just(OrcType("string", text())),
        st.just(OrcType("binary", st.binary(max_size=12))),
        st.integers(1, 10).map(lambda n: OrcType(f"varchar({n})", st.text(st.characters(codec="ascii"), max_size=n))),
        st.integers(1, 10).map(lambda n: OrcType(f"char({n})", st.text(st.characters(codec="ascii"), max_size=n))),
        st.just(OrcType("date", st.integers(I64[0] // (DAY * 10**9) + 1, I64[1] // (DAY * 10**9)))),
        st.just(OrcType("timestamp", st.integers(*ns))),
        st.just(OrcType("timestamp with local time zone", st.integers(*ns))),
        st.integers(1, 38).flatmap(
            lambda p: st.integers(0, p).map(
                lambda s: OrcType(
                    f"decimal({p},{s})", st.integers(-(10**p) + 1, 10**p - 1).map(lambda v: dec(v, s))
                )
            )
        ),
    )
    if depth == 0:
        return leaf
    inner = orc_types(depth - 1)
    nullable = lambda t: st.one_of(st.none(), t.values)  # noqa: E731
    nested = st.one_of(
        inner.map(lambda t: OrcType(f"array<{t.text}>", st.lists(nullable(t), max_size=4))),
        st.tuples(st.sampled_from(["string", "int", "bigint"]), inner).map(
            lambda kv: OrcType(
                f"map<{kv[0]},{kv[1].text}>",
                st.dictionaries(text() if kv[0] == "string" else st.integers(*I32), nullable(kv[1]), max_size=3),
            )
        ),
        st.lists(inner, min_size=1, max_size=3).map(
            lambda ts: OrcType(
                "struct<" + ",".join(f"f{i}:{t.text}" for i, t in enumerate(ts)) + ">",
                st.fixed_dictionaries({f"f{i}": nullable(t) for i, t in enumerate(ts)}),
            )
        ),
    )
    return st.one_of(leaf, leaf, nested)


@dataclass
class PyorcCase:
    schema: str
    rows: list[dict[str, Any]]
    write: dict[str, Any]
    read: dict[str, Any]


@st.composite
def orc_pyorc_cases(draw: st.DrawFn) -> PyorcCase:
    n = draw(n_rows())
    types = draw(st.lists(orc_types(), min_size=1, max_size=5))
    names = [f"c{i}" for i in range(len(types))]
    cols = [draw(column_values(t.values, n)) for t in types]
    for i, t in enumerate(types):
        if t.text in ("string", "binary"):
            cols[i] = with_huge(draw, cols[i], (lambda k: "ñ" * k) if t.text == "string" else (lambda k: b"\xff" * k))
    rows = [dict(zip(names, r)) for r in zip(*cols)] if cols else []
    schema = "struct<" + ",".join(f"{n}:{t.text}" for n, t in zip(names, types)) + ">"
    write = dict(
        # The ORC C++ writer has no LZO (readers do).
        compression=draw(st.sampled_from([c for c in pyorc.CompressionKind if c != pyorc.CompressionKind.LZO])),
        stripe_size=draw(st.sampled_from([64 * 1024 * 1024, 1024, 1])),
        batch_size=draw(st.sampled_from([1024, 7])),
        row_index_stride=draw(st.sampled_from([10000, 1000])),
        dict_key_size_threshold=draw(st.sampled_from([0.0, 1.0])),
    )
    return PyorcCase(schema, rows, write, read_options(draw, names))


@PROFILE
@given(case=orc_pyorc_cases())
def test_orc_pyorc_writer_matches_pyarrow(case: PyorcCase) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "data.orc"
        with open(p, "wb") as f:
            w = pyorc.Writer(
                f,
                case.schema,
                struct_repr=pyorc.StructRepr.DICT,
                converters={
                    pyorc.TypeKind.TIMESTAMP: _NsTimestamp,
                    pyorc.TypeKind.TIMESTAMP_INSTANT: _NsTimestamp,
                    pyorc.TypeKind.DATE: _DaysDate,
                },
                timezone=zoneinfo.ZoneInfo("UTC"),
                **case.write,
            )
            w.writerows(case.rows)
            w.close()
        want = normalize_orc(project(po.read_table(p), case.read))
        got = read_hf(p, **case.read)
    assert_same(got, want)


# ---- Avro ----------------------------------------------------------------------------------


def _avro_codecs() -> list[str]:
    """The codecs fastavro can write here (snappy and zstandard need optional libraries)."""
    ok = []
    for c in ["null", "deflate", "bzip2", "xz", "snappy", "zstandard"]:
        try:
            fastavro.writer(io.BytesIO(), {"type": "record", "name": "r", "fields": []}, [{}], codec=c)
            ok.append(c)
        except (ValueError, ImportError):
            pass
    return ok


AVRO_CODECS = _avro_codecs()
DT_MIN = dt.datetime(1, 1, 1, tzinfo=dt.timezone.utc)
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


@dataclass
class AvroType:
    """An Avro schema, its values (as fastavro writes them), the Arrow type hydrofeed returns
    for it (docs/formats.md) and how fastavro's value of it becomes that Arrow value."""

    schema: Any
    values: st.SearchStrategy[Any] = field(repr=False)
    arrow: pa.DataType = field(repr=False)
    nullable: bool = field(default=False, repr=False)
    conv: Callable[[Any], Any] = field(default=lambda v: v, repr=False)


def _ms_range(per_sec: int) -> tuple[int, int]:
    # fastavro returns timestamp-millis/micros as datetime: years 1-9999.
    lo = int((DT_MIN - EPOCH).total_seconds()) * per_sec
    hi = int((dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt.timezone.utc) - EPOCH).total_seconds()) * per_sec
    return lo, hi


def _micros(t: dt.time) -> int:
    return ((t.hour * 60 + t.minute) * 60 + t.second) * 10**6 + t.microsecond


def _dec_bytes(p: int) -> int:
    n = 1
    while 2 ** (8 * n - 1) <= 10**p:
        n += 1
    return n


def _mdn(b: bytes) -> Any:
    months, days, millis = struct.unpack("<III", b)
    return pa.scalar((months, days, millis * 10**6), pa.month_day_nano_interval()).as_py()


def avro_types(names: list[int], depth: int = 2) -> st.SearchStrategy[AvroType]:
    def name(prefix: str) -> str:
        names[0] += 1
        return f"{prefix}{names[0]}"

    def decimal_type(p: int, s: int, fixed: bool) -> AvroType:
        schema: dict[str, Any] = {"type": "bytes", "logicalType": "decimal", "precision": p, "scale": s}
        if fixed:
            schema |= {"type": "fixed", "name": name("dec"), "size": _dec_bytes(p)}
        arrow = pa.decimal128(p, s) if p <= 38 else pa.decimal256(p, s)
        return AvroType(schema, st.integers(-(10**p) + 1, 10**p - 1).map(lambda v: dec(v, s)), arrow)

    def ts(logical: str, unit: str, utc: bool) -> AvroType:
        tz = "+00:00" if utc else None
        if unit == "ns":  # fastavro does not know timestamp-nanos: a plain long both ways
            return AvroType({"type": "long", "logicalType": logical}, st.integers(*I64), pa.timestamp(unit, tz))
        per = 1000 if unit == "ms" else 10**6
        lo, hi = _ms_range(per)

        def conv(v: dt.datetime) -> int:
            aware = v if v.tzinfo else v.replace(tzinfo=dt.timezone.utc)
            delta = aware - EPOCH
            return (delta.days * DAY * 10**6 + delta.seconds * 10**6 + delta.microseconds) // (10**6 // per)

        return AvroType({"type": "long", "logicalType": logical}, st.integers(lo, hi), pa.timestamp(unit, tz), conv=conv)

    leaf = st.one_of(
        # Not the "null" type: hydrofeed returns it as a `null not null` field (docs/formats.md),
        # which pyarrow cannot build for the reference side.
        st.just(AvroType("boolean", st.booleans(), pa.bool_())),
        st.just(AvroType("int", st.integers(*I32), pa.int32())),
        st.just(AvroType("long", st.integers(*I64), pa.int64())),
        st.just(AvroType("float", st.floats(width=32), pa.float32())),
        st.just(AvroType("double", st.floats(), pa.float64())),
        st.just(AvroType("bytes", st.binary(max_size=12), pa.binary())),
        st.just(AvroType("string", text(), pa.string())),
        st.integers(1, 20).map(lambda n: AvroType({"type": "fixed", "name": name("fx"), "size": n}, st.binary(min_size=n, max_size=n), pa.binary(n))),
        st.lists(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True), min_size=1, max_size=5, unique=True).map(
            lambda syms: AvroType(
                {"type": "enum", "name": name("en"), "symbols": syms}, st.sampled_from(syms), pa.dictionary(pa.int32(), pa.string())
            )
        ),
    )
    logical = st.one_of(
        st.integers(1, 40).flatmap(lambda p: st.tuples(st.integers(0, p), st.booleans()).map(lambda a: decimal_type(p, a[0], a[1]))),
        st.just(AvroType({"type": "string", "logicalType": "uuid"}, st.uuids().map(str), pa.binary(16), conv=lambda u: u.bytes)),
        st.just(
            AvroType(
                {"type": "int", "logicalType": "date"},
                st.integers((dt.date(1, 1, 1) - dt.date(1970, 1, 1)).days, (dt.date(9999, 12, 31) - dt.date(1970, 1, 1)).days),
                pa.date32(),
                conv=lambda d: (d - dt.date(1970, 1, 1)).days,
            )
        ),
        st.just(
            AvroType(
                {"type": "int", "logicalType": "time-millis"},
                st.integers(0, DAY * 1000 - 1),
                pa.time32("ms"),
                conv=lambda t: _micros(t) // 1000,
            )
        ),
        st.just(
            AvroType({"type": "long", "logicalType": "time-micros"}, st.integers(0, DAY * 10**6 - 1), pa.time64("us"), conv=_micros)
        ),
        st.sampled_from(
            [
                ("timestamp-millis", "ms", True),
                ("timestamp-micros", "us", True),
                ("timestamp-nanos", "ns", True),
                ("local-timestamp-millis", "ms", False),
                ("local-timestamp-micros", "us", False),
                ("local-timestamp-nanos", "ns", False),
            ]
        ).map(lambda a: ts(*a)),
        st.just(None).map(  # a new name per draw: Avro names may be defined once
            lambda _: AvroType(
                {"type": "fixed", "name": name("dur"), "size": 12, "logicalType": "duration"},
                # Months and days up to 2**31 - 1: larger ones do not fit Arrow's int32 (see
                # test_avro_duration_months_past_int32 for what happens to them).
                st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1), st.integers(0, 2**32 - 1)).map(
                    lambda a: struct.pack("<III", *a)
                ),
                pa.month_day_nano_interval(),
                conv=_mdn,
            )
        ),
    )
    base = st.one_of(leaf, logical)
    wrapped = st.tuples(base, st.sampled_from(["plain", "plain", "null_first", "null_second"])).map(lambda a: _nullable(*a))
    if depth == 0:
        return wrapped
    inner = avro_types(names, depth - 1)

    def record(ts_: list[AvroType]) -> AvroType:
        fields = [(f"f{i}", t) for i, t in enumerate(ts_)]
        return AvroType(
            {"type": "record", "name": name("rec"), "fields": [{"name": n, "type": t.schema} for n, t in fields]},
            st.fixed_dictionaries({n: t.values for n, t in fields}),
            pa.struct([pa.field(n, t.arrow, t.nullable) for n, t in fields]),
            conv=lambda v: {n: (None if v[n] is None else t.conv(v[n])) for n, t in fields},
        )

    nested = st.one_of(
        inner.map(
            lambda t: AvroType(
                {"type": "array", "items": t.schema},
                st.lists(t.values, max_size=4),
                pa.list_(pa.field("item", t.arrow, t.nullable)),
                conv=lambda v: [None if x is None else t.conv(x) for x in v],
            )
        ),
        inner.map(
            lambda t: AvroType(
                {"type": "map", "values": t.schema},
                st.dictionaries(text(), t.values, max_size=3),
                pa.map_(pa.field("key", pa.string(), False), pa.field("value", t.arrow, t.nullable)),
                conv=lambda v: [(k, None if x is None else t.conv(x)) for k, x in v.items()],
            )
        ),
        st.lists(inner, min_size=1, max_size=3).map(record),
    )
    return st.one_of(wrapped, st.tuples(nested, st.sampled_from(["plain", "null_first", "null_second"])).map(lambda a: _nullable(*a)))


def _nullable(t: AvroType, how: str) -> AvroType:
    if how == "plain" or t.nullable or t.schema == "null":
        return t
    schema = ["null", t.schema] if how == "null_first" else [t.schema, "null"]
    return AvroType(schema, st.one_of(st.none(), t.values), t.arrow, True, t.conv)


@dataclass
class AvroCase:
    schema: dict[str, Any]
    records: list[dict[str, Any]]
    write: dict[str, Any]
    read: dict[str, Any]
    types: list[AvroType] = field(repr=False)


@st.composite
def avro_cases(draw: st.DrawFn) -> AvroCase:
    counter = [0]
    n = draw(n_rows())
    types = draw(st.lists(avro_types(counter), min_size=1, max_size=5))
    names = [f"c{i}" for i in range(len(types))]
    cols = [draw(column_values(t.values, n, nullable=False)) for t in types]
    for i, t in enumerate(types):
        if t.schema in ("string", "bytes"):
            cols[i] = with_huge(draw, cols[i], (lambda k: "ñ" * k) if t.schema == "string" else (lambda k: b"\xff" * k))
    schema = {"type": "record", "name": "row", "fields": [{"name": n, "type": t.schema} for n, t in zip(names, types)]}
    write = dict(
        codec=draw(st.sampled_from(AVRO_CODECS)),
        sync_interval=draw(st.sampled_from([16000, 1000, 64, 1])),
    )
    return AvroCase(schema, [dict(zip(names, r)) for r in zip(*cols)], write, read_options(draw, names), types)


def reference_avro(path: Path, case: AvroCase) -> pa.Table:
    """fastavro's records, typed by the documented mapping (docs/formats.md)."""
    with open(path, "rb") as f:
        recs = list(fastavro.reader(f))
    cols = {}
    fields = []
    for (name, t) in zip([f"c{i}" for i in range(len(case.types))], case.types):
        vals = [None if r[name] is None else t.conv(r[name]) for r in recs]
        if pa.types.is_dictionary(t.arrow):
            arr = pa.array(vals, pa.string()).dictionary_encode()
        elif isinstance(t.arrow, pa.ExtensionType):
            arr = pa.ExtensionArray.from_storage(t.arrow, pa.array(vals, t.arrow.storage_type))
        else:
            arr = build(vals, t.arrow)
        cols[name] = arr
        fields.append(pa.field(name, arr.type, t.nullable))
    return pa.Table.from_arrays(list(cols.values()), schema=pa.schema(fields)) if recs or fields else pa.table({})


@PROFILE
@given(case=avro_cases())
def test_avro_matches_fastavro(case: AvroCase) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "data.avro"
        with open(p, "wb") as f:
            fastavro.writer(f, fastavro.parse_schema(case.schema), case.records, **case.write)
        want = project(reference_avro(p, case), case.read)
        got = read_hf(p, **case.read)
    assert_same(got, want)


# ---- TFRecord ------------------------------------------------------------------------------

SAMPLE_RECORDS = 100  # feeder/format/src/tfrecord/mod.rs: records the schema is inferred from


@dataclass
class Feature:
    kind: str  # "int64" | "float" | "bytes"
    lengths: st.SearchStrategy[int] = field(repr=False)
    presence: float = 1.0

    def values(self) -> st.SearchStrategy[list[Any]]:
        v = {"int64": st.integers(*I64), "float": st.floats(width=32), "bytes": st.binary(max_size=12)}[self.kind]
        return self.lengths.flatmap(lambda n: st.lists(v, min_size=n, max_size=n))


@dataclass
class TfCase:
    records: list[dict[str, tuple[str, list[Any]]]]
    compression: str
    read: dict[str, Any]


@st.composite
def tfrecord_cases(draw: st.DrawFn) -> TfCase:
    n = draw(n_rows())
    # No NUL in names: test_tfrecord_feature_name_with_nul
    names = draw(st.lists(st.text(st.characters(exclude_characters="\x00"), min_size=1, max_size=6), min_size=1, max_size=5, unique=True))
    feats = {}
    for name in names:
        shape = draw(st.sampled_from(["scalar", "fixed", "ragged"]))
        lengths = {"scalar": st.just(1), "fixed": st.just(draw(st.integers(2, 4))), "ragged": st.integers(0, 5)}[shape]
        feats[name] = Feature(draw(st.sampled_from(["int64", "float", "bytes"])), lengths, draw(st.sampled_from([1.0, 1.0, 0.5, 0.02])))
    recs = []
    per_feature = {
        name: draw(column_values(st.one_of(st.none(), f.values()) if f.presence < 1 else f.values(), n, nullable=False))
        for name, f in feats.items()
    }
    for i in range(n):
        recs.append({name: (f.kind, per_feature[name][i]) for name, f in feats.items() if per_feature[name][i] is not None})
    return TfCase(recs, draw(st.sampled_from(["", "GZIP", "ZLIB"])), read_options(draw, sorted(names)))


def _tf() -> Any:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return pytest.importorskip("tensorflow")


def write_tfrecord(path: Path, case: TfCase) -> None:
    tf = _tf()
    kinds = {"int64": (tf.train.Int64List, "int64_list"), "float": (tf.train.FloatList, "float_list"), "bytes": (tf.train.BytesList, "bytes_list")}
    with tf.io.TFRecordWriter(str(path), options=tf.io.TFRecordOptions(compression_type=case.compression)) as w:
        for rec in case.records:
            feats = {}
            for name, (kind, vals) in rec.items():
                cls, attr = kinds[kind]
                feats[name] = tf.train.Feature(**{attr: cls(value=vals)})
            w.write(tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString())


def reference_tfrecord(path: Path, compression: str) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Every record as ``{feature: list of values}`` (missing features absent) through TF's own
    reader and parser, and each feature's kind."""
    tf = _tf()
    raw = [r.numpy() for r in tf.data.TFRecordDataset(str(path), compression_type=compression)]
    kinds: dict[str, str] = {}
    present: list[set[str]] = []
    for r in raw:
        ex = tf.train.Example.FromString(r)
        names = set()
        for name, f in ex.features.feature.items():
            kind = f.WhichOneof("kind")
            if kind is not None:
                kinds.setdefault(name, kind.removesuffix("_list"))
                names.add(name)
        present.append(names)
    if not kinds:
        return [{} for _ in raw], kinds
    dtypes = {"int64": tf.int64, "float": tf.float32, "bytes": tf.string}
    spec = {name: tf.io.VarLenFeature(dtypes[k]) for name, k in kinds.items()}
    parsed = tf.io.parse_example(tf.constant(raw), spec)
    values = {name: tf.RaggedTensor.from_sparse(sp).to_list() for name, sp in parsed.items()}
    rows = [{name: values[name][i] for name in present[i]} for i in range(len(raw))]
    return rows, kinds


def tf_arrow(kind: str, shape: Any) -> pa.DataType:
    """docs/formats.md: the column type of a feature of ``kind`` and ``shape``."""
    elem = {"int64": pa.int64(), "float": pa.float32(), "bytes": pa.binary()}[kind]
    item = pa.field("item", elem, nullable=False)
    if shape == "scalar":
        return elem
    if shape == "list":
        return pa.list_(item)
    return pa.list_(item, shape)


def infer_tfrecord(rows: list[dict[str, Any]], kinds: dict[str, str]) -> dict[str, Any]:
    """The documented inference rule: the first SAMPLE_RECORDS records, a feature's length
    always 1 -> scalar, always n > 1 -> fixed n, else list; features by name."""
    seen: dict[str, tuple[int, int]] = {}
    for r in rows[:SAMPLE_RECORDS]:
        for name, v in r.items():
            lo, hi = seen.get(name, (len(v), len(v)))
            seen[name] = (min(lo, len(v)), max(hi, len(v)))
    shapes: dict[str, Any] = {}
    for name in sorted(seen):
        lo, hi = seen[name]
        shapes[name] = "scalar" if lo == hi == 1 else (lo if lo == hi and lo > 1 else "list")
    return shapes


def tf_expected(rows: list[dict[str, Any]], kinds: dict[str, str], shapes: dict[str, Any]) -> pa.Table:
    cols, fields = [], []
    for name, shape in shapes.items():
        t = tf_arrow(kinds[name], shape)
        if shape == "scalar":
            vals = [r[name][0] if name in r else None for r in rows]
        else:
            vals = [r.get(name) for r in rows]
        cols.append(pa.array(vals, t))
        fields.append(pa.field(name, t, True))
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))


def fits(rows: list[dict[str, Any]], shapes: dict[str, Any]) -> bool:
    for r in rows:
        for name, shape in shapes.items():
            if name in r and shape != "list" and len(r[name]) != (1 if shape == "scalar" else shape):
                return False
    return True


@PROFILE
@given(case=tfrecord_cases())
def test_tfrecord_matches_tensorflow(case: TfCase) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "data.tfrecord"
        write_tfrecord(p, case)
        rows, kinds = reference_tfrecord(p, case.compression)
        assert len(rows) == len(case.records)
        # A stated schema: every feature as a list, no inference.
        stated = {name: "list" for name in sorted(kinds)}
        if stated:
            schema = pa.schema([pa.field(n, tf_arrow(kinds[n], "list"), True) for n in stated])
            kw = {k: v for k, v in case.read.items() if k != "columns"}
            assert_same(read_hf(p, schema=schema, **kw), tf_expected(rows, kinds, stated))
        if not rows:
            # Nothing to infer from: an error asking for schema= (SchemaError for a 0-byte
            # file, DataError for a compressed file that holds no record).
            with pytest.raises(hf.HydrofeedError, match="schema"):
                read_hf(p)
            return
        shapes = infer_tfrecord(rows, kinds)
        kw = dict(case.read)
        if "columns" in kw:
            kw["columns"] = [c for c in kw["columns"] if c in shapes]
            if not kw["columns"]:
                del kw["columns"]
        if not fits(rows, shapes):
            # A later record breaks the inferred shape: an error naming the file (the
            # documented rule), and the stated schema above reads it.
            with pytest.raises(hf.DataError, match="data.tfrecord"):
                read_hf(p, **kw)
            return
        got = read_hf(p, **kw)
        if not shapes:  # records without features: rows without columns
            assert (got.num_columns, got.num_rows) == (0, len(rows))
            return
        assert_same(got, project(tf_expected(rows, kinds, shapes), kw))


# ---- known defects, each in its narrowest form -------------------------------------------


def test_parquet_rows_pyarrow_loses(tmp_path: Path) -> None:
    """A file pyarrow writes (V2 data pages of 64 bytes, a list<bool> holding a null) and then
    reads as 0 rows, though its footer says 1: hydrofeed reads the row that was written."""
    t = pa.table({"c0": pa.array([[None]], pa.list_(pa.bool_()))})
    p = tmp_path / "y.parquet"
    pq.write_table(t, p, data_page_size=64, use_dictionary=False, data_page_version="2.0", store_schema=False)
    assert pq.ParquetFile(p).metadata.num_rows == 1
    assert read_hf(p).column("c0").to_pylist() == [[None]]


def test_avro_duration_months_past_int32(tmp_path: Path) -> None:
    schema = {
        "type": "record",
        "name": "r",
        "fields": [{"name": "d", "type": {"type": "fixed", "name": "dur", "size": 12, "logicalType": "duration"}}],
    }
    p = tmp_path / "d.avro"
    with open(p, "wb") as f:
        fastavro.writer(f, schema, [{"d": struct.pack("<III", 2**31, 0, 0)}])
    # Arrow's month_day_nano has no room for 2**31 months: the value must be refused, not
    # read as -2**31 months.
    try:
        read_hf(p)
    except hf.DataError:
        return
    raise AssertionError("2**31 months read without an error")


@pytest.mark.xfail(
    strict=True,
    raises=hf.DataError,
    reason="arrow-avro 59 cannot decode a record holding a fixed of size 0 (the block is refused "
    "with a DataError naming it: 'block decoded to nothing' or 'all columns ... row count')",
)
def test_avro_fixed_of_size_zero(tmp_path: Path) -> None:
    schema = {"type": "record", "name": "r", "fields": [{"name": "f", "type": {"type": "fixed", "name": "z", "size": 0}}]}
    p = tmp_path / "z.avro"
    with open(p, "wb") as f:
        fastavro.writer(f, schema, [{"f": b""}] * 3)
    assert read_hf(p).column("f").to_pylist() == [b""] * 3


def test_parquet_nested_seconds_timestamp_keeps_its_zone(tmp_path: Path) -> None:
    t = pa.timestamp("s", "+01:00")
    ty = pa.large_list(pa.struct([("a", pa.list_(t, 1)), ("m", pa.map_(pa.string(), t))]))
    p = tmp_path / "t.parquet"
    pq.write_table(pa.table({"c": pa.array([[{"a": [1000], "m": [("k", 5)]}], []], ty)}), p)
    want = pq.read_table(p)
    got = read_hf(p)
    assert got.schema.field("c").type == want.schema.field("c").type
    assert got.column("c").to_pylist() == want.column("c").to_pylist()


def test_parquet_seconds_timestamp_keeps_its_zone(tmp_path: Path) -> None:
    p = tmp_path / "t.parquet"
    pq.write_table(pa.table({"t": pa.array([1000], pa.timestamp("s", "+01:00"))}), p)
    assert read_hf(p).schema.field("t").type == pq.read_table(p).schema.field("t").type


def test_tfrecord_feature_name_with_nul(tmp_path: Path) -> None:
    # Arrow's C data interface (how batches reach pyarrow) cuts names at a NUL: such a name is
    # refused at planning, naming it, instead of reading a column '' of nulls.
    p = tmp_path / "n.tfrecord"
    write_tfrecord(p, TfCase([{"a\x00b": ("int64", [7])}], "", {}))
    with pytest.raises(hf.SchemaError, match=r"NUL"):
        read_hf(p)
