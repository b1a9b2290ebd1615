"""Draws benches/ratios.png from the JSON results in benches/results/.

Each results file is the JSON one benchmark command printed (`hydrofeed bench ring --json`,
`hydrofeed bench decode --json`, `python -m hydrofeed.bench feed --json`, ...). The plot shows
every ratio (ours / baseline, higher is better) beside its target.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent

# Targets from the issues: ours / baseline.
TARGETS = {
    "ring_vs_memcpy_1MiB": 0.8,
    "parquet_vs_pyarrow": 1.5,
    "parquet_vs_snappy_plus_memcpy": 0.7,
    "orc_vs_pyarrow": 1.5,
    "avro_vs_fastavro": 20.0,
    "tfrecord_vs_tfdata": 3.0,
    "tfrecord_gzip_vs_tfdata": 3.0,
    "launch_w1_shuffle_vs_no_buffer": 0.9,
    "launch_w2_shuffle_vs_no_buffer": 0.9,
    "launch_w1_fixed_vs_dynamic_best": 0.9,
    "launch_w2_fixed_vs_dynamic_best": 0.9,
    "feed_vs_pyarrow_b100": 2.0,
    "feed_vs_pyarrow_b1000": 2.0,
    "feed_vs_tfdata_b100": 1.5,
    "feed_vs_tfdata_b1000": 1.5,
    "launch_w1_vs_pyarrow_b1000": 2.0,
    "launch_w2_vs_pyarrow_b1000": 2.0,
    "launch_w1_shuffle_vs_no_buffer": 0.9,
    "launch_w2_shuffle_vs_no_buffer": 0.9,
    "launch_w1_fixed_vs_dynamic_best": 0.9,
    "launch_w2_fixed_vs_dynamic_best": 0.9,
    "spark_rdd_vs_tfos": 10.0,
    "spark_rdd_rows_vs_tfos": 10.0,
    "spark_df_vs_tfos": 50.0,
    "file_mode_vs_tfos": 100.0,
    "file_mode_orc_vs_tfos": 100.0,
    "spark_df_vs_ceiling": 0.8,
    "spark_rdd_vs_ceiling": 0.8,
    "spark_rdd_rows_vs_ceiling": 0.8,
    "spark_rdd_lists_vs_ceiling": 0.8,
    "file_mode_vs_launch": 0.8,
    "serve_vs_pyarrow": 2.0,
    "launch_vs_pyarrow": 2.0,
    "launch_vs_tfdata": 1.5,
    "ring_h2d_vs_pinned": 0.8,
    "ring_h2d_vs_pageable": 1.5,
    "feed_vs_dataloader_pinned": 1.0,
    "images_per_core_vs_tfdata": 1.5,
    "images_per_core_vs_dali": 1.5,
    "images_per_core_vs_torch": 1.5,
    "images_gpu_per_core_vs_nvjpeg": 1.5,
    "images_gpu_per_core_vs_hydrofeed_cpu": 1.0,
}


def target(name: str) -> float | None:
    """The target of a ratio (runs of the same bench at another size share it)."""
    name = name.removesuffix(" [H200]").removesuffix("_single")
    if name.startswith("launch_vs_") and name not in TARGETS:
        return 2.0  # 2x every peer but tf.data (bench peers)
    return TARGETS.get(name, TARGETS.get(name.removesuffix("_20k_rows")))


def collect(results: Path) -> dict[str, float]:
    ratios: dict[str, float] = {}
    # The top level, the latest order run (the shuffle buffer's cost and the fixed order against
    # the dynamic one), the peers side by side and the GPU run on an H200 node
    # (the other folders hold before/after pairs of one change, or earlier runs) and the latest
    # Spark run; a later file's ratio replaces an earlier one's: the newest Parquet decode.
    extra = ["peers/peers.json", "gpu/bench_gpu_h200.json", "gpu/bench_images_gpu_h200.json",
             "spark_transport/*.json", "images/images.json", "decode_v3/*.json",
             "decode_v4/*.json", "decode_v5/*.json", "order/gather/ab_new_2.json",
             "spark_arena/spark_100k_frames1mib.json", "spark_ring_pages/spark_100k_*.json"]
    for path in sorted(results.glob("*.json")) + [p for e in extra for p in sorted(results.glob(e))]:
        data = json.loads(path.read_text())
        # The GPU run was on another machine: its bars say so.
        tag = " [H200]" if data.get("benchmark") in ("gpu", "images_gpu") else ""
        prefix = {"images": "images_", "images_gpu": "images_gpu_"}.get(data.get("benchmark"), "")
        for name, value in (data.get("ratios") or {}).items():
            name = prefix + name
            # The best passes only (medians and the all-cores decode runs are in the tables).
            if name.endswith(("_median", "_all_cores")) or "_all_cores_vs_" in name:
                continue
            if isinstance(value, (int, float)):
                ratios[name + tag] = float(value)
        for frame in data.get("frames") or []:
            if frame.get("frame_bytes") == 1 << 20:
                ratios["ring_vs_memcpy_1MiB"] = float(frame["ratio"])
    return ratios


def main() -> int:
    results = HERE / "results"
    ratios = collect(results)
    if not ratios:
        print(f"no ratios found in {results}/*.json", file=sys.stderr)
        return 1
    order = list(TARGETS)

    def rank(n: str) -> int:
        base = n.removesuffix("_20k_rows").removesuffix("_single")
        return order.index(base) if base in order else 99

    names = sorted(ratios, key=lambda n: (rank(n), n))
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(names) + 1.2))
    ys = range(len(names))
    colors = [
        "tab:green" if ratios[n] >= (target(n) or 1.0) else "tab:red" for n in names
    ]
    ax.barh(list(ys), [ratios[n] for n in names], color=colors)
    for y, n in zip(ys, names):
        t = target(n)
        if t is not None:
            ax.plot([t] * 2, [y - 0.4, y + 0.4], color="black", linewidth=2)
        ax.text(ratios[n], y, f" {ratios[n]:.2f}x", va="center", fontsize=8)
    ax.set_yticks(list(ys), names, fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("ours / baseline (log scale; black tick = target; green = target met)")
    ax.set_title("hydrofeed benchmarks, 2-core machine\n([H200]: a 16-core node with an NVIDIA H200)", fontsize=10)
    fig.tight_layout()
    out = HERE / "ratios.png"
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
