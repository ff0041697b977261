"""KIP-345 end to end with confluent-kafka (librdkafka) consumers using ``group.instance.id``.

librdkafka speaks newer group API versions than aiokafka (JoinGroup v5, Heartbeat v3 with the
instance id), so it is the client that sees FENCED_INSTANCE_ID as the fatal error it is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from streamrt.broker.embedded import BrokerThread
from tests.broker.groups_support import group_gauges, request_count, scrape, stable_with
from tests.kafka_helpers import create_topic, produce_tagged, wait_until

PARTITIONS = 6


class CKMember:
    """A confluent-kafka consumer with its revocations, fatal errors and received records."""

    def __init__(
        self, bootstrap: str, topic: str, group: str, instance: str | None, session_ms: int = 6000
    ) -> None:
        self.instance = instance
        self.revoked: list[list[int]] = []
        self.errors: list[KafkaError] = []
        self.records: list[tuple[int, int, bytes]] = []
        config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": f"ck-{instance}",
            "session.timeout.ms": session_ms,
            "heartbeat.interval.ms": 300,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": 60000,
            "error_cb": self.errors.append,
        }
        if instance is not None:
            config["group.instance.id"] = instance
        self.consumer = Consumer(config)
        self.consumer.subscribe([topic], on_revoke=self._on_revoke)
        self.closed = False

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if not self.closed:
            self.revoked.append(sorted(tp.partition for tp in partitions))

    def owned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def poll_once(self) -> None:
        msg = self.consumer.poll(0.05)
        if msg is None:
            return
        if msg.error() is not None:
            self.errors.append(msg.error())  # librdkafka hands fatal errors to poll too
        else:
            self.records.append((msg.partition(), msg.offset(), msg.value()))

    def read_to(self, offset: int) -> bool:
        """Whether every owned partition's position is ``offset``. Records seen are not enough:
        an eager rebalance restarts a kept partition from its committed offset, so records read
        in an earlier generation say nothing of what a commit now would store."""
        assignment = self.consumer.assignment()
        if not assignment:
            return False
        return all(tp.offset == offset for tp in self.consumer.position(assignment))

    def close(self) -> None:
        self.closed = True
        self.consumer.close()


def pump(
    members: list[CKMember], what: str, condition: Callable[[], bool], limit: float = 20
) -> None:
    """Poll every member (librdkafka runs callbacks in poll) until ``condition`` holds."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        for m in members:
            if not m.closed:
                m.poll_once()


def _formed(members: list[CKMember]) -> Callable[[], bool]:
    def check() -> bool:
        owned = [m.owned() for m in members]
        return all(owned) and set().union(*owned) == set(range(PARTITIONS))

    return check


def test_confluent_static_member_restart_within_session_without_rebalance(
    group_broker: BrokerThread, topic_name: str
) -> None:
    bootstrap, group = group_broker.bootstrap, "ck-restart"
    create_topic(bootstrap, topic_name, PARTITIONS)
    produce_tagged(bootstrap, topic_name, PARTITIONS, 2, "old")
    members = [CKMember(bootstrap, topic_name, group, f"ck-{i}") for i in range(3)]
    replacement: CKMember | None = None
    try:
        pump(members, "every member to own partitions", _formed(members))
        wait_until(stable_with(group_broker, group, 3), 20, "a stable group of 3")
        pump(
            members,
            "each member to read its partitions to the end",
            lambda: all(m.read_to(2) for m in members),
        )
        for m in members:
            m.consumer.commit(asynchronous=False)
        before = group_gauges(group_broker, group)
        assert before is not None and before.members_static == 3
        owned = {m.instance: m.owned() for m in members}
        for m in members:
            m.revoked.clear()

        victim, others = members[1], [members[0], members[2]]
        victim.close()
        # librdkafka does not send LeaveGroup when group.instance.id is set.
        assert request_count(group_broker, "leave_group") == 0
        produce_tagged(bootstrap, topic_name, PARTITIONS, 1, "new")
        replacement = CKMember(bootstrap, topic_name, group, "ck-1")
        pump(
            [*others, replacement],
            "the restarted member's records",
            lambda: len(replacement.records) == len(owned["ck-1"]),
        )
        assert replacement.owned() == owned["ck-1"]
        assert sorted(p for p, _, _ in replacement.records) == sorted(owned["ck-1"])
        assert {o for _, o, _ in replacement.records} == {2}  # from the committed offsets

        after = group_gauges(group_broker, group)
        assert after is not None
        assert (after.state, after.generation) == ("Stable", before.generation)
        assert after.rebalances_total == before.rebalances_total
        for m in others:
            assert m.revoked == [] and m.owned() == owned[m.instance]
    finally:
        for m in [members[0], members[2]] + ([replacement] if replacement else []):
            m.close()


