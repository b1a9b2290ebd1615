"""``python -m hydrofeed.bench images --json``: a short run, its JSON's fields (no speed is
asserted: speed belongs to the benchmark's own run)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hydrofeed.bench_images import PEERS, SIDES


@pytest.mark.timeout(600)
def test_a_short_run_reports_every_side() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "hydrofeed.bench", "images", "--json", "--images", "24",
         "--batch-size", "8", "--repeat", "1", "--min-secs", "0.05", "--timeout", "300"],
        capture_output=True, text=True, timeout=580,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout)
    assert out["benchmark"] == "images" and out["images"] == 24 and out["batch_size"] == 8
    assert set(out["sides"]) == set(SIDES)
    ours = out["sides"]["hydrofeed"]
    assert ours["status"] == "ran", ours
    for name, s in out["sides"].items():
        assert s["what"], name
        if s["status"] != "ran":
            assert s["status"] in ("not installed", "failed") and s["reason"], (name, s)
            continue
        for k in ("images_per_s", "median_images_per_s", "images_per_cpu_s",
                  "median_images_per_cpu_s", "trainer_cpu_ms_per_image", "cpu_ms_per_image"):
            assert s[k] > 0, (name, k, s)
        assert s["passes"] >= 1 and len(s["runs_images_per_s"]) == s["passes"]
        # Every process's CPU counts: a side's CPU per image is at least its trainer's.
        assert s["cpu_ms_per_image"] >= s["trainer_cpu_ms_per_image"] * 0.999, (name, s)
    for p in PEERS:
        if out["sides"][p]["status"] == "ran":
            assert out["ratios"][f"per_core_vs_{p}"] > 0
            assert out["ratios"][f"all_cores_vs_{p}"] > 0
    t = out["target"]
    assert t["per_core_over_best_peer"] == 1.5
    if t["best_peer_per_core"] is not None:
        assert isinstance(t["met"], bool) and t["ratio"] > 0


def test_the_cli_runs_it_and_gpu_says_why_without_a_gpu(hf_bin: str) -> None:
    """``hydrofeed bench images`` runs the Python benchmark; ``--gpu`` on a host without CUDA
    reports the trainer's nvJPEG side as failed with the reason (exit 1), not a crash."""
    from hydrofeed import gpu

    r = subprocess.run([hf_bin, "bench", "images", "--python", sys.executable, "--help"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "--gpu" in r.stdout, r.stdout + r.stderr
    if gpu.available()[0]:
        pytest.skip("this host has a CUDA device (the GPU run is the benchmark's own)")
    r = subprocess.run(
        [sys.executable, "-m", "hydrofeed.bench", "images", "--gpu", "--json", "--images", "8",
         "--batch-size", "4", "--repeat", "1", "--min-secs", "0.05", "--only", "nvjpeg"],
        capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 1, r.stderr[-3000:]
    out = json.loads(r.stdout)
    assert out["benchmark"] == "images_gpu" and out["ours"] == "hydrofeed_nvjpeg"
    ours = out["sides"]["hydrofeed_nvjpeg"]
    assert ours["status"] in ("failed", "not installed") and ours["reason"], ours
    if ours["status"] == "failed":
        assert "no CUDA device" in ours["reason"], ours
    assert out["sides"]["hydrofeed_cpu"]["status"] == "skipped"
