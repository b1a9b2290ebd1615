"""``hydrofeed.read``: an input's batches as ``pyarrow.RecordBatch``, in this process."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa

from hydrofeed._native import Reader


def read(
    path: str,
    columns: Sequence[str] | None = None,
    format: str | None = None,
    on_error: str = "raise",
    batch_rows: int = 65536,
) -> Iterator[pa.RecordBatch]:
    """Reads ``path`` (file, directory, glob; local or ``hdfs://``) and yields its batches.

    ``format`` is ``"parquet"``, ``"orc"``, ``"avro"`` or ``"tfrecord"`` when file names do not
    tell. ``on_error="raise"`` stops at corrupt input with :class:`hydrofeed.DataError` naming
    file and byte offset; ``"skip"`` skips (and counts) bad records. Decoding runs with the GIL
    released. The batches are handed over through the Arrow C data interface without a copy.
    """
    reader = Reader(
        path,
        columns=list(columns) if columns is not None else None,
        format=format,
        on_error=on_error,
        batch_rows=batch_rows,
    )
    return iter(reader)
