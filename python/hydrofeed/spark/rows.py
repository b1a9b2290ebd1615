"""RDD rows <-> Arrow record batches.

Feeding tasks turn the Python rows of an RDD into Arrow record batches *before* they travel
(columnar, one copy), and the trainer turns them back into what TFoS's ``DataFeed`` returned:
rows of the objects that were fed (tuples/lists/scalars/dicts/``Row``s; inside them lists as
lists, numbers as Python numbers, numpy arrays as numpy arrays) or, with ``input_mapping``, a
dict of numpy columns (the fast path).

Column types: a numpy array or list of numbers of the same length in every row becomes a
``fixed_size_list`` (a dense 2-D numpy array under ``input_mapping``); other values pyarrow can
type stay Arrow; anything else (arbitrary objects) travels pickled in a binary column marked
``hf.pickled`` -- still per batch, never one message per row. A column fed as Python objects
is marked ``hf.obj`` (``list``, ``tuple`` or ``py``), so that the rows give them back as such.
"""

from __future__ import annotations

import itertools
import pickle
from typing import Any, Iterable, Iterator, NamedTuple

import numpy as np
import pyarrow as pa

from hydrofeed import _native
from hydrofeed._deprecated import renamed_keyword

ROW_KIND = b"hf.row"  # schema metadata: tuple | list | scalar | dict | row | pickled | objects
PICKLED = b"hf.pickled"
# Field metadata: the column's values were Python objects (``list``, ``tuple``, or ``py`` for
# numbers, strings, bytes, dicts): the object path gives them back as such, as TFoS does.
OBJ = b"hf.obj"


# Rows forwarded as Spark pickled them (see :func:`pickled_chunks`): one binary column, each
# value one element of the RDD as Spark stores it; ``hf.batched`` says it is a pickled list of
# rows (Spark's batched serializers), else one pickled row.
BATCHED = b"hf.batched"
_FRAME_BYTES = 1 << 20  # pickled bytes per ring frame (256 KiB before: the trainer's CPU ~15% more)


class PickledChunk(NamedTuple):
    """About 1 MiB of Spark's pickled elements, as a feeding task forwards them (see
    :func:`pickled_chunks`): the ring writer puts them into its slot as the one binary column
    of :func:`pickled_frames`, copying each ``bytes`` object's bytes once, from where it is."""

    blobs: list[bytes]
    batched: bool

    @property
    def num_rows(self) -> int:
        """The elements it holds (lists of rows where ``batched``)."""
        return len(self.blobs)

    @property
    def nbytes(self) -> int:
        """The pickled bytes it holds."""
        return sum(map(len, self.blobs))

    def slice(self, offset: int, length: int | None = None) -> PickledChunk:
        """Its elements ``offset`` to ``offset + length`` (to the end by default), as
        ``RecordBatch.slice`` cuts rows: a chunk too large for the ring is split like a batch."""
        end = None if length is None else offset + length
        return PickledChunk(self.blobs[offset:end], self.batched)

    def to_batch(self) -> pa.RecordBatch:
        """The frame's record batch, as the trainer reads it from the ring."""
        field = pa.field("pickled", pa.binary(), metadata={BATCHED: b"1" if self.batched else b"0"})
        schema = pa.schema([field], metadata={ROW_KIND: b"pickled"})
        return pa.RecordBatch.from_arrays([pa.array(self.blobs, pa.binary())], schema=schema)


def pickled_chunks(blobs: Iterable[bytes], batched: bool) -> Iterator[PickledChunk]:
    """A feeding task's frames of an RDD whose elements Spark hands over still pickled
    (:func:`hydrofeed.spark.tasks.pickled_source`): about 1 MiB of them a frame, never
    unpickled here."""
    chunk: list[bytes] = []
    size = 0
    for b in blobs:
        chunk.append(b)
        size += len(b)
        if size >= _FRAME_BYTES:
            yield PickledChunk(chunk, batched)
            chunk, size = [], 0
    if chunk:
        yield PickledChunk(chunk, batched)


