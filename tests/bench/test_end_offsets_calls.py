"""bench/end_offsets_calls.py at a tiny size: both clients answer and each run prints both."""

from __future__ import annotations

from pathlib import Path

from tests.bench.bench_run import run_bench


def test_end_offsets_calls_prints_both_medians(tmp_path: Path) -> None:
    out = run_bench(
        "end_offsets_calls.py", "--partitions", "2", "--calls", "5", "--runs", "2", cwd=tmp_path
    )
    lines = [line for line in out.splitlines() if line.startswith("run ")]
    assert len(lines) == 2, out
    assert all("admin list_offsets" in line and "aiokafka end_offsets" in line for line in lines)