def test_two_consumers_with_one_instance_id_fence_the_older(
    group_broker: BrokerThread, topic_name: str
) -> None:
    bootstrap, group = group_broker.bootstrap, "ck-fenced"
    create_topic(bootstrap, topic_name, PARTITIONS)
    older = CKMember(bootstrap, topic_name, group, "dup")
    newer: CKMember | None = None
    try:
        pump([older], "the first consumer to own every partition", _formed([older]))
        before = group_gauges(group_broker, group)
        assert before is not None

        newer = CKMember(bootstrap, topic_name, group, "dup")
        pump(
            [older, newer],
            "a fatal error in the older consumer",
            lambda: any(e.code() == KafkaError._FATAL for e in older.errors),
        )
        fatal = [e for e in older.errors if e.code() == KafkaError._FATAL]
        # librdkafka wraps the broker's code in _FATAL; its text is code 82's description.
        assert KafkaError(KafkaError.FENCED_INSTANCE_ID).str() in fatal[0].str()
        pump([newer], "the newer consumer to own every partition", _formed([newer]))
        assert not any(e.code() == KafkaError._FATAL for e in newer.errors)
        after = group_gauges(group_broker, group)
        assert after is not None
        # The replacement of a static member in Stable needs no rebalance.
        assert (after.generation, after.members_static) == (before.generation, 1)
    finally:
        older.close()
        if newer is not None:
            newer.close()


def test_metrics_show_groups_and_requests_per_api(
    group_broker: BrokerThread, topic_name: str
) -> None:
    bootstrap, group = group_broker.bootstrap, "ck-metrics"
    create_topic(bootstrap, topic_name, PARTITIONS)
    members = [
        CKMember(bootstrap, topic_name, group, "static-0"),
        CKMember(bootstrap, topic_name, group, None),
    ]
    try:
        pump(members, "both members to own partitions", _formed(members))
        wait_until(stable_with(group_broker, group, 2), 20, "a stable group of 2")
        samples = scrape(group_broker)
        g = (("group", group),)
        assert samples[("streamrt_group_state", (*g, ("state", "Stable")))] == 1
        generation = samples[("streamrt_group_generation", g)]
        assert generation >= 1
        assert samples[("streamrt_group_members", (*g, ("membership", "static")))] == 1
        assert samples[("streamrt_group_members", (*g, ("membership", "dynamic")))] == 1
        # Every completed join phase started a generation.
        assert samples[("streamrt_group_rebalances_total", g)] == generation
        for api in ("api_versions", "metadata", "find_coordinator", "join_group", "sync_group"):
            count = samples[("streamrt_broker_requests_total", (("api", api),))]
            assert count >= 1, api
            timed = samples[("streamrt_broker_request_seconds_count", (("api", api),))]
            assert timed == count, api
            assert samples[("streamrt_broker_request_seconds_sum", (("api", api),))] >= 0
        # A dynamic member joins twice on v4+ (MEMBER_ID_REQUIRED first).
        assert samples[("streamrt_broker_requests_total", (("api", "join_group"),))] >= 3
    finally:
        for m in members:
            m.close()
