"""bench/peers_throughput.py at a tiny size, one contender per test: every workload the
contender runs completes and its whole output is verified by the harness (its check refusing
wrong output is tests/bench/test_peers_workloads.py). At these sizes the 10-90 % window is too
short for a rate, which the harness says instead of printing one: speed is for the benchmark.
Peers that need what the suite may lack (Quix Streams' venv, faust-streaming, a JVM) skip with
the reason; streamrt's own path and the bare loops always run."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.bench.bench_run import BENCH_PYTHON, jvm_missing, run_bench

pytestmark = pytest.mark.slow

TINY = ["--records", "2000", "--wordcount-records", "300", "--session-records", "500"]


def missing(contender: str) -> str:
    """Why ``contender`` cannot run here, or ''."""
    if contender == "quix" and not BENCH_PYTHON.exists():
        return f"{BENCH_PYTHON} missing: Quix Streams lives in its own venv (make bench-venv)"
    if contender == "faust" and importlib.util.find_spec("faust") is None:
        return "faust-streaming not installed (pip install -e '.[faust]')"
    if contender.startswith("kafka-streams"):
        return jvm_missing()
    return ""


@pytest.mark.parametrize(
    "contender",
    [
        "streamrt-1t",
        "streamrt-1t-rdk",
        "bare-confluent",
        "bare-aiokafka",
        "quix",
        "faust",
        "kafka-streams-1t",
    ],
)
def test_contender_completes_every_workload_verified(tmp_path: Path, contender: str) -> None:
    if why := missing(contender):
        pytest.skip(why)
    out = tmp_path / "out"
    args = [*TINY, "--contenders", contender, "--timeout", "120", "--out", str(out)]
    printed = run_bench("peers_throughput.py", *args, cwd=tmp_path, timeout=480)
    results = json.loads((out / "results.json").read_text())["results"]
    ran = [r for r in results if not r["error"].startswith("skipped")]
    expected = ["stateless"] if contender == "bare-aiokafka" else ["stateless", "wordcount"]
    expected += [] if contender.startswith("bare-") else ["sessions"]
    assert [r["workload"] for r in ran] == expected, printed
    for r in ran:
        assert r["verified"], (r["workload"], r["error"], printed)
        # a rate, or the harness's refusal to time a window this short; never a failure
        assert r["rate"] or "too short" in r["error"], (r["workload"], r["error"])


def test_quix_python_given_relative_to_where_the_bench_starts(tmp_path: Path) -> None:
    """``make bench-medians`` passes ``--quix-python .venv-bench/bin/python``; the contenders
    start in the run's temporary directory, so the path must be taken from where the bench
    was started (it failed with FileNotFoundError before, no Quix rate at all)."""
    if why := missing("quix"):
        pytest.skip(why)
    (tmp_path / "bench-venv").symlink_to(BENCH_PYTHON.parents[1], target_is_directory=True)
    out = tmp_path / "out"
    args = ["--records", "2000", "--workloads", "stateless", "--contenders", "quix"]
    args += ["--quix-python", "bench-venv/bin/python", "--timeout", "120", "--out", str(out)]
    printed = run_bench("peers_throughput.py", *args, cwd=tmp_path, timeout=300)
    (result,) = json.loads((out / "results.json").read_text())["results"]
    assert result["verified"], (result["error"], printed)
