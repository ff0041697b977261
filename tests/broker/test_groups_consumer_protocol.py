"""KIP-848 end to end: confluent-kafka (librdkafka 2.16) consumers with
``group.protocol=consumer`` against the embedded broker's consumer-group coordinator.

Dynamic members share a topic, one leaves and the other takes every partition over, and
commits survive; static members (``group.instance.id``) bounce within the session timeout and
get their partitions back without the other member reconciling. ConsumerGroupDescribe is read
through AdminClient.describe_consumer_groups (librdkafka calls API 69 for it) and raw.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupType,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from streamrt.admin.connection import BrokerConnection
from streamrt.broker.embedded import BrokerThread
from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from tests.broker.groups_support import GROUP_OVERRIDES, group_gauges, start_broker
from tests.kafka_helpers import create_topic, produce_tagged, wait_until

PARTITIONS = 4
OVERRIDES = {"group.consumer.heartbeat.interval.ms": "300"}


@pytest.fixture
def kip848_broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = start_broker(tmp_path / "broker", OVERRIDES)
    yield b
    b.stop()


class Member:
    """A consumer-protocol consumer recording its incremental assignments and revocations."""

    def __init__(self, bootstrap: str, topic: str, group: str, instance: str | None = None):
        self.assigned: list[list[int]] = []
        self.revoked: list[list[int]] = []
        self.records: list[tuple[int, int]] = []
        self.errors: list[Any] = []
        config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "error_cb": self.errors.append,
        }
        if instance is not None:
            config["group.instance.id"] = instance
        self.consumer = Consumer(config)
        self.consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke)

    def _on_assign(self, _: Consumer, tps: list[TopicPartition]) -> None:
        self.assigned.append(sorted(tp.partition for tp in tps))

    def _on_revoke(self, _: Consumer, tps: list[TopicPartition]) -> None:
        self.revoked.append(sorted(tp.partition for tp in tps))

    def owned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def poll(self) -> None:
        msg = self.consumer.poll(0.05)
        if msg is not None and msg.error() is None:
            self.records.append((msg.partition(), msg.offset()))


def _poll_until(members: list[Member], condition: Any, what: str, timeout: float = 60) -> None:
    def step() -> bool:
        for m in members:
            m.poll()
        return bool(condition())

    wait_until(step, timeout=timeout, what=what, interval=0.01)


def _caught_up(members: list[Member], end: int) -> bool:
    """Every member is at ``end`` on every partition it owns (reads counted alone may include
    a partition read twice while it moved, and so be reached before the end)."""
    for m in members:
        owned = m.consumer.assignment()
        if not owned or any(tp.offset != end for tp in m.consumer.position(owned)):
            return False
    return True


def _call(port: int, api_key: ApiKey, **fields: Any) -> Any:
    async def go() -> Any:
        conn = await BrokerConnection.open("127.0.0.1", port)
        try:
            return await conn.call(api_key, **fields)
        finally:
            await conn.close()

    return asyncio.run(go())


def _describe_raw(port: int, group: str) -> Any:
    async def go() -> Any:
        conn = await BrokerConnection.open("127.0.0.1", port)
        try:
            resp = await conn.call(
                ApiKey.CONSUMER_GROUP_DESCRIBE,
                group_ids=[group],
                include_authorized_operations=False,
            )
            return resp.groups[0]
        finally:
            await conn.close()

    return asyncio.run(go())


def test_two_members_share_one_leaves_the_other_takes_over_and_commits_survive(
    kip848_broker: BrokerThread,
) -> None:
    bootstrap = kip848_broker.bootstrap
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, PARTITIONS)
    produce_tagged(bootstrap, topic, PARTITIONS, 5, "a")
    a = Member(bootstrap, topic, group)
    b = Member(bootstrap, topic, group)
    try:
        _poll_until(
            [a, b],
            lambda: a.owned() and b.owned() and len(a.owned() | b.owned()) == PARTITIONS,
            "both members assigned",
        )
        assert not a.owned() & b.owned()
        _poll_until([a, b], lambda: _caught_up([a, b], 5), "reads")
        a.consumer.commit(asynchronous=False)
        b.consumer.commit(asynchronous=False)
        kept = b.owned()
        a.consumer.close()
        _poll_until([b], lambda: b.owned() == set(range(PARTITIONS)), "b takes over")
        assert kept <= b.owned()
        b.records.clear()
        # a's partitions resume after its commits: nothing is read again
        produce_tagged(bootstrap, topic, PARTITIONS, 1, "b")
        _poll_until([b], lambda: len(b.records) >= PARTITIONS, "new records only")
        assert sorted(off for _, off in b.records) == [5] * PARTITIONS
        committed = b.consumer.committed(
            [TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10
        )
        assert [tp.offset for tp in committed] == [5] * PARTITIONS
    finally:
        b.consumer.close()


def test_static_members_bounce_and_keep_their_partitions(kip848_broker: BrokerThread) -> None:
    bootstrap = kip848_broker.bootstrap
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, PARTITIONS)
    a = Member(bootstrap, topic, group, instance="A")
    b = Member(bootstrap, topic, group, instance="B")
    try:
        _poll_until(
            [a, b],
            lambda: len(a.owned()) == 2 and len(b.owned()) == 2,
            "two static members with two partitions each",
        )
        before = _describe_raw(kip848_broker.port, group)
        gauges = group_gauges(kip848_broker, group)
        assert gauges is not None and (gauges.state, gauges.members_static) == ("Stable", 2)
        a_parts, b_parts = a.owned(), b.owned()
        b_events = (list(b.assigned), list(b.revoked))
        a.consumer.close()  # a static member leaves with epoch -2: it keeps its assignment
        during = _describe_raw(kip848_broker.port, group)
        assert {m.instance_id: m.member_epoch for m in during.members}["A"] == -2
        a2 = Member(bootstrap, topic, group, instance="A")  # a new process, a new member id
        try:
            _poll_until([a2, b], lambda: a2.owned() == a_parts, "A back with its partitions")
            for _ in range(20):  # a few heartbeat intervals: nothing else moves
                b.poll()
                a2.poll()
            after = _describe_raw(kip848_broker.port, group)
            assert after.group_epoch == before.group_epoch
            # /metrics as an operator sees it: same generation (epoch), no new assignment
            assert group_gauges(kip848_broker, group) == gauges
            assert b.owned() == b_parts and (b.assigned, b.revoked) == b_events
            assert len(after.members) == 2
        finally:
            a2.consumer.close()
    finally:
        b.consumer.close()


def test_admin_client_describes_and_lists_a_consumer_group(kip848_broker: BrokerThread) -> None:
    bootstrap = kip848_broker.bootstrap
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, PARTITIONS)
    a = Member(bootstrap, topic, group)
    try:
        _poll_until([a], lambda: len(a.owned()) == PARTITIONS, "assigned")
        admin = AdminClient({"bootstrap.servers": bootstrap})
        described = admin.describe_consumer_groups([group])[group].result(timeout=30)
        assert described.type == ConsumerGroupType.CONSUMER
        assert len(described.members) == 1
        member = described.members[0]
        assert {tp.partition for tp in member.assignment.topic_partitions} == set(range(PARTITIONS))
        raw = _describe_raw(kip848_broker.port, group)
        assert (raw.group_state, raw.assignor_name) == ("Stable", "uniform")
        unknown = _describe_raw(kip848_broker.port, "no-such-group")
        assert unknown.error_code == ErrorCode.group_id_not_found
        classic_view = _call(
            kip848_broker.port,
            ApiKey.DESCRIBE_GROUPS,
            groups=[group],
            include_authorized_operations=False,
        ).groups[0]
        # DescribeGroups (the classic API) does not describe a consumer group, as Kafka's
        assert (classic_view.error_code, classic_view.group_state) == (
            ErrorCode.group_id_not_found,
            "Dead",
        )
        listed = admin.list_consumer_groups().result(timeout=30).valid
        mine = [g for g in listed if g.group_id == group]
        assert len(mine) == 1 and mine[0].type == ConsumerGroupType.CONSUMER
        # a classic group: ConsumerGroupDescribe says GROUP_ID_NOT_FOUND ("not a consumer
        # group") and librdkafka falls back to DescribeGroups, as against Kafka
        classic = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{group}-classic"})
        classic.subscribe([topic])
        try:
            wait_until(lambda: classic.poll(0.05) is None and classic.assignment(), timeout=60)
            old = admin.describe_consumer_groups([f"{group}-classic"])[f"{group}-classic"]
            assert old.result(timeout=30).type == ConsumerGroupType.CLASSIC
        finally:
            classic.close()
    finally:
        a.consumer.close()


def test_a_classic_member_whose_subscription_is_malformed_cannot_join_a_consumer_group(
    kip848_broker: BrokerThread,
) -> None:
    """A classic JoinGroup to a consumer group with members is served as a classic member of
    it (online migration, ``tests/broker/consumer_group/test_migration*.py``); one whose
    embedded subscription is not the consumer protocol is refused with
    INCONSISTENT_GROUP_PROTOCOL, after the member id is handed out (Kafka's order)."""
    bootstrap = kip848_broker.bootstrap
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, PARTITIONS)
    a = Member(bootstrap, topic, group)
    try:
        _poll_until([a], lambda: len(a.owned()) == PARTITIONS, "assigned")

        async def join(member_id: str) -> Any:
            conn = await BrokerConnection.open("127.0.0.1", kip848_broker.port)
            try:
                return await conn.call(
                    ApiKey.JOIN_GROUP,
                    group_id=group,
                    session_timeout=10000,
                    rebalance_timeout=10000,
                    member_id=member_id,
                    group_instance_id=None,
                    protocol_type="consumer",
                    protocols=[{"name": "range", "metadata": b""}],
                    reason=None,
                )
            finally:
                await conn.close()

        first = asyncio.run(join(""))
        assert first.error_code == ErrorCode.member_id_required
        refused = asyncio.run(join(first.member_id))
        assert refused.error_code == ErrorCode.inconsistent_group_protocol
        assert a.owned() == set(range(PARTITIONS))  # the group is as it was
    finally:
        a.consumer.close()


