"""bench/rebalance_medians.py: every figure is the median over runs with its range; a run whose
output lost or duplicated records is listed, not counted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.bench.bench_run import run_bench


def result(gap_kept: float, restored: int, lost: int = 0) -> dict[str, Any]:
    return {
        "scenario": "d",
        "protocol": "cooperative",
        "contender": "streamrt",
        "broker": "embedded",
        "gap_before_s": 0.2,
        "gap_kept_s": gap_kept,
        "gap_moved_s": 0.9,
        "moved": 1,
        "restored": restored,
        "generations": 2,
        "balanced_s": 1.5,
        "lost": lost,
        "duplicated": 0,
        "uncommitted_gap_before_s": 0.1,
        "uncommitted_gap_kept_s": 0.15,
    }


def write_run(directory: Path, rows: list[dict[str, Any]]) -> Path:
    directory.mkdir()
    (directory / "rebalance_cooperative.json").write_text(json.dumps(rows))
    return directory


def test_medians_with_spread_and_inexact_runs_left_out(tmp_path: Path) -> None:
    runs = [
        write_run(tmp_path / "1", [result(0.5, 600)]),
        write_run(tmp_path / "2", [result(0.3, 0)]),
        write_run(tmp_path / "3", [result(0.4, 800)]),
        write_run(tmp_path / "4", [result(9.9, 99999, lost=3)]),
    ]
    printed = run_bench("rebalance_medians.py", *map(str, runs), cwd=tmp_path)
    (row,) = [line for line in printed.splitlines() if line.startswith("| d |")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:4] == ["d", "cooperative", "streamrt", "3"]
    assert cells[4] == "0.20"  # every run agrees: no range
    assert cells[5] == "0.40 (0.30-0.50)"  # gap kept
    assert cells[8] == "600 (0-800)"  # restored
    assert "run 4: d cooperative streamrt lost 3, duplicated 0" in printed
