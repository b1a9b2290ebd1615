"""``hydrofeed.read``: an input's batches as ``pyarrow.RecordBatch``, in this process."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from hydrofeed._native import Reader


def read(
    path: str,
    columns: Sequence[str] | None = None,
    format: str | None = None,
    on_error: str = "raise",
    batch_rows: int = 65536,
    *,
    batch_size: int | None = None,
    schema: pa.Schema | None = None,
    orc_timestamps: str = "instant",
    snapshot: int | str | None = None,
    filter: str | None = None,
    images: str | None = None,
) -> Reader:
    """Reads ``path`` (file, directory, glob; local or ``hdfs://``) and yields its batches.

    The result iterates ``pyarrow.RecordBatch`` es and has ``schema``, ``num_rows`` (from the
    files' metadata) and ``num_splits``. ``batch_size`` makes every batch exactly that many rows
    (across files; the last may be shorter); without it batches are up to ``batch_rows`` rows
    and end at file boundaries. ``schema`` states the schema instead of taking it from the
    files: TFRecord features are then decoded as it says (no inference), Avro files are read
    with it as the reader schema (fields missing from a file take their defaults), Parquet and
    ORC files must match it. Empty (0-byte) files are left out, as Spark does; a dataset whose
    files are all empty needs ``schema``.

    ``format`` is ``"parquet"``, ``"orc"``, ``"avro"`` or ``"tfrecord"`` when file names do not
    tell. ``on_error="raise"`` stops at corrupt input with :class:`hydrofeed.DataError` naming
    file and byte offset; ``"skip"`` skips bad records: the reader's ``skipped`` lists each
    range of rows left out so far (``path``, ``split``, ``start``, ``end``, ``reason``; the
    first 10,000), and ``skipped_records`` and ``skipped_blocks`` count them with those the
    plan could not count (an Avro block that cannot be framed, a TFRecord record with a bad
    CRC). Decoding runs with the GIL released. The batches are handed over through the Arrow C
    data interface without a copy.

    ``orc_timestamps`` says how ORC ``timestamp`` columns written in a zone other than UTC are
    read (docs/formats.md): ``"instant"`` (default) the instants the writer's zone gives their
    wall clocks, as Spark reads them back; ``"wall"`` those wall clocks read as UTC, as Hive
    and pyarrow.orc read them.

    A directory holding ``_delta_log/`` is read as a Delta Lake table: the live files of one
    snapshot, never files a later commit removed. ``snapshot`` is a version (``int``) or an
    RFC 3339 time (the newest commit at or before it); default the newest.

    ``filter`` reads only the rows a SQL predicate holds for, e.g. ``"label IN (1, 7) AND
    day >= '2026-01-01'"``: comparisons, ``IN``, ``BETWEEN``, ``IS NULL``, ``AND``/``OR``/``NOT``
    over columns and partition keys, with SQL's nulls (docs/formats.md, "Filters"). Row groups
    and partitions that statistics rule out are not read; ``num_rows`` counts the rows that
    pass. A predicate that does not parse, or names no column, is a ``ValueError``.

    ``images`` decodes columns of JPEG, PNG or WebP bytes (binary, or ``struct<bytes, path>`` as
    Hugging Face ``datasets`` writes) into ``uint8`` tensor columns of one fixed shape
    ``(H, W, 3)`` (``(N, H, W, 3)`` arrays to the trainer), e.g.
    ``"image=resize:256,randcrop:224,flip"``; ``;`` between columns (docs/formats.md,
    "Images"). A spec that does not parse is a ``ValueError``; a bad image is a
    :class:`hydrofeed.DataError` naming file, row and column (``on_error="skip"`` skips the
    row). With ``gpu`` in a column's spec the JPEG bytes arrive undecoded beside a plan
    column, for :func:`hydrofeed.images.decode` (nvJPEG on a GPU).
    """
    reader = Reader(
        path,
        columns=list(columns) if columns is not None else None,
        format=format,
        on_error=on_error,
        batch_rows=batch_rows,
        batch_size=batch_size,
        schema=schema,
        orc_timestamps=orc_timestamps,
        snapshot=None if snapshot is None else str(snapshot),
        filter=filter,
        images=images,
    )
    return reader