def test_rebalance_protocols_without_consumer_turn_kip848_off(tmp_path: Path) -> None:
    b = start_broker(tmp_path / "off", {"group.coordinator.rebalance.protocols": "classic"})
    try:

        async def heartbeat() -> Any:
            conn = await BrokerConnection.open("127.0.0.1", b.port)
            try:
                return await conn.call(
                    ApiKey.CONSUMER_GROUP_HEARTBEAT,
                    group_id="g",
                    member_id="m",
                    member_epoch=0,
                    instance_id=None,
                    rack_id=None,
                    rebalance_timeout=1000,
                    subscribed_topic_names=["t"],
                    subscribed_topic_regex=None,
                    server_assignor=None,
                    topic_partitions=[],
                )
            finally:
                await conn.close()

        assert asyncio.run(heartbeat()).error_code == ErrorCode.unsupported_version
    finally:
        b.stop()


def test_a_broker_restart_keeps_members_epochs_and_assignments_and_deleted_groups(
    tmp_path: Path,
) -> None:
    """Consumer groups are persisted in __consumer_offsets: after a restart a dynamic and a
    static member keep their member ids, epochs and partitions (their next heartbeats are
    accepted: no revocation, no new assignment, the group epoch unchanged) and resume from
    their commits; a group deleted before the restart stays deleted."""
    b = start_broker(tmp_path / "restart", OVERRIDES)
    port = b.port
    topic, group, deleted = "t-restart", "g-restart", "g-deleted"
    create_topic(b.bootstrap, topic, PARTITIONS)
    produce_tagged(b.bootstrap, topic, PARTITIONS, 3, "a")
    gone = Member(b.bootstrap, topic, deleted)
    _poll_until([gone], lambda: len(gone.owned()) == PARTITIONS, "the other group assigned")
    gone.consumer.close()
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.delete_consumer_groups([deleted])[deleted].result(timeout=30)
    d = Member(b.bootstrap, topic, group)
    s = Member(b.bootstrap, topic, group, instance="S")
    try:
        _poll_until(
            [d, s],
            lambda: len(d.owned()) == 2 and len(s.owned()) == 2 and _caught_up([d, s], 3),
            "two members, two partitions each, every record read",
        )
        d.consumer.commit(asynchronous=False)
        s.consumer.commit(asynchronous=False)
        before = _describe_raw(port, group)
        assert before.group_state == "Stable" and before.group_epoch >= 2
        events = [(list(m.assigned), list(m.revoked), m.owned()) for m in (d, s)]
        b.stop()
        b = BrokerThread(tmp_path / "restart", {**GROUP_OVERRIDES, **OVERRIDES}, port=port).start()
        loaded = _describe_raw(port, group)
        assert loaded.error_code == ErrorCode.none and loaded.group_epoch == before.group_epoch
        produce_tagged(b.bootstrap, topic, PARTITIONS, 1, "b")
        d.records.clear()
        s.records.clear()
        _poll_until([d, s], lambda: len(d.records) + len(s.records) >= PARTITIONS, "records after")
        for _ in range(20):  # a few heartbeat intervals on the restarted broker
            d.poll()
            s.poll()
        assert sorted(off for _, off in d.records + s.records) == [3] * PARTITIONS
        after = _describe_raw(port, group)
        assert after.group_epoch == before.group_epoch
        members = {(m.member_id, m.instance_id, m.member_epoch) for m in after.members}
        assert members == {(m.member_id, m.instance_id, m.member_epoch) for m in before.members}
        assert [(list(m.assigned), list(m.revoked), m.owned()) for m in (d, s)] == events
        assert not [e for e in d.errors + s.errors if e.fatal()]
        assert _describe_raw(port, deleted).error_code == ErrorCode.group_id_not_found
    finally:
        d.consumer.close()
        s.consumer.close()
        b.stop()


