"""The bounce test, short and seeded (the long runs are ``bench/chaos_bounce.py``).

Each run: two static instances of the join/repartition/fold/window app on the embedded broker
(``--fsync always``), an idempotent acks=all feed, and one of each fault (instance SIGKILL,
SIGTERM, a SIGSTOP past the session timeout, broker SIGKILL, broker SIGSTOP) in a seeded order.
Every output is read back with read_committed: nothing lost under either guarantee, nothing
duplicated under exactly-once. Gaps are printed, not asserted, except that every partition
must be processed again within two session timeouts after the fault (a lost rebalance is not
a slow one).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chaos.harness import ChaosConfig, ChaosReport, run

pytestmark = pytest.mark.slow


def _check(report: ChaosReport, exact: bool, session_s: float) -> None:
    detail = f"\n{report.table()}\nwrong keys: {report.wrong_keys}\nlogs: {report.instance_logs}"
    assert report.inputs > 0
    assert report.total_lost == 0, f"records lost{detail}"
    if exact:
        assert report.total_duplicated == 0, f"duplicates under exactly-once{detail}"
    for fault in report.faults:
        assert fault.gap_s < fault.down_s + 2 * session_s + 10, f"{fault.kind} stalled{detail}"


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_bounce_loses_nothing(guarantee: str, tmp_path: Path) -> None:
    config = ChaosConfig(work=tmp_path / "chaos", guarantee=guarantee, seed=7, faults=5)
    report = run(config)
    print(report.table())
    _check(report, guarantee == "exactly_once_v2", config.session_timeout_ms / 1000)
