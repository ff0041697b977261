"""bench/rolling_deploy.py at a tiny size: a static rolling restart restarts every instance
with 0 rebalances and an exact output (the report's own verification, which
tests/deploy/test_report.py shows refusing a wrong one). The hand-off path has its own tests
(tests/handoff); as a run here it failed once in two under load (the successor was fenced)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench.bench_run import run_bench

pytestmark = pytest.mark.slow

TINY = ["--instances", "2", "--threads", "1", "--partitions", "4", "--users", "300"]
TINY += ["--rate", "50"]


def deploy(tmp_path: Path, runs: str, timeout: float = 180) -> dict[str, dict[str, object]]:
    """Run ``--runs`` and load each run's JSON report by run name."""
    out = tmp_path / "out"
    args = ["--runs", runs, *TINY, "--out", str(out), "--work-dir", str(tmp_path / "work")]
    printed = run_bench("rolling_deploy.py", *args, cwd=tmp_path, timeout=timeout)
    assert (out / "table.md").exists(), printed
    return {run: json.loads((out / f"{run}.json").read_text()) for run in runs.split(",")}


def test_rolling_deploy_static_is_exact(tmp_path: Path) -> None:
    reports = deploy(tmp_path, "static")
    for run, report in reports.items():
        correctness = report["correctness"]
        assert isinstance(correctness, dict)
        assert correctness["ok"] and correctness["over"] == 0, (run, correctness)
        assert correctness["exact"] == correctness["users"] > 0, (run, correctness)
        assert report["rebalances"] == 0 and report["coordinator_rebalances"] == 0, run
        assert report["records_out"] == report["records_in"] > 0, run
