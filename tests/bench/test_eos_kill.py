"""bench/eos_kill.py at a tiny size: SIGKILLs under exactly-once leave 0 duplicates and 0
missing counts, and every throughput row completes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench.bench_run import run_bench

pytestmark = pytest.mark.slow


def test_eos_kill_exact_after_kills_and_throughput_rows(tmp_path: Path) -> None:
    args = ["--kills", "2", "--events", "500", "--skip-baseline-kills"]
    printed = run_bench("eos_kill.py", *args, cwd=tmp_path, timeout=240)
    runs = [json.loads(line) for line in printed.splitlines() if line.startswith("{")]
    assert [r["guarantee"] for r in runs] == ["exactly_once_v2"]
    (eos,) = runs
    assert eos["kills"] == 2 and eos["events"] > 0
    assert eos["duplicates"] == 0 and eos["missing"] == 0
    assert eos["final_short_keys"] == 0 and eos["final_over_counted"] == 0
    rows = [line for line in printed.splitlines() if "rec/s" in line]
    assert len(rows) == 4  # at-least-once and EOS at commit.interval.ms 100 and 1000
    assert "EOS / at-least-once at commit.interval.ms=1000" in printed
