"""Times each step of a rolling migration with librdkafka (not a test; run by hand for
``docs/benchmarks.md``): three members of one group on a 6-partition topic are restarted one
at a time from ``group.protocol=classic`` to ``consumer`` (upgrade), then back (downgrade);
a step lasts from the restarted member's start until every member owns a partition again.

    nice -n 19 .venv/bin/python -m tests.broker.consumer_group.migration_timing embedded|apache
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from tests.apache_kafka.support import create_topic
from tests.broker.consumer_group.test_migration_clients import PARTITIONS, Member, Ownership
from tests.conftest import FAST_GROUP_OVERRIDES

RUNS = 3


def one_run(bootstrap: str) -> dict[str, list[float]]:
    topic, group = f"m-{uuid.uuid4().hex[:8]}", f"m-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, PARTITIONS)
    table = Ownership()
    members = {
        i: Member(f"classic-{i}", "classic", bootstrap, topic, group, table, "earliest")
        for i in range(3)
    }

    def settle() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            for m in members.values():
                m.poll()
            owned = [m.owned() for m in members.values()]
            if all(owned) and sum(map(len, owned)) == PARTITIONS:
                return
        raise TimeoutError("the members did not settle in 120 s")

    settle()
    steps: dict[str, list[float]] = {"upgrade": [], "downgrade": []}
    for kind, protocol in (("upgrade", "consumer"), ("downgrade", "classic")):
        for i in range(3):
            members[i].close()
            start = time.monotonic()
            members[i] = Member(f"{protocol}-{i}", protocol, bootstrap, topic, group, table)
            settle()
            steps[kind].append(time.monotonic() - start)
    for m in members.values():
        m.consumer.close()
    assert table.violations == [], table.violations
    return steps


def main(kind: str) -> None:
    broker: object
    if kind == "apache":
        from streamrt.dev.apache_kafka import ApacheKafka

        broker = ApacheKafka(1, work_dir=Path(tempfile.mkdtemp())).start()
    else:
        from streamrt.broker.embedded import BrokerThread

        broker = BrokerThread(Path(tempfile.mkdtemp()), FAST_GROUP_OVERRIDES).start()
    try:
        results = [one_run(broker.bootstrap) for _ in range(RUNS)]  # type: ignore[attr-defined]
    finally:
        broker.stop()  # type: ignore[attr-defined]
    for step in ("upgrade", "downgrade"):
        totals = [sum(r[step]) for r in results]
        each = [round(s, 2) for r in results for s in r[step]]
        print(
            f"{kind} {step}: 3 steps take {statistics.median(totals):.1f} s (median of {RUNS};"
            f" {min(totals):.1f}-{max(totals):.1f}); each step: {each}"
        )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "embedded")
