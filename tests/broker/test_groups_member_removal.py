"""Scale-in by removal on a KIP-848 consumer group: confluent-kafka (librdkafka) consumers with
``group.protocol=consumer`` and ``group.instance.id``; one closes (a static member leaves at
epoch -2 and keeps its partitions), ``streamrt groups remove-members`` removes it by instance
id with one LeaveGroup, and the survivor takes its partitions over at its next heartbeat
instead of after the session timeout, and reads every record of them once. LeaveGroup's
per-member errors are Kafka 4.3.1's (``classicGroupLeaveToConsumerGroup``): the same test runs
on Apache Kafka 4.3.1 (marker ``kafka``).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from streamrt.admin import AdminClient
from streamrt.cli import main as cli_main
from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from tests.broker.groups_support import start_broker
from tests.broker.test_groups_consumer_protocol import (
    PARTITIONS,
    Member,
    _call,
    _describe_raw,
    _poll_until,
)
from tests.kafka_helpers import create_topic, produce_tagged

SESSION_MS = 60_000  # far beyond every wait below: a takeover here is never an expiry
OVERRIDES = {
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.session.timeout.ms": str(SESSION_MS),
}


@dataclass(frozen=True)
class Target:
    bootstrap: str
    port: int
    session_s: float  # the broker's group.consumer.session.timeout.ms


@pytest.fixture(params=["embedded", pytest.param("apache-kafka", marks=pytest.mark.kafka)])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    """The embedded broker (fast heartbeats, 60 s sessions) or Apache Kafka 4.3.1 (its
    defaults: 5 s heartbeats, 45 s sessions)."""
    if request.param == "embedded":
        broker = start_broker(tmp_path / "broker", OVERRIDES)
        yield Target(broker.bootstrap, broker.port, SESSION_MS / 1000)
        broker.stop()
        return
    from tests.apache_kafka.support import clean_slate

    bootstrap = request.getfixturevalue("apache_kafka").bootstrap
    yield Target(bootstrap, int(bootstrap.rsplit(":", 1)[1]), 45.0)
    clean_slate(bootstrap)


def test_a_closed_static_consumer_is_removed_by_the_cli_and_the_survivor_takes_over(
    target: Target, capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap, port = target.bootstrap, target.port
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, PARTITIONS)
    a = Member(bootstrap, topic, group, instance="A")
    b = Member(bootstrap, topic, group, instance="B")
    try:
        _poll_until([a, b], lambda: len(a.owned()) == len(b.owned()) == 2, "2 partitions each")
        a_parts, b_parts = a.owned(), b.owned()
        produce_tagged(bootstrap, topic, PARTITIONS, 5, "a")  # each record read by its owner
        _poll_until([a, b], lambda: len(a.records) + len(b.records) == 20, "the first 20 read")
        a.consumer.commit(asynchronous=False)
        a.consumer.close()  # a static member leaves with epoch -2: it keeps its partitions
        epoch = _describe_raw(port, group).group_epoch
        produce_tagged(bootstrap, topic, PARTITIONS, 5, "b")

        # -- a wrong member id for B's instance id is fenced, and B keeps its place -----------
        fenced = _call(
            port,
            ApiKey.LEAVE_GROUP,
            group_id=group,
            members=[{"member_id": "not-b", "group_instance_id": "B", "reason": None}],
        )
        assert [(m.group_instance_id, m.error_code) for m in fenced.members] == [
            ("B", ErrorCode.fenced_instance_id)
        ]
        assert _describe_raw(port, group).group_epoch == epoch

        # -- the CLI removes A (and reports X, no member); one new group epoch ----------------
        revoked = list(b.revoked)
        began = time.monotonic()
        argv = ["groups", "remove-members", "--bootstrap-server", bootstrap, "--group", group]
        argv += ["--instance-id", "A", "--instance-id", "X", "--output", "json"]
        code = cli_main(argv)
        out = json.loads(capsys.readouterr().out)
        assert code == 3  # some ids were not members
        assert out["results"]["A"] is None
        assert out["results"]["X"]["code"] == "UNKNOWN_MEMBER_ID"
        described = _describe_raw(port, group)
        assert described.group_epoch == epoch + 1
        assert [m.instance_id for m in described.members] == ["B"]

        # -- B takes A's partitions over and reads what A did not -----------------------------
        _poll_until([b], lambda: b.owned() == set(range(PARTITIONS)), "B owns every partition")
        assert time.monotonic() - began < target.session_s  # the removal, not an expiry
        assert b.assigned[-1] == sorted(a_parts) and b.revoked == revoked  # B kept its own
        _poll_until([b], lambda: len(a.records) + len(b.records) == 40, "every record read")
        by_partition: dict[int, list[int]] = {}
        for p, offset in a.records + b.records:
            by_partition.setdefault(p, []).append(offset)
        assert {p: sorted(o) for p, o in by_partition.items()} == {
            p: list(range(10)) for p in range(PARTITIONS)
        }  # each record once: A's committed offsets were B's starting point
        assert b_parts < b.owned()
    finally:
        b.consumer.close()
        # static members stay at -2 until their session ends: removed now, the group can be
        # deleted at once (the clean slate after an Apache Kafka test cannot list a consumer
        # group's members: DescribeGroups does not describe it)
        asyncio.run(_remove(bootstrap, group, ["A", "B"]))


async def _remove(bootstrap: str, group: str, instance_ids: list[str]) -> None:
    async with AdminClient(bootstrap) as admin:
        await admin.remove_members(group, instance_ids)
