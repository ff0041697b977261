"""bench/producer_inflight.py at a tiny size: every producer variant sends its records (the
script asserts a delivery report came back) and prints its CPU a record."""

from __future__ import annotations

from pathlib import Path

from tests.bench.bench_run import run_bench


def test_the_producer_inflight_bench_runs(tmp_path: Path) -> None:
    out = run_bench("producer_inflight.py", "--runs", "1", "--records", "300", cwd=tmp_path)
    assert "300 records of 2.3 KB x 1, embedded broker" in out, out
    for variant in ("idempotent, 5 in flight", "transactional, 1 in flight"):
        assert variant in out, out
    assert out.count("process ") == 5, out
