"""The rolling deploy end to end: 2 instances x 2 threads of the sessions app, small state.

Real broker, real ``streamrt run`` processes, real SIGTERM. Static membership must roll
without a rebalance or a restore; dynamic membership rebalances. Both must be correct.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from streamrt.deploy import ScenarioConfig, run_scenario

pytestmark = pytest.mark.slow


def small(tmp_path: Path, static: bool) -> ScenarioConfig:
    return ScenarioConfig(
        work_dir=tmp_path / ("static" if static else "dynamic"),
        static=static,
        instances=2,
        threads=2,
        partitions=4,
        users=500,
        rate=100,
        baseline_seconds=1.0,
        after_seconds=1.0,
        timeout=120,
    )


def test_static_rolling_deploy_has_no_rebalance_and_restores_nothing(tmp_path: Path) -> None:
    report = run_scenario(small(tmp_path, static=True))
    assert [s.exit_code for s in report.timeline.steps] == [0, 0]
    assert report.rebalances == 0
    assert report.restored_records == 0
    assert report.restored_bytes == 0
    assert report.correctness.exactly_once_result  # a clean SIGTERM commits: no re-processing
    assert report.records_out == report.records_in > 500


def test_dynamic_rolling_deploy_rebalances_and_stays_correct(tmp_path: Path) -> None:
    report = run_scenario(small(tmp_path, static=False))
    assert report.rebalances >= 1
    assert report.generations == sorted(report.generations)
    assert report.correctness.ok
    assert report.correctness.users == 500
