"""RDD rows <-> Arrow record batches.

Feeding tasks turn the Python rows of an RDD into Arrow record batches *before* they travel
(columnar, one copy), and the trainer turns them back into what TFoS's ``DataFeed`` returned:
rows (tuples/lists/scalars/dicts as fed) or, with ``input_mapping``, a dict of numpy columns.

Column types: a numpy array or list of numbers of the same length in every row becomes a
``fixed_size_list`` (a dense 2-D numpy array on the trainer side); other values pyarrow can
type stay Arrow; anything else (arbitrary objects) travels pickled in a binary column marked
``hf.pickled`` -- still per batch, never one message per row.
"""

from __future__ import annotations

import itertools
import pickle
from typing import Any, Iterable, Iterator

import numpy as np
import pyarrow as pa

ROW_KIND = b"hf.row"  # schema metadata: tuple | list | scalar | dict | row
PICKLED = b"hf.pickled"


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


def _column(values: list) -> tuple[pa.Array, bool]:
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


def rows_to_batch(rows: list) -> pa.RecordBatch:
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
        arr, pickled = _column(list(col))
        arrays.append(arr)
        fields.append(pa.field(name, arr.type, metadata={PICKLED: b"1"} if pickled else None))
    schema = pa.schema(fields, metadata={ROW_KIND: kind.encode()})
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def batches_from_rows(rows: Iterable, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """Groups an iterator of rows into record batches of ``batch_rows`` rows."""
    it = iter(rows)
    while True:
        chunk = list(itertools.islice(it, batch_rows))
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


def batch_to_rows(rb: pa.RecordBatch) -> list:
    """Record batch -> list of rows shaped like the rows that were fed."""
    meta = rb.schema.metadata or {}
    kind = meta.get(ROW_KIND, b"tuple").decode()
    cols = [column_to_numpy(rb.column(i), rb.schema.field(i)) for i in range(rb.num_columns)]
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


def batch_to_columns(rb: pa.RecordBatch, input_mapping: dict[str, str]) -> dict[str, Any]:
    """Record batch -> {tensor name: numpy column} using TFoS's ``input_mapping``
    ({column: tensor}). Columns are found by name; rows fed without names (RDD tuples) map
    positionally in sorted column order, as TFoS does."""
    out: dict[str, Any] = {}
    names = rb.schema.names
    ordered = sorted(input_mapping.items())
    for i, (colname, tensor) in enumerate(ordered):
        if colname in names:
            j = names.index(colname)
        elif i < rb.num_columns:
            j = i
        else:
            raise KeyError(f"input_mapping column {colname!r} is not in the fed data (columns: {names})")
        out[tensor] = column_to_numpy(rb.column(j), rb.schema.field(j))
    return out
