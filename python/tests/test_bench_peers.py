"""`python -m hydrofeed.bench peers --json` as `make bench-peers` runs it, on a small dataset in
whatever venv runs the tests (Ray Data, Streaming, Grain, Petastorm may be missing there): the
JSON names every peer, as ran, failed or not installed, and has the ratios of those that ran.
Speed is not asserted."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from hydrofeed.bench_peers import OURS, PEERS

pytestmark = pytest.mark.timeout(240)


def test_peers_json_names_every_peer_and_the_ratios_of_those_that_ran(hf_bin: str) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "hydrofeed.bench", "peers", "--json", "--rows", "5000",
         "--repeat", "1", "--timeout", "180", "--min-secs", "0.3"],
        env={**os.environ, "HYDROFEED_BIN": hf_bin}, capture_output=True, text=True, timeout=230,
    )
    assert r.returncode == 0, r.stderr[-4000:]
    out = json.loads(r.stdout)  # JSON only on stdout; progress goes to stderr
    assert out["benchmark"] == "peers" and out["rows"] == 5000 and out["repeat"] == 1
    assert out["min_secs"] == 0.3 and out["memcpy_bytes_per_s"]["best"] > 0
    assert set(out["peers"]) == set(PEERS) and set(out["hydrofeed"]) == set(OURS)

    for name, res in [*out["peers"].items(), *out["hydrofeed"].items()]:
        assert res["status"] in ("ran", "failed", "not installed"), (name, res)
        if res["status"] == "ran":
            assert res["rows_per_s"] > 0 and res["streaming_rows_per_s"] > 0, (name, res)
            assert res["trainer_cpu_s_per_100k_rows"] >= 0, (name, res)
            # passes repeated until the side ran --min-secs: one round, its passes
            assert len(res["runs_rows_per_s"]) == res["passes"] >= 1, (name, res)
            assert res["shortest_side_s"] >= 0.3, (name, res)
            assert res["median_rows_per_s"] <= res["rows_per_s"], (name, res)
            assert 0 < res["fraction_of_memcpy"] == pytest.approx(
                res["rows_per_s"] * 3144 / out["memcpy_bytes_per_s"]["best"], rel=1e-2), (name, res)
        else:
            assert res["reason"], (name, res)  # exception type and message, or the module
    for name in ("pyarrow",):
        assert out["peers"][name]["status"] == "ran", out["peers"][name]
    for name in ("serve", "launch"):
        assert out["hydrofeed"][name]["status"] == "ran", out["hydrofeed"][name]

    # Installed or not, as this interpreter sees it.
    for name, (module, _) in PEERS.items():
        installed = importlib.util.find_spec(module) is not None
        assert (out["peers"][name]["status"] != "not installed") == installed, (name, installed)

    ran = [name for name, res in out["peers"].items() if res["status"] == "ran"]
    want = {"serve_vs_pyarrow", *(f"launch_vs_{name}" for name in ran)}
    assert "launch_vs_pyarrow" in want
    assert set(out["ratios"]) == want | {f"{k}_median" for k in want}, out["ratios"]
    for key in ("ratios", "cpu_ratios", "streaming_ratios"):
        assert set(out[key]) >= want, (key, out[key])
        assert all(v > 0 for v in out[key].values()), (key, out[key])
    assert set(out["peers_ahead_of_launch"]) <= set(ran)
