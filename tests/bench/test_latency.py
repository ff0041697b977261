"""bench/latency.py at a tiny size, one contender per test: a fixed rate (no saturation run),
one run per load, each run's whole output verified and a p50/p99 printed for it. Peers that
need what the suite may lack (Quix Streams' venv, a JVM) skip with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench.bench_run import BENCH_PYTHON, jvm_missing, run_bench

pytestmark = pytest.mark.slow


def missing(contender: str) -> str:
    """Why ``contender`` cannot run here, or ''."""
    if contender == "quix" and not BENCH_PYTHON.exists():
        return f"{BENCH_PYTHON} missing: Quix Streams lives in its own venv (make bench-venv)"
    if contender.startswith("kafka-streams"):
        return jvm_missing()
    return ""


@pytest.mark.parametrize(
    "contender", ["streamrt-1t", "streamrt-1t+rdk", "quix", "kafka-streams-1t"]
)
def test_latency_runs_verified_with_percentiles(tmp_path: Path, contender: str) -> None:
    if why := missing(contender):
        pytest.skip(why)
    out = tmp_path / "out"
    args = ["--contenders", contender, "--rate", "400", "--seconds", "2", "--runs", "1"]
    printed = run_bench("latency.py", *args, "--out", str(out), cwd=tmp_path, timeout=480)
    runs = json.loads((out / "results.json").read_text())["runs"]
    assert [(r["workload"], r["load"]) for r in runs] == [("stateless", 0.5), ("stateless", 0.9)]
    for r in runs:
        assert r["verified"] and not r["error"], (r, printed)
        assert r["records"] == int(400 * r["load"] * 2), r
        assert r["measured"] > 0, r
        assert 0 <= r["p50_ms"] <= r["p99_ms"] <= r["max_ms"], r
    assert "| stateless | " + contender in printed
