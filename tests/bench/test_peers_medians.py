"""bench/peers_medians.py: ratios are taken within each run, then their median; runs without a
verified rate are listed, not counted."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench.bench_run import run_bench


def result(workload: str, contender: str, rate: float | None, cpu: float | None) -> dict:
    return {
        "workload": workload,
        "contender": contender,
        "rate": rate,
        "cpu_rate": cpu,
        "contender_cores": 1.0 if rate else None,
        "verified": rate is not None,
        "error": "" if rate else "WRONG OUTPUT: 3 users short",
    }


def write_run(directory: Path, rows: list[dict]) -> Path:
    directory.mkdir()
    meta = {"date": "2026-11-25 20:00", "broker": "embedded", "command": "peers_throughput.py"}
    (directory / "results.json").write_text(json.dumps({"meta": meta, "results": rows}))
    return directory


def test_medians_of_within_run_ratios_and_failed_runs_listed(tmp_path: Path) -> None:
    runs = [
        write_run(
            tmp_path / "1",
            [result("sessions", "streamrt-1t", 100, 200), result("sessions", "quix", 200, 100)],
        ),
        write_run(
            tmp_path / "2",
            [result("sessions", "streamrt-1t", 300, 300), result("sessions", "quix", 100, 300)],
        ),
        write_run(
            tmp_path / "3",
            [result("sessions", "streamrt-1t", None, None), result("sessions", "quix", 150, 150)],
        ),
    ]
    printed = run_bench("peers_medians.py", *map(str, runs), cwd=tmp_path)
    (row,) = [line for line in printed.splitlines() if "| streamrt-1t |" in line]
    cells = [c.strip() for c in row.strip("|").split("|")]
    # runs, rate, per thread, per CPU-s, cores, wall ratio, CPU ratio, failures
    assert cells[2:] == [
        "2",
        "200 (100-300)",
        "200 (100-300)",
        "250 (200-300)",
        "1.00 (1.00-1.00)",
        "1.75 (0.50-3.00)",  # 100/200 and 300/100 within their runs, not 200/150
        "1.50 (1.00-2.00)",
        "WRONG OUTPUT: 3 users short",
    ]
