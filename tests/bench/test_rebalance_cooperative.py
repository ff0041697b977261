"""bench/rebalance_cooperative.py at a tiny size: a 4th instance joins three (2 threads each,
12 partitions, exactly-once), once eagerly and once cooperatively; both runs complete, the
output is exact (the script exits non-zero otherwise), the table and the charts are written,
and the cooperative run takes two generations to move what it moves. On KIP-1071 streams
groups: a scale-out and a scale-in by removal. (Kafka Streams' side runs in the benchmark, not
here: 7227b05.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.bench.bench_run import run_bench

pytestmark = pytest.mark.slow

ROW = re.compile(r"^\| a \| (eager|cooperative) \|(.*)\|$", re.MULTILINE)


def _tiny(tmp_path: Path, scenario: str, *extra: str) -> tuple[str, list[dict[str, Any]]]:
    """The bench at a tiny size (12 partitions, 20 rounds/s, 3 s baseline, 8 s settle): what
    it printed and its results."""
    out = tmp_path / "out"
    printed = run_bench(
        "rebalance_cooperative.py",
        *("--out", str(out), "--scenarios", scenario, "--partitions", "12", "--rate", "20"),
        *("--baseline", "3", "--settle", "8", *extra),
        cwd=tmp_path,
        timeout=400,
    )
    return printed, json.loads((out / "rebalance_cooperative.json").read_text())


def test_rebalance_cooperative_runs_both_protocols_and_stays_exact(tmp_path: Path) -> None:
    printed, runs = _tiny(tmp_path, "a")
    rows = {m[0]: [c.strip() for c in m[1].split("|")] for m in ROW.findall(printed)}
    assert set(rows) == {"eager", "cooperative"}, printed
    results = {r["protocol"]: r for r in runs}
    for protocol, r in results.items():
        assert r["lost"] == 0 and r["duplicated"] == 0, r
        chart = tmp_path / "out" / f"rebalance_a_{protocol}_streamrt.png"
        assert chart.stat().st_size > 0
    if results["cooperative"]["moved"]:
        assert results["cooperative"]["generations"] >= 2, results


def test_rebalance_cooperative_runs_on_streams_groups_and_stays_exact(tmp_path: Path) -> None:
    """``--protocols streams``: the instances join a KIP-1071 streams group (the broker assigns
    their tasks); a 4th instance takes tasks and nothing is lost or duplicated."""
    printed, (r,) = _tiny(tmp_path, "a", "--protocols", "streams")
    assert r["protocol"] == "streams" and r["contender"] == "streamrt", printed
    assert r["lost"] == 0 and r["duplicated"] == 0, r
    assert r["moved"] >= 1, r  # the new instance took tasks


def test_rebalance_cooperative_scales_in_by_removal_on_streams_groups_and_stays_exact(
    tmp_path: Path,
) -> None:
    """Scenario (b) on ``--protocols streams``: an instance stopped (its static members keep
    their tasks at epoch -2) and removed with ``streamrt instances remove``; the survivors take
    its tasks and nothing is lost or duplicated."""
    printed, (r,) = _tiny(tmp_path, "b", "--protocols", "streams")
    assert (r["scenario"], r["protocol"]) == ("b", "streams"), printed
    assert r["lost"] == 0 and r["duplicated"] == 0, r
    assert r["moved"] >= 1, r  # the stopped instance's tasks went to the survivors
