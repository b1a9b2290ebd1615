"""`hydrofeed launch --skip-errors` over a unit corrupted on disk: exactly once by position.

Files written by independent writers (pyarrow, pyorc, fastavro) hold ids 0..N-1 in several
units (row groups, stripes, blocks); one unit's bytes are overwritten on disk. The trainer is
`launch_trainer.py` (it logs every id it gets, per step). Under the fixed order, with a
shuffle buffer and under the dynamic order: every readable id comes (those the fixed order
drops aside), the corrupt unit's never, no readable row twice except the padding rows that
took the skipped rows' positions (counted, and named in the state and the summary), every
rank the same steps of full batches.

Without `--skip-errors` the trainer sees whole batches only, then the error.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

HERE = Path(__file__).resolve().parent
TRAINER = str(HERE / "launch_trainer.py")
BATCH = 64
WORKERS = 2
FILES = 4
ROWS = 5000  # per file
UNIT = 1000  # rows per row group / stripe / block
BAD_FILE = 1
BAD_UNIT = 2  # ids BAD_FILE * ROWS + [2000, 3000)
TOTAL = FILES * ROWS
BAD_IDS = set(range(BAD_FILE * ROWS + BAD_UNIT * UNIT, BAD_FILE * ROWS + (BAD_UNIT + 1) * UNIT))

ORDERS = {
    "fixed": [],
    "shuffle_buffer": ["--shuffle-buffer", "3000"],
    "dynamic": ["--order", "dynamic"],
}


def overwrite(path: Path, at: int, n: int) -> None:
    b = bytearray(path.read_bytes())
    b[at:at + n] = b"\xff" * n
    path.write_bytes(bytes(b))


def write_parquet(d: Path) -> Path:
    """FILES files of ROWS rows in row groups of UNIT; row group BAD_UNIT of file BAD_FILE has
    the page header of its `id` column overwritten."""
    d.mkdir()
    for f in range(FILES):
        t = pa.table({
            "id": pa.array(range(f * ROWS, (f + 1) * ROWS), pa.int64()),
            "x": pa.array([float(v) for v in range(ROWS)], pa.float32()),
        })
        pq.write_table(t, d / f"part-{f:05d}.parquet", row_group_size=UNIT)
    bad = d / f"part-{BAD_FILE:05d}.parquet"
    col = pq.ParquetFile(bad).metadata.row_group(BAD_UNIT).column(0)
    start = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
    overwrite(bad, start, 16)
    return bad


def write_orc(d: Path) -> Path:
    """As `write_parquet`, with pyorc: stripes of UNIT rows; stripe BAD_UNIT's data
    overwritten."""
    pyorc = pytest.importorskip("pyorc")
    d.mkdir()
    for f in range(FILES):
        with open(d / f"part-{f:05d}.orc", "wb") as out:
            # A tiny stripe size: the writer cuts a stripe after every batch of UNIT rows.
            with pyorc.Writer(out, "struct<id:bigint,x:float>", stripe_size=1, batch_size=UNIT,
                              memory_block_size=1024, compression_block_size=1024,
                              compression=pyorc.CompressionKind.ZLIB) as w:
                for i in range(f * ROWS, (f + 1) * ROWS):
                    w.write((i, float(i)))
    bad = d / f"part-{BAD_FILE:05d}.orc"
    with open(bad, "rb") as fh:
        stripes = list(pyorc.Reader(fh).iter_stripes())
        info = [(s.bytes_offset, s.bytes_length, len(s)) for s in stripes]
    assert [n for _, _, n in info] == [UNIT] * (ROWS // UNIT), info
    off, length, _ = info[BAD_UNIT]
    overwrite(bad, off, length // 2)
    return bad


def write_avro(d: Path) -> Path:
    """As `write_parquet`, with fastavro: blocks of UNIT records; block BAD_UNIT's data
    overwritten (its header and sync marker kept, so the plan still counts it)."""
    fastavro = pytest.importorskip("fastavro")
    d.mkdir()
    schema = fastavro.parse_schema({
        "type": "record", "name": "r",
        "fields": [{"name": "id", "type": "long"}, {"name": "x", "type": "float"}],
    })
    for f in range(FILES):
        with open(d / f"part-{f:05d}.avro", "wb") as out:
            w = fastavro.write.Writer(out, schema, codec="deflate", sync_interval=1 << 30)
            for i in range(f * ROWS, (f + 1) * ROWS):
                w.write({"id": i, "x": float(i)})
                if (i + 1) % UNIT == 0:
                    w.flush()
            w.flush()
    bad = d / f"part-{BAD_FILE:05d}.avro"
    with open(bad, "rb") as fh:
        blocks = [(b.offset, b.size, b.num_records) for b in fastavro.block_reader(fh)]
    assert [n for _, _, n in blocks] == [UNIT] * (ROWS // UNIT), blocks
    off, size, _ = blocks[BAD_UNIT]
    # The block's data ends 16 bytes (its sync marker) before the next block's offset.
    end = blocks[BAD_UNIT + 1][0] - 16
    overwrite(bad, end - size // 2, size // 4)
    return bad


WRITERS = {"parquet": write_parquet, "orc": write_orc, "avro": write_avro}


def launch(hf_bin: str, data: Path, out: Path, *extra: str, env: dict | None = None):
    out.mkdir(parents=True, exist_ok=True)
    e = dict(os.environ, OUT=str(out), **(env or {}))
    return subprocess.run(
        [hf_bin, "launch", "--workers", str(WORKERS), "--input", str(data),
         "--batch-size", str(BATCH), *extra, "--", sys.executable, TRAINER],
        env=e, capture_output=True, text=True, timeout=180,
    )


def steps(out: Path, rank: int) -> list[list[int]]:
    lines = (out / f"rank-{rank}.jsonl").read_text().splitlines()
    return [r["ids"] for r in map(json.loads, lines) if "ids" in r]


def summary_of(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("hydrofeed launch: ")]
    assert lines, stderr[-3000:]
    return lines[-1]


@pytest.mark.parametrize("fmt", list(WRITERS))
@pytest.mark.parametrize("order", list(ORDERS))
def test_skipped_unit_keeps_every_position(hf_bin: str, tmp_path: Path, fmt: str, order: str) -> None:
    bad = WRITERS[fmt](tmp_path / "data")
    out = tmp_path / "out"
    state_path = tmp_path / "state.json"
    r = launch(hf_bin, tmp_path / "data", out, "--skip-errors", "--state-out", str(state_path),
               *ORDERS[order])
    assert r.returncode == 0, r.stderr[-3000:]
    per_rank = [steps(out, k) for k in range(WORKERS)]
    # Equal steps of full batches: the job's steps, as if nothing was skipped.
    want_steps = TOTAL // (WORKERS * BATCH)
    assert [len(s) for s in per_rank] == [want_steps] * WORKERS, [len(s) for s in per_rank]
    assert all(len(b) == BATCH for s in per_rank for b in s)
    ids = [i for s in per_rank for b in s for i in b]
    seen = Counter(ids)
    # The corrupt unit's rows never come.
    assert not BAD_IDS & set(seen), sorted(BAD_IDS & set(seen))[:10]
    state = json.loads(state_path.read_text())
    skipped = state.get("skipped", [])
    assert skipped, state
    dropped = int(re.search(r"\((\d+) dropped\)", summary_of(r.stderr)).group(1))
    # The skipped range names the file and the unit's rows (less what the order dropped).
    assert {s["path"] for s in skipped} == {str(bad)}, skipped
    split_rows = [(s["start"], s["end"]) for s in skipped]
    assert all(UNIT * BAD_UNIT <= a < b <= UNIT * (BAD_UNIT + 1) for a, b in split_rows), skipped
    padded = sum(b - a for a, b in split_rows)
    assert UNIT - dropped <= padded <= UNIT, (padded, dropped)
    assert state["rows_padded"] == padded, state["rows_padded"]
    # No readable row twice: the only repeats are the padding rows, one per skipped position.
    assert len(ids) - len(seen) == padded, (len(ids), len(seen), padded)
    assert len(seen) >= TOTAL - UNIT - dropped, (len(seen), dropped)
    s = summary_of(r.stderr)
    assert f"{padded} rows skipped and padded" in s and str(bad) in s, s
    rows = re.search(r"rows \[(\d+), (\d+)\)", s)
    assert rows and UNIT * BAD_UNIT <= int(rows.group(1)), s


def test_read_error_reaches_the_trainer_at_a_batch_boundary(hf_bin: str, tmp_path: Path) -> None:
    """Without --skip-errors: the trainer (asking for its batch size) sees whole batches only,
    then the error naming the file; never a short batch first."""
    bad = write_parquet(tmp_path / "data")
    out = tmp_path / "out"
    r = launch(hf_bin, tmp_path / "data", out, "--order", "dynamic",
               env={"BATCH": str(BATCH)})
    assert r.returncode != 0, r.stderr[-3000:]
    assert str(bad) in r.stderr, r.stderr[-3000:]
    for k in range(WORKERS):
        sizes = [len(b) for b in steps(out, k)]
        assert all(n == BATCH for n in sizes), (k, sizes)
