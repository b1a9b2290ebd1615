"""Differential tests, Parquet: pyarrow.parquet writes, pyarrow.parquet is the
reference.

What every format shares (profiles, comparison, strategies) is in ``differential.py``.
"""

from __future__ import annotations

import base64
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import assume, given, note
from hypothesis import strategies as st

from differential import PROFILE, TIMEOUT, ArrowCase, arrow_table, assert_same, project, read_hf, read_options


pytestmark = TIMEOUT


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


# ---- known defects, each in its narrowest form -------------------------------------------


def test_parquet_rows_pyarrow_loses(tmp_path: Path) -> None:
    """A file pyarrow writes (V2 data pages of 64 bytes, a list<bool> holding a null) and then
    reads as 0 rows, though its footer says 1: hydrofeed reads the row that was written."""
    t = pa.table({"c0": pa.array([[None]], pa.list_(pa.bool_()))})
    p = tmp_path / "y.parquet"
    pq.write_table(t, p, data_page_size=64, use_dictionary=False, data_page_version="2.0", store_schema=False)
    assert pq.ParquetFile(p).metadata.num_rows == 1
    assert read_hf(p).column("c0").to_pylist() == [[None]]


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
