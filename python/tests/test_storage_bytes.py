"""Every byte of the columns a job reads comes from storage once per epoch, in every order:
``launch --workers 2`` over ``hydrofeed gen``'s rows written by pyarrow (8 files, row groups of
8,192 rows, snappy), one epoch, the feeders' own count of the bytes they read from storage
against the input's column chunks (pyarrow's metadata). The bound: 1.05x the input, plus one
row group per rank boundary (the row group where rank 1's share starts is read by both ranks);
a resumed epoch may also read again the page each lane stopped in, with the dictionary pages
(the files have an offset index, as Spark writes them: the pages before stay unread).

Not by caching: the input is more than 4x ``--memory-mb``, and the feeder's peak RSS stays
under its stated bound, under the input: the rings, the batches in flight (or the fixed
order's two windows), one fetched row group per lane (8 lanes a rank), and the process's own
80 MiB.

Before order version 2, the fixed order's lanes (cut at equal rows) re-read the row group at
every lane boundary and at every lane's wrap: 3.6x, and 5.9x with a shuffle buffer.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.timeout(600)

TRAINER = str(Path(__file__).parent / "launch_trainer.py")
ROWS, FILES, GROUP, BATCH, MEMORY_MB, LANES, BUFFER = 640_000, 8, 8192, 250, 64, 8, 500
STOP_AFTER = ROWS // 2 // BATCH // 3  # steps of the first run of a resumed epoch
PAGE = 256 << 10  # pyarrow's data page size here: the offset index locates pages this large


@pytest.fixture(scope="module")
def data(hf_bin: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("storage")
    subprocess.run([hf_bin, "gen", "--format", "parquet", "--rows", str(ROWS), "--files", str(FILES),
                    "--out", str(tmp / "gen")], check=True, capture_output=True)
    out = tmp / "data"
    out.mkdir()
    for f in sorted((tmp / "gen").glob("*.parquet")):
        pq.write_table(pq.read_table(f), out / f.name, row_group_size=GROUP, compression="snappy",
                       write_page_index=True, data_page_size=PAGE)
        f.unlink()
    return out


def column_bytes(data: Path) -> tuple[int, int]:
    """(bytes of every column chunk, bytes of the largest row group's chunks)."""
    total, largest = 0, 0
    for f in sorted(data.glob("*.parquet")):
        md = pq.ParquetFile(f).metadata
        for i in range(md.num_row_groups):
            rg = md.row_group(i)
            n = sum(rg.column(j).total_compressed_size for j in range(rg.num_columns))
            total += n
            largest = max(largest, n)
    return total, largest


def launch(hf_bin: str, data: Path, out: Path, *flags: str, env: dict[str, str] | None = None) -> tuple[int, float, str]:
    """Runs one epoch; returns (exit status, MB read from storage over every rank, stderr)."""
    out.mkdir(exist_ok=True)
    if "--resume" not in flags and "dynamic" not in flags:
        flags = ("--cycle-length", str(LANES), *flags)
    p = subprocess.run(
        [hf_bin, "launch", "--workers", "2", "--input", str(data), "--batch-size", str(BATCH),
         "--epochs", "1", "--memory-mb", str(MEMORY_MB), *flags, "--", sys.executable, TRAINER],
        env=dict(os.environ, OUT=str(out), **(env or {})), capture_output=True, text=True, timeout=500,
    )
    mb = [float(m) for m in re.findall(r"rank \d+: .*?; ([0-9.]+) MB read from storage", p.stderr)]
    assert len(mb) == 2, p.stderr[-3000:]
    return p.returncode, sum(mb), p.stderr


def max_rss_mib(err: str) -> float:
    m = re.search(r"hydrofeed feeder: cpu [0-9.]+ s, max RSS ([0-9.]+) MiB", err)
    assert m, err[-3000:]
    return float(m.group(1))


ORDERS = {
    "fixed": [],
    "fixed, shuffle buffer": ["--shuffle-buffer", str(BUFFER)],
    "dynamic": ["--order", "dynamic"],
}


def rss_bound_mib(unit: int, row_bytes: float) -> float:
    """The feeder's stated bound (docs/arch/daemon.md): per rank its ring and its budget (a
    quarter of the memory each, 2 ranks), or the fixed order's windows when they are larger
    (one sent, one read and waiting, the next being read), and a fetched row group per lane;
    and the process itself."""
    quarter = MEMORY_MB / 4
    windows = 3 * max(512 * LANES, BUFFER + LANES) * row_bytes / 2**20
    return 80 + 2 * (quarter + max(quarter, windows) + LANES * unit / 2**20)


@pytest.mark.parametrize("order", [*ORDERS, "fixed, resumed", "fixed, shuffle buffer, resumed"])
def test_each_column_byte_is_read_once(hf_bin: str, data: Path, tmp_path: Path, order: str) -> None:
    total, unit = column_bytes(data)
    assert total > 4 * (MEMORY_MB << 20), "the input must be over 4x the memory budget"
    row_bytes = 8 + 784 * 4 + 8  # id, image, label as decoded
    rss_bound = rss_bound_mib(unit, row_bytes)
    assert rss_bound < total / 2**20, "the RSS bound must be under the input"
    bound = 1.05 + unit / total
    if order.endswith("resumed"):
        flags = ORDERS[order.removesuffix(", resumed")]
        rc, mb1, err = launch(hf_bin, data, tmp_path / "out1", *flags,
                              env={"STOP_AFTER": str(STOP_AFTER)})
        assert rc == 0, err[-3000:]
        state = tmp_path / "out1" / "state.json"
        assert state.exists(), err[-3000:]
        rc, mb2, err = launch(hf_bin, data, tmp_path / "out2", "--resume", str(state))
        assert rc == 0, err[-3000:]
        mb = mb1 + mb2
        # The first run fetched whole row groups ahead of where it stopped (a lane fetches a
        # row group at a time, two windows ahead): up to one a lane.
        bound += 2 * LANES * unit / total
        # The resumed run reads the rest, from inside the row group each lane (8 a rank)
        # stopped in: again only the page it stopped in and the dictionary pages, of its 3
        # columns (the offset index locates the pages: those before stay unread).
        rest = 1 - 2 * BATCH * STOP_AFTER / ROWS
        bound2 = 1.05 * rest + (unit + 2 * LANES * (3 * PAGE + (128 << 10))) / total
        ratio2 = mb2 * 1e6 / total
        print(f"{order}: the resumed run read {ratio2:.3f}x for {rest:.3f} of the rows "
              f"(bound {bound2:.3f}x)")
        assert ratio2 <= bound2, f"{order}: resumed run {ratio2:.3f}x\n{err[-2000:]}"
    else:
        rc, mb, err = launch(hf_bin, data, tmp_path / "out", *ORDERS[order])
        assert rc == 0, err[-3000:]
    ratio = mb * 1e6 / total
    print(f"{order}: {mb:.1f} MB read for {total / 1e6:.1f} MB of column chunks: {ratio:.3f}x "
          f"(bound {bound:.3f}x)")
    assert ratio <= bound, f"{order}: {ratio:.3f}x the input read from storage\n{err[-2000:]}"
    # Every row came, so every column chunk was read: the ratio cannot pass by reading less.
    assert ratio >= 0.95, ratio
    rss = max_rss_mib(err)
    print(f"{order}: feeder peak RSS {rss:.0f} MiB (bound {rss_bound:.0f} MiB)")
    assert rss <= rss_bound, f"feeder peak RSS {rss:.0f} MiB over {rss_bound:.0f} MiB"