def test_delete_groups_refuses_an_active_consumer_group_and_deletes_an_empty_one(
    kip848_broker: BrokerThread,
) -> None:
    bootstrap = kip848_broker.bootstrap
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, PARTITIONS)
    produce_tagged(bootstrap, topic, PARTITIONS, 1, "a")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    a = Member(bootstrap, topic, group)
    try:
        _poll_until([a], lambda: len(a.records) >= PARTITIONS, "records")
        a.consumer.commit(asynchronous=False)
        busy = admin.delete_consumer_groups([group])[group]
        with pytest.raises(KafkaException) as refused:
            busy.result(timeout=30)
        assert refused.value.args[0].code() == KafkaError.NON_EMPTY_GROUP
    finally:
        a.consumer.close()
    admin.delete_consumer_groups([group])[group].result(timeout=30)
    gone = _describe_raw(kip848_broker.port, group)
    assert gone.error_code == ErrorCode.group_id_not_found
    fresh = Member(bootstrap, topic, group)  # the offsets went with the group: from the start
    try:
        _poll_until([fresh], lambda: len(fresh.records) >= PARTITIONS, "records again")
        assert sorted(off for _, off in fresh.records) == [0] * PARTITIONS
    finally:
        fresh.consumer.close()


def test_exactly_once_with_the_consumer_protocol_commits_offsets_in_the_transaction(
    kip848_broker: BrokerThread,
) -> None:
    """send_offsets_to_transaction with a consumer-protocol member: the TxnOffsetCommit carries
    the member epoch as its generation; the offsets are committed with the transaction."""
    bootstrap = kip848_broker.bootstrap
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, PARTITIONS)
    create_topic(bootstrap, f"{topic}-out", 1)
    produce_tagged(bootstrap, topic, PARTITIONS, 3, "a")
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{group}"})
    producer.init_transactions(30)
    a = Member(bootstrap, topic, group)
    try:
        _poll_until([a], lambda: len(a.records) >= PARTITIONS * 3, "records")
        producer.begin_transaction()
        producer.produce(f"{topic}-out", b"out")
        positions = a.consumer.position(list(a.consumer.assignment()))
        producer.send_offsets_to_transaction(positions, a.consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
        committed = a.consumer.committed(
            [TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10
        )
        assert [tp.offset for tp in committed] == [3] * PARTITIONS
        assert not [e for e in a.errors if e.fatal()]
    finally:
        a.consumer.close()


def test_offset_delete_keeps_subscribed_topics_and_deletes_once_the_group_is_empty(
    kip848_broker: BrokerThread,
) -> None:
    bootstrap = kip848_broker.bootstrap
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 1)
    produce_tagged(bootstrap, topic, 1, 2, "a")
    a = Member(bootstrap, topic, group)

    def delete() -> Any:
        return _call(
            kip848_broker.port,
            ApiKey.OFFSET_DELETE,
            group_id=group,
            topics=[{"name": topic, "partitions": [{"partition_index": 0}]}],
        )

    try:
        _poll_until([a], lambda: len(a.records) >= 2, "records")
        a.consumer.commit(asynchronous=False)
        refused = delete()
        assert refused.error_code == ErrorCode.none
        assert refused.topics[0].partitions[0].error_code == ErrorCode.group_subscribed_to_topic
    finally:
        a.consumer.close()
    deleted = delete()
    assert deleted.topics[0].partitions[0].error_code == ErrorCode.none
    fetched = _call(
        kip848_broker.port,
        ApiKey.OFFSET_FETCH,
        require_stable=False,
        groups=[{"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]}],
    )
    assert fetched.groups[0].topics[0].partitions[0].committed_offset == -1
