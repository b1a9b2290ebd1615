"""Differential tests, TFRecord: tf.io.TFRecordWriter writes tf.train.Example records,
tf.data.TFRecordDataset and tf.io.parse_example are the reference.

What every format shares (profiles, comparison, strategies) is in ``differential.py``.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hydrofeed as hf
from differential import I64, PROFILE, TIMEOUT, assert_same, column_values, n_rows, project, read_hf, read_options


pytestmark = TIMEOUT


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


def test_tfrecord_feature_name_with_nul(tmp_path: Path) -> None:
    # Arrow's C data interface (how batches reach pyarrow) cuts names at a NUL: such a name is
    # refused at planning, naming it, instead of reading a column '' of nulls.
    p = tmp_path / "n.tfrecord"
    write_tfrecord(p, TfCase([{"a\x00b": ("int64", [7])}], "", {}))
    with pytest.raises(hf.SchemaError, match=r"NUL"):
        read_hf(p)
