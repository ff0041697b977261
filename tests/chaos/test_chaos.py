"""The bounce test, short and seeded (the long runs are ``bench/chaos_bounce.py``).

Each run: two static instances of the join/repartition/fold/window app on the embedded broker
(``--fsync always``), an idempotent acks=all feed, and one of each fault (instance SIGKILL,
SIGTERM, a SIGSTOP past the session timeout, broker SIGKILL, broker SIGSTOP) in a seeded order.
Every output is read back with read_committed: nothing lost under either guarantee, nothing
duplicated under exactly-once. Gaps are printed, not asserted, except that every partition
must be processed again within two session timeouts after the fault (a lost rebalance is not
a slow one).

At-least-once runs every fault but the zombie: a zombie's producer sends what it had queued
when it resumes, after the task's new owner wrote newer values to the same changelog, and
without transactions nothing fences those writes (Kafka Streams' at-least-once has the same
limit; docs/operations.md, "The commit and a task-migrated event"). Its commit, the part
streamrt controls, is tested exactly in tests/runtime/test_task_migrated.py; the long runs
(bench/chaos_bounce.py) count what zombies cost under at-least-once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chaos.faults import BROKER_KINDS
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


@pytest.mark.parametrize(
    ("guarantee", "kinds"),
    [
        ("at_least_once", ("instance-kill", "instance-term", *BROKER_KINDS)),
        ("exactly_once_v2", ("instance-kill", "instance-term", "zombie", *BROKER_KINDS)),
    ],
)
def test_bounce_loses_nothing(guarantee: str, kinds: tuple[str, ...], tmp_path: Path) -> None:
    config = ChaosConfig(
        work=tmp_path / "chaos", guarantee=guarantee, seed=7, faults=len(kinds), kinds=kinds
    )
    report = run(config)
    print(report.table())
    _check(report, guarantee == "exactly_once_v2", config.session_timeout_ms / 1000)