def pickled_frames(blobs: Iterable[bytes], batched: bool) -> Iterator[pa.RecordBatch]:
    """The record batches of :func:`pickled_chunks`: one binary column, each value one
    element; ``hf.batched`` in its field's metadata, ``hf.row`` = ``pickled`` in the schema's."""
    return (c.to_batch() for c in pickled_chunks(blobs, batched))


def unpickled(blobs: Iterable[Any], batched: bool) -> Iterator[Any]:
    """The rows of Spark's pickled elements (bytes-like; lists of rows where ``batched``)."""
    for b in blobs:
        obj = pickle.loads(b)
        if batched:
            yield from obj
        else:
            yield obj


def numeric_row(row: Any) -> bool:
    """Whether a row's values are all numpy arrays or scalars, numbers or None: rows Arrow
    carries as cheaply as pickle does, so converting them in the feeding task keeps that work
    spread over Spark's task slots. Rows holding lists, strings, dicts or other objects are
    cheaper forwarded pickled: turning Python objects into Arrow and back costs more than
    unpickling them once."""
    if isinstance(row, dict):
        values: Iterable[Any] = row.values()
    elif isinstance(row, (tuple, list)):
        values = row
    else:
        values = (row,)
    return all(v is None or isinstance(v, (np.ndarray, np.generic, int, float)) for v in values)


def is_pickled(rb: pa.RecordBatch) -> bool:
    """Whether ``rb`` is a frame of :func:`pickled_frames`."""
    return (rb.schema.metadata or {}).get(ROW_KIND) == b"pickled"


def unpickle_frame(rb: pa.RecordBatch) -> list[Any]:
    """The rows of a frame of :func:`pickled_frames`, the objects that were in the RDD: what
    ``pickle.loads`` makes of each element, by the extension's decoder of the opcodes rows of
    numbers, strings and containers are made of (``pickle.loads`` for the rest; about a fifth
    less time on rows of floats, under the trainer's GIL: ``python/src/unpickle.rs``)."""
    batched = (rb.schema.field(0).metadata or {}).get(BATCHED) == b"1"
    out: list[Any] = _native.unpickle_frame(rb.column(0), batched)
    return out


OBJECTS_SCHEMA = pa.schema([pa.field("rows", pa.null())], metadata={ROW_KIND: b"objects"})


def objects_batch(n: int) -> pa.RecordBatch:
    """A record batch of ``n`` rows and no data, standing for ``n`` Python rows held beside
    it: what the trainer's cutter counts and cuts while the rows themselves stay objects."""
    return pa.RecordBatch.from_arrays([pa.nulls(n)], schema=OBJECTS_SCHEMA)


def _obj_kind(values: list[Any]) -> str | None:
    """What Python objects a column was fed as (None: numpy values, kept numpy)."""
    first = next((v for v in values if v is not None), None)
    if isinstance(first, (np.ndarray, np.generic)):
        return None
    if isinstance(first, list):
        return "list"
    if isinstance(first, tuple):
        return "tuple"
    return "py"


def _row_kind(row: Any) -> str:
    try:
        from pyspark.sql import Row

        if isinstance(row, Row):
            return "row"
    except ImportError:  # pragma: no cover - pyspark always present where this runs
        pass
    if isinstance(row, tuple):
        return "tuple"
    if isinstance(row, list):
        return "list"
    if isinstance(row, dict):
        return "dict"
    return "scalar"


def _column(values: list[Any]) -> tuple[pa.Array, bool]:
    first = values[0]
    if isinstance(first, np.ndarray) or (isinstance(first, (list, tuple)) and first and isinstance(first[0], (int, float))):
        try:
            arr = np.asarray(values)
            if arr.ndim == 2 and arr.dtype != object:
                flat = pa.array(arr.reshape(-1))
                return pa.FixedSizeListArray.from_arrays(flat, arr.shape[1]), False
        except ValueError:
            pass  # ragged: fall through
    if isinstance(first, np.generic):
        return pa.array(np.asarray(values)), False
    try:
        return pa.array(values), False
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
        return pa.array([pickle.dumps(v, protocol=5) for v in values], type=pa.binary()), True


