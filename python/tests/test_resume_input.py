"""`hydrofeed launch --resume` over an input that changed since the state was written: the
state carries a fingerprint of its input (every file's path, size, modification time and
splits), a resume over other files is refused naming the first file that differs, and
`--allow-changed-input` resumes exactly once over the files that did not change
(docs/arch/coord.md, "Resume state").

Input: 4 Parquet files (pyarrow) x 600 rows in row groups of 200; file `i` holds ids
`i*600 .. (i+1)*600`. A run stops mid-epoch (the trainer takes 6 batches and returns), one file
is renamed, rewritten or added, and the job resumes.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from test_launch import dropped, launch, no_leftovers, records, steps_of

FILES, PER_FILE, GROUP = 4, 600, 200
WORKERS, BATCH, STOP = 2, 20, 6
REWRITTEN = 100_000  # first id of the rewritten file's rows
ADDED = 200_000  # first id of the added file's rows


def write(path: Path, first: int, n: int) -> None:
    t = pa.table({"id": pa.array(range(first, first + n), pa.int64()),
                  "x": pa.array([float(v) for v in range(n)], pa.float32())})
    pq.write_table(t, path, row_group_size=GROUP)


@pytest.fixture(scope="module")
def data4(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("data4")
    for i in range(FILES):
        write(d / f"part-{i:05d}.parquet", i * PER_FILE, PER_FILE)
    return d


def ids_by_epoch(out: Path) -> dict[int, list[int]]:
    e: dict[int, list[int]] = {}
    for r in range(WORKERS):
        for rec in steps_of(records(out, r)):
            e.setdefault(rec["epoch"], []).extend(rec["ids"])
    return e


def change(d: Path, how: str) -> tuple[str, str, list[int], set[int]]:
    """Changes the input in `d`. Returns the file a refusal must name, a word of how it
    differs, every id of the input afterwards, and the ids of the files that did not change."""
    orig = {i: set(range(i * PER_FILE, (i + 1) * PER_FILE)) for i in range(FILES)}
    if how == "rename":
        (d / "part-00001.parquet").rename(d / "part-00009.parquet")
        return "part-00001.parquet", "missing", list(range(2400)), orig[0] | orig[2] | orig[3]
    if how == "rewrite":
        write(d / "part-00002.parquet", REWRITTEN, 400)
        now = [*range(1200), *range(REWRITTEN, REWRITTEN + 400), *range(1800, 2400)]
        return "part-00002.parquet", "size", now, orig[0] | orig[1] | orig[3]
    write(d / "part-00001a.parquet", ADDED, 300)
    now = [*range(2400), *range(ADDED, ADDED + 300)]
    return "part-00001a.parquet", "new", now, set(range(2400))


@pytest.mark.parametrize("how,order", [
    ("rename", "fixed"), ("rewrite", "fixed"), ("add", "fixed"), ("rewrite", "dynamic"),
])
def test_resume_over_a_changed_input_is_refused_or_resumes_the_unchanged_files_exactly_once(
    hf_bin: str, data4: Path, tmp_path: Path, how: str, order: str
) -> None:
    d = tmp_path / "input"
    shutil.copytree(data4, d)
    flags = ["--epochs", "2", "--seed", "5"]
    flags += ["--shuffle-buffer", "300"] if order == "fixed" else ["--order", "dynamic"]
    r1 = launch(hf_bin, d, tmp_path / "a", WORKERS, *flags, batch=BATCH,
                env={"STOP_AFTER": str(STOP)}, timeout=180)
    assert r1.returncode == 0, r1.stderr[-3000:]
    state_file = tmp_path / "a" / "state.json"
    first = ids_by_epoch(tmp_path / "a")
    assert list(first) == [0] and len(first[0]) == WORKERS * STOP * BATCH

    named, kind, current, unchanged = change(d, how)

    r2 = launch(hf_bin, d, tmp_path / "b", WORKERS, "--resume", str(state_file), batch=None,
                timeout=180)
    if r2.returncode == 0:
        # What a resume that does not check its input does: rows of another file in the
        # saved positions.
        both = first[0] + ids_by_epoch(tmp_path / "b").get(0, [])
        twice = sum(n - 1 for n in Counter(both).values() if n > 1)
        assert twice == 0, f"{twice} rows delivered twice in epoch 0, exit 0"
    assert r2.returncode != 0, r2.stderr[-3000:]
    assert named in r2.stderr and kind in r2.stderr, r2.stderr[-3000:]
    assert "--allow-changed-input" in r2.stderr, r2.stderr[-3000:]

    r3 = launch(hf_bin, d, tmp_path / "c", WORKERS, "--resume", str(state_file),
                "--allow-changed-input", batch=None, timeout=180)
    assert r3.returncode == 0, r3.stderr[-3000:]
    assert "re-planned" in r3.stderr and named.split(".")[0] in r3.stderr, r3.stderr[-3000:]
    after = ids_by_epoch(tmp_path / "c")
    # Epoch 0: the rows the first run took from files that did not change, and the second
    # run's, are every row of the current input once, less the rows dropped for equal steps.
    epoch0 = [i for i in first[0] if i in unchanged] + after[0]
    twice = [i for i, n in Counter(epoch0).items() if n > 1]
    assert not twice, f"{len(twice)} rows twice in epoch 0, e.g. {twice[:5]}"
    assert set(epoch0) <= set(current), sorted(set(epoch0) - set(current))[:5]
    missing0 = len(current) - len(epoch0)
    assert 0 <= missing0 < WORKERS * BATCH, missing0
    # Epoch 1: the whole current input in the order of a fresh run, less its drop.
    epoch1 = after[1]
    assert len(epoch1) == len(set(epoch1)) and set(epoch1) <= set(current)
    missing1 = len(current) - len(epoch1)
    assert 0 <= missing1 < WORKERS * BATCH
    assert dropped(r3.stderr) == missing0 + missing1
    steps = {len([s for s in steps_of(records(tmp_path / "c", r)) if s["epoch"] == 0])
             for r in range(WORKERS)}
    assert len(steps) == 1, steps
    no_leftovers(str(tmp_path))


def test_spark_file_mode_coordinator_refuses_a_changed_input_or_resumes_it_when_allowed(
    hf_bin: str, data4: Path, tmp_path: Path
) -> None:
    """`TFCluster.train_files(resume=..., allow_changed_input=...)` starts its driver's
    coordinator through `files.Coordinator`: a state over other files is refused naming the
    file, and resumed when allowed."""
    from hydrofeed.exceptions import FeedFilesError
    from hydrofeed.spark import files

    d = tmp_path / "input"
    shutil.copytree(data4, d)
    r1 = launch(hf_bin, d, tmp_path / "a", WORKERS, "--seed", "5", batch=BATCH,
                env={"STOP_AFTER": str(STOP)}, timeout=180)
    assert r1.returncode == 0, r1.stderr[-3000:]
    state = str(tmp_path / "a" / "state.json")
    named, _, _, _ = change(d, "add")

    def start(**kw) -> files.Coordinator:
        return files.Coordinator(str(d), WORKERS, BATCH, 1, 5, True, "drop", host="127.0.0.1",
                                 resume=state, tls=False, start_timeout=60, **kw)

    with pytest.raises(FeedFilesError, match=named):
        start()
    c = start(allow_changed_input=True)
    try:
        assert c.poll() is None
        assert any("re-planned" in line and named in line for line in c.tail), list(c.tail)
    finally:
        c.close()
