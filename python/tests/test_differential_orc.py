"""Differential tests, ORC: pyarrow.orc and pyorc write, pyarrow.orc is the reference.

What every format shares (profiles, comparison, strategies) is in ``differential.py``.
"""

from __future__ import annotations

import tempfile
import zoneinfo
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.orc as po
import pyorc
from hypothesis import given
from hypothesis import strategies as st

from differential import (
    DAY, I32, I64, PROFILE, TIMEOUT, ArrowCase, arrow_table, assert_same, column_values, dec, n_rows, project,
    read_hf, read_options, text, with_huge,
)


pytestmark = TIMEOUT


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
