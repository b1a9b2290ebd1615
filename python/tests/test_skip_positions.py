"""`launch --skip-errors` over a Parquet file with a corrupt row group: the rows of that row
group are missing and no other row moves. Each lost row is replaced by a padding row (a copy of
a readable row of the same split), so every later row keeps its position, every rank keeps
its steps, and a row group read by two readers (a lease or lane starting inside the split) is
never read twice (docs/arch/daemon.md, "Skipped corruption").

Input: 3 Parquet files (pyarrow, uncompressed pages, no dictionary) x 4 row groups of 250
rows; file `i` holds ids `i*1000 .. (i+1)*1000`. The page header of row group 1 of file 1
(ids 1250..1500) is overwritten, so that row group cannot be decoded.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from test_launch import dropped, launch, no_leftovers, records, steps_of

FILES, PER_FILE, GROUP = 3, 1000, 250
BAD = set(range(1250, 1500))


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("corrupt_rg")
    for i in range(FILES):
        t = pa.table({"id": pa.array(range(i * PER_FILE, (i + 1) * PER_FILE), pa.int64()),
                      "x": pa.array([float(v) for v in range(PER_FILE)], pa.float32())})
        p = d / f"part-{i:05d}.parquet"
        pq.write_table(t, p, row_group_size=GROUP, compression="none", use_dictionary=False)
    p = d / "part-00001.parquet"
    col = pq.ParquetFile(p).metadata.row_group(1).column(0)
    b = bytearray(p.read_bytes())
    at = col.data_page_offset
    b[at:at + 16] = b"\xff" * 16  # the page header: not Thrift any more
    p.write_bytes(bytes(b))
    with pytest.raises(Exception):
        pq.read_table(p)
    return d


@pytest.mark.parametrize("workers,order", [
    (1, []), (2, []), (2, ["--shuffle-buffer", "300", "--cycle-length", "3"]),
    (2, ["--order", "dynamic"]),
])
def test_a_skipped_row_group_moves_no_other_row(
    hf_bin: str, data: Path, tmp_path: Path, workers: int, order: list[str]
) -> None:
    r = launch(hf_bin, data, tmp_path, workers, "--skip-errors", "--seed", "3", *order,
               batch=50, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    ids: list[int] = []
    steps = []
    for rank in range(workers):
        s = steps_of(records(tmp_path, rank))
        steps.append(len(s))
        for rec in s:
            ids.extend(rec["ids"])
    every = set(range(FILES * PER_FILE))
    got = Counter(ids)
    assert not (set(got) & BAD), sorted(set(got) & BAD)[:5]
    drop = dropped(r.stderr)
    # Every readable row, less the rest dropped for equal steps.
    assert len(every - BAD - set(got)) <= drop, sorted(every - BAD - set(got))[:10]
    assert len(steps) == workers and len(set(steps)) == 1, steps
    # What came more than once is padding standing for the 250 lost rows (copies of readable
    # rows of the same split), never more: another row group read twice would exceed it.
    twice = {i: n for i, n in got.items() if n > 1}
    assert sum(n - 1 for n in twice.values()) <= len(BAD), twice
    assert set(twice) <= set(range(PER_FILE, 2 * PER_FILE)), sorted(set(twice))[:10]
    assert "padded" in r.stderr and "part-00001.parquet" in r.stderr, r.stderr[-3000:]
    no_leftovers(str(tmp_path))
