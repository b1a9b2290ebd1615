"""The fixed order under `hydrofeed launch`, end to end: a seeded shuffle that mixes across files,
the same streams on every run, and resume to the exact row (docs/arch/order.md).

Input: 8 Parquet files (pyarrow) x 25,000 rows with ids stored in order, in row groups of 5,000
rows. Order version 2 (the default) starts each lane where a row group starts, so it mixes a
file's rows across the epoch only when its lanes hold several row groups; on files of one row
group each, version 1 (`--order-version 1`, lanes of equal rows) is the one that does.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from test_launch import data_wide, dropped, launch, no_leftovers, records, steps_of  # noqa: F401

FILES, PER_FILE, GROUP = 8, 25_000, 5_000
TOTAL = FILES * PER_FILE
BATCH = 250
ORDER = ["--epochs", "2", "--shuffle-buffer", "20000"]


def write_sorted(d: Path, row_group: int) -> Path:
    for i in range(FILES):
        ids = pa.array(range(i * PER_FILE, (i + 1) * PER_FILE), pa.int64())
        pq.write_table(pa.table({"id": ids, "x": pa.array(np.zeros(PER_FILE, np.float32))}),
                       d / f"part-{i:05d}.parquet", row_group_size=row_group)
    return d


@pytest.fixture(scope="module")
def sorted8(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_sorted(tmp_path_factory.mktemp("sorted8"), GROUP)


def streams(out: Path, workers: int) -> dict[tuple[int, int], list[list[int]]]:
    """(rank, epoch) -> that rank's batches of ids in that epoch, in order."""
    s: dict[tuple[int, int], list[list[int]]] = {}
    for r in range(workers):
        for rec in steps_of(records(out, r)):
            s.setdefault((r, rec["epoch"]), []).append(rec["ids"])
    return s