def rows_to_batch(rows: list[Any]) -> pa.RecordBatch:
    """Converts a non-empty list of rows of one shape into a record batch."""
    kind = _row_kind(rows[0])
    cols: list[Any]
    if kind in ("tuple", "list"):
        names = [f"_{i}" for i in range(len(rows[0]))]
        cols = list(zip(*rows)) if names else []
    elif kind == "row":
        names = list(rows[0].__fields__)
        cols = list(zip(*rows))
    elif kind == "dict":
        names = list(rows[0].keys())
        cols = [[r[n] for r in rows] for n in names]
    else:
        names = ["_0"]
        cols = [rows]
    arrays, fields = [], []
    for name, col in zip(names, cols):
        values = list(col)
        arr, pickled = _column(values)
        arrays.append(arr)
        obj = None if pickled else _obj_kind(values)
        meta = {PICKLED: b"1"} if pickled else ({OBJ: obj.encode()} if obj else None)
        fields.append(pa.field(name, arr.type, metadata=meta))
    schema = pa.schema(fields, metadata={ROW_KIND: kind.encode()})
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


@renamed_keyword("batch_rows", "batch_size")
def batches_from_rows(rows: Iterable[Any], batch_size: int) -> Iterator[pa.RecordBatch]:
    """Groups an iterator of rows into record batches of ``batch_size`` rows (the last may be
    shorter). ``batch_rows=``, the old name, still works but warns."""
    it = iter(rows)
    while True:
        chunk = list(itertools.islice(it, batch_size))
        if not chunk:
            return
        yield rows_to_batch(chunk)


