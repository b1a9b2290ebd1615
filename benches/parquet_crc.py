"""Cost of verifying Parquet page CRCs in hydrofeed's reader: the same table written twice by
pyarrow, with and without page checksums (the reader checks a CRC only where a page has one),
read alternately by ``hydrofeed.read``; prints the median seconds of each and the ratio.

    .venv/bin/python benches/parquet_crc.py [--rows 200000] [--reps 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import hydrofeed as hf


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    img = (rng.random((a.rows, 784)) < 0.2) * rng.integers(0, 256, (a.rows, 784)) / 255
    t = pa.table({
        "id": np.arange(a.rows, dtype=np.int64),
        "image": pa.FixedSizeListArray.from_arrays(pa.array(img.astype(np.float32).ravel()), 784),
        "label": rng.integers(0, 10, a.rows),
    })  # fmt: skip
    with tempfile.TemporaryDirectory() as d:
        paths = {}
        for crc in (False, True):
            p = Path(d) / f"crc-{crc}.parquet"
            pq.write_table(t, p, compression="snappy", row_group_size=16384, write_page_checksum=crc)
            paths[crc] = str(p)
        times: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(a.reps):
            for crc in (False, True):
                t0 = time.perf_counter()
                rows = sum(b.num_rows for b in hf.read(paths[crc]))
                times[crc].append(time.perf_counter() - t0)
                assert rows == a.rows
        off, on = statistics.median(times[False]), statistics.median(times[True])
        print(json.dumps({
            "rows": a.rows, "bytes": Path(paths[True]).stat().st_size,
            "without_crc_s": round(off, 4), "with_crc_s": round(on, 4), "ratio": round(on / off, 3),
        }))  # fmt: skip


if __name__ == "__main__":
    main()