def quality(batches: list[list[int]]) -> tuple[float, float, float]:
    """(storage neighbours adjacent in the stream, mean distinct files per batch,
    |corr(position, id)|) of one rank's epoch."""
    ids = np.array([i for b in batches for i in b])
    pos = np.full(TOTAL, -1)
    pos[ids] = np.arange(len(ids))
    both = (pos[:-1] >= 0) & (pos[1:] >= 0)
    adjacent = float(np.mean(np.abs(pos[:-1][both] - pos[1:][both]) == 1))
    files = float(np.mean([len(set(np.array(b) // PER_FILE)) for b in batches]))
    corr = abs(float(np.corrcoef(np.arange(len(ids)), ids)[0, 1]))
    return adjacent, files, corr


@pytest.fixture(scope="module")
def uninterrupted(hf_bin: str, sorted8: Path, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("whole")
    r = launch(hf_bin, sorted8, out, 2, *ORDER, "--seed", "11", batch=BATCH, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return streams(out, 2)


def test_mixes_across_files_exactly_once_with_equal_steps(uninterrupted) -> None:
    s = uninterrupted
    for e in (0, 1):
        ids = [i for r in (0, 1) for b in s[(r, e)] for i in b]
        assert sorted(ids) == list(range(TOTAL)), f"epoch {e}: not every id exactly once"
        assert len(s[(0, e)]) == len(s[(1, e)]) == TOTAL // (2 * BATCH)
        for r in (0, 1):
            assert all(len(b) == BATCH for b in s[(r, e)])
            adjacent, files, corr = quality(s[(r, e)])
            assert adjacent <= 0.01, (r, e, adjacent)
            assert files >= 4, (r, e, files)
            assert corr <= 0.1, (r, e, corr)
    first = {tuple(b) for r in (0, 1) for b in s[(r, 0)]}
    assert not any(tuple(b) in first for r in (0, 1) for b in s[(r, 1)]), "a batch repeated"


def test_one_row_group_a_file_mixes_under_order_version_1(hf_bin: str, tmp_path: Path) -> None:
    """Files of one row group: under version 1 every rank's stream is mixed as the issue of the
    order asked (|corr(position, id)| <= 0.1); version 2 reads each file once but cannot start a
    lane inside its only row group, so its streams follow the storage order more."""
    (tmp_path / "one").mkdir()
    data = write_sorted(tmp_path / "one", PER_FILE)
    corrs = {}
    for v in ("1", "2"):
        out = tmp_path / f"v{v}"
        r = launch(hf_bin, data, out, 2, *ORDER, "--seed", "11", "--order-version", v, batch=BATCH,
                   timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        s = streams(out, 2)
        ids = sorted(i for r_ in (0, 1) for b in s[(r_, 0)] for i in b)
        assert ids == list(range(TOTAL)), f"version {v}: not every id exactly once"
        corrs[v] = max(quality(s[(r_, e)])[2] for r_ in (0, 1) for e in (0, 1))
    print(f"worst |corr(position, id)| on files of one row group: {corrs}")
    assert corrs["1"] <= 0.1, corrs


def test_same_seed_same_streams_other_seed_others(
    hf_bin: str, sorted8: Path, tmp_path: Path, uninterrupted
) -> None:
    r = launch(hf_bin, sorted8, tmp_path / "again", 2, *ORDER, "--seed", "11", batch=BATCH,
               timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert streams(tmp_path / "again", 2) == uninterrupted
    r = launch(hf_bin, sorted8, tmp_path / "other", 2, *ORDER, "--seed", "12", batch=BATCH,
               timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    other = streams(tmp_path / "other", 2)
    for key, batches in uninterrupted.items():
        assert other[key] != batches, key
    no_leftovers(str(tmp_path))


def test_resume_continues_the_exact_streams_or_deals_the_rest_once(
    hf_bin: str, sorted8: Path, tmp_path: Path, uninterrupted
) -> None:
    """The trainers save `state()` after 30 batches and exit; `--resume` with 2 workers gives
    exactly the uninterrupted streams, with 3 workers every row not consumed exactly once."""
    k = 30
    r = launch(hf_bin, sorted8, tmp_path / "a", 2, *ORDER, "--seed", "11", batch=BATCH,
               env={"STOP_AFTER": str(k)}, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    state_file = tmp_path / "a" / "state.json"
    state = json.loads(state_file.read_text())
    # The position is a few segments per rank, not a list of rows.
    assert len(json.dumps(state["order"])) < 400, state["order"]
    before = streams(tmp_path / "a", 2)
    assert [len(before[(r, 0)]) for r in (0, 1)] == [k, k]

    r2 = launch(hf_bin, sorted8, tmp_path / "b", 2, "--resume", str(state_file), batch=None,
                timeout=300)
    assert r2.returncode == 0, r2.stderr[-3000:]
    after = streams(tmp_path / "b", 2)
    for rank in (0, 1):
        assert before[(rank, 0)] + after[(rank, 0)] == uninterrupted[(rank, 0)], rank
        assert after[(rank, 1)] == uninterrupted[(rank, 1)], rank

    r3 = launch(hf_bin, sorted8, tmp_path / "c", 3, "--resume", str(state_file), batch=None,
                timeout=300)
    assert r3.returncode == 0, r3.stderr[-3000:]
    assert "dealt again" in r3.stderr, r3.stderr[-3000:]
    third = streams(tmp_path / "c", 3)
    epoch0 = [i for r in (0, 1) for b in before[(r, 0)] for i in b]
    epoch0 += [i for r in range(3) for b in third.get((r, 0), []) for i in b]
    assert len(epoch0) == len(set(epoch0)), "a row came twice"
    steps = {len(third.get((r, 0), [])) for r in range(3)}
    assert len(steps) == 1, steps
    # Rows left out of epoch 0 to keep steps equal: fewer than one step of 3 workers; epoch 1
    # drops its own remainder too.
    assert TOTAL - len(epoch0) < 3 * BATCH
    epoch1 = [i for r in range(3) for b in third[(r, 1)] for i in b]
    assert len(epoch1) == len(set(epoch1))
    assert dropped(r3.stderr) == (TOTAL - len(epoch0)) + (TOTAL - len(epoch1))
    no_leftovers(str(tmp_path))


def test_remainder_pad_takes_the_dynamic_order_and_fixed_refuses_it(
    hf_bin: str, sorted8: Path, tmp_path: Path
) -> None:
    r = launch(hf_bin, sorted8, tmp_path / "a", 2, "--order", "fixed", "--remainder", "pad",
               batch=BATCH)
    assert r.returncode != 0
    assert "--order dynamic" in r.stderr, r.stderr[-2000:]
    r = launch(hf_bin, sorted8, tmp_path / "b", 2, "--order", "dynamic", "--shuffle-buffer", "10",
               batch=BATCH)
    assert r.returncode != 0
    assert "belong to --order fixed" in r.stderr, r.stderr[-2000:]


def test_a_shuffle_buffer_over_the_memory_budget_is_refused_by_name(
    hf_bin: str, data_wide: Path, tmp_path: Path  # noqa: F811
) -> None:
    """Windows of 5,000 rows of 4 KiB (two held: 40 MiB) against 4 MiB per rank."""
    r = launch(hf_bin, data_wide, tmp_path / "a", 2, "--memory-mb", "16", "--shuffle-buffer",
               "5000", batch=100, timeout=120)
    assert r.returncode != 0
    assert "the shuffle buffer does not fit" in r.stderr, r.stderr[-3000:]
    assert "lower --shuffle-buffer or raise --memory-mb" in r.stderr, r.stderr[-3000:]
    no_leftovers(str(tmp_path))