def column_to_numpy(col: pa.Array | pa.ChunkedArray, field: pa.Field) -> Any:
    """Arrow column -> numpy (2-D for fixed-size lists, object array of unpickled values for
    pickled columns)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if field.metadata and field.metadata.get(PICKLED):
        return [pickle.loads(v) for v in col.to_pylist()]
    if pa.types.is_fixed_size_list(col.type):
        width = col.type.list_size
        values = col.flatten().to_numpy(zero_copy_only=False)
        return values.reshape(len(col), width)
    if (pa.types.is_list(col.type) or pa.types.is_large_list(col.type)) and col.null_count == 0:
        # Spark array columns: a dense 2-D array when every row has the same length (what a
        # model wants), else one numpy view per row; the element dtype is kept either way.
        offsets = col.offsets.to_numpy()
        values = col.flatten().to_numpy(zero_copy_only=False)
        lengths = np.diff(offsets)
        if len(col) and (lengths == lengths[0]).all():
            return values.reshape(len(col), lengths[0])  # flatten() already honours a slice
        return [values[a - offsets[0] : b - offsets[0]] for a, b in zip(offsets[:-1], offsets[1:])]
    if pa.types.is_list(col.type) or pa.types.is_large_list(col.type):
        return [np.asarray(v) if v is not None else None for v in col.to_pylist()]
    return col.to_numpy(zero_copy_only=False)


def _sliceable(col: pa.Array, field: pa.Field) -> bool:
    """Whether ``column_to_numpy(col)[a:b]`` equals ``column_to_numpy(col.slice(a, b - a))``:
    no nulls anywhere (a slice without nulls would get another dtype), not pickled, and lists
    of one length (a slice of a ragged column may be uniform and come back 2-D)."""
    if col.null_count or (field.metadata and field.metadata.get(PICKLED)):
        return False
    t = col.type
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
        return True
    if pa.types.is_fixed_size_list(t) or pa.types.is_list(t) or pa.types.is_large_list(t):
        v = t.value_type
        dense: bool = (pa.types.is_integer(v) or pa.types.is_floating(v) or pa.types.is_boolean(v)) and col.flatten().null_count == 0
        return dense
    return False


def numpy_columns(rb: pa.RecordBatch) -> list[Any]:
    """Every column of a whole batch as numpy (zero-copy views where Arrow allows), or None for
    a column whose slices must be converted one by one (see :func:`_sliceable`). Slicing these
    arrays gives exactly what converting the sliced batch gives, at numpy-slice cost."""
    out: list[Any] = []
    for i in range(rb.num_columns):
        col, field = rb.column(i), rb.schema.field(i)
        v = column_to_numpy(col, field) if _sliceable(col, field) else None
        out.append(v if isinstance(v, np.ndarray) else None)
    return out


def slice_columns(rb: pa.RecordBatch, whole: list[Any] | None, off: int, k: int, need: Any = None) -> list[Any]:
    """The numpy columns of rows ``off:off+k`` of ``rb``, from ``whole`` (see
    :func:`numpy_columns`) where possible; only the column indices in ``need`` (None: all),
    the others are None."""
    piece: pa.RecordBatch | None = None
    out: list[Any] = []
    for i in range(rb.num_columns):
        w = whole[i] if whole is not None else None
        if need is not None and i not in need:
            out.append(None)
        elif w is not None:
            out.append(w[off : off + k])
        else:
            piece = piece if piece is not None else rb.slice(off, k)
            out.append(column_to_numpy(piece.column(i), rb.schema.field(i)))
    return out


def batch_to_rows(rb: pa.RecordBatch, cols: list[Any] | None = None, objs: dict[int, str] | None = None) -> list[Any]:
    """Record batch -> list of rows shaped like the rows that were fed (``cols``: its columns
    already converted, e.g. by :func:`slice_columns`; ``objs``: its
    :func:`object_columns`, when the caller has them)."""
    meta = rb.schema.metadata or {}
    kind = meta.get(ROW_KIND, b"tuple").decode()
    if objs is None:
        objs = object_columns(rb.schema)
    if cols is None:
        cols = [None if i in objs else column_to_numpy(rb.column(i), rb.schema.field(i)) for i in range(rb.num_columns)]
    else:
        cols = list(cols)
    for i, how in objs.items():
        # Fed as Python objects: given back as such (TFoS's rows), lists as lists.
        vals = rb.column(i).to_pylist()
        cols[i] = [tuple(v) if v is not None else None for v in vals] if how == "tuple" else vals
    if kind == "scalar":
        return list(cols[0])
    if kind == "dict":
        names = rb.schema.names
        return [dict(zip(names, vals)) for vals in zip(*cols)]
    if kind == "list":
        return [list(vals) for vals in zip(*cols)]
    if kind == "row":
        from pyspark.sql import Row

        names = rb.schema.names
        return [Row(**dict(zip(names, vals))) for vals in zip(*cols)]
    return list(zip(*cols))


def object_columns(schema: pa.Schema) -> dict[int, str]:
    """{column index: how it was fed} for the columns fed as Python objects (see ``OBJ``)."""
    out = {}
    for i, f in enumerate(schema):
        how = (f.metadata or {}).get(OBJ)
        if how:
            out[i] = how.decode()
    return out


def mapping_indices(schema: pa.Schema, input_mapping: dict[str, str]) -> list[tuple[str, int]]:
    """[(tensor, column index)] for TFoS's ``input_mapping`` ({column: tensor}). Columns are
    found by name; rows fed without names (RDD tuples) map positionally in sorted column order,
    as TFoS does."""
    names = schema.names
    out = []
    for i, (colname, tensor) in enumerate(sorted(input_mapping.items())):
        if colname in names:
            out.append((tensor, names.index(colname)))
        elif i < len(names):
            out.append((tensor, i))
        else:
            raise KeyError(f"input_mapping column {colname!r} is not in the fed data (columns: {names})")
    return out


def batch_to_columns(rb: pa.RecordBatch, input_mapping: dict[str, str], cols: list[Any] | None = None) -> dict[str, Any]:
    """Record batch -> {tensor name: numpy column} using TFoS's ``input_mapping`` (see
    :func:`mapping_indices`; ``cols``: its columns already converted)."""
    out: dict[str, Any] = {}
    for tensor, j in mapping_indices(rb.schema, input_mapping):
        out[tensor] = cols[j] if cols is not None else column_to_numpy(rb.column(j), rb.schema.field(j))
    return out
