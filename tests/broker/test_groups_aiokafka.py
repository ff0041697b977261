"""KIP-345 end to end: real aiokafka consumers with ``group_instance_id`` against the broker.

Each test checks what static membership promises a rolling deploy: a member back within its
session keeps its partitions with no rebalance; one that stays away, or is removed by the
operator, is replaced by a rebalance; the broker's own restart changes nothing.
"""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition

from streamrt.admin.client import AdminClient
from streamrt.broker.embedded import BrokerThread
from streamrt.cli import main
from tests.broker.groups_support import group_gauges, request_count, stable_with
from tests.kafka_helpers import create_topic, produce_tagged, wait_until_async

PARTITIONS = 6


class RevocationLog(ConsumerRebalanceListener):  # type: ignore[misc]
    """Remembers every revocation aiokafka reports (each one means the member rejoined)."""

    def __init__(self) -> None:
        self.revoked: list[set[TopicPartition]] = []

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.revoked.append(set(revoked))

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        return None


class Member:
    """One aiokafka consumer of the test group and the revocations it saw."""

    def __init__(
        self, bootstrap: str, topic: str, group: str, instance: str | None, session_ms: int
    ) -> None:
        self.instance = instance
        self.listener = RevocationLog()
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            group_instance_id=instance,
            client_id=f"client-{instance}",
            session_timeout_ms=session_ms,
            heartbeat_interval_ms=min(300, session_ms // 4),
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        self.consumer.subscribe([topic], listener=self.listener)

    async def start(self) -> Member:
        await self.consumer.start()
        return self

    def assignment(self) -> set[TopicPartition]:
        return set(self.consumer.assignment())

    async def consume(self, count: int, limit: float = 20) -> list[tuple[int, int, bytes]]:
        """(partition, offset, value) of the next ``count`` records; fail after ``limit`` s."""
        got: list[tuple[int, int, bytes]] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        while len(got) < count:
            if loop.time() > deadline:
                pytest.fail(f"{self.instance}: got {len(got)} of {count} records")
            batch = await self.consumer.getmany(timeout_ms=200)
            got += [(m.partition, m.offset, m.value) for ms in batch.values() for m in ms]
        return got


async def _form(members: list[Member], topic: str) -> None:
    everything = {TopicPartition(topic, p) for p in range(PARTITIONS)}

    def formed() -> bool:
        owned = [m.assignment() for m in members]
        return all(owned) and set().union(*owned) == everything

    await wait_until_async(formed, 20, "every member to own partitions")


def test_static_member_restarted_within_session_keeps_partitions_without_rebalance(
    group_broker: BrokerThread, topic_name: str
) -> None:
    bootstrap, group = group_broker.bootstrap, "restart-within-session"
    create_topic(bootstrap, topic_name, PARTITIONS)
    produce_tagged(bootstrap, topic_name, PARTITIONS, 2, "old")

    async def scenario() -> None:
        ids = ["inst-0", "inst-1", "inst-2"]
        members = [await Member(bootstrap, topic_name, group, i, 6000).start() for i in ids]
        replacement: Member | None = None
        try:
            await _form(members, topic_name)
            await wait_until_async(stable_with(group_broker, group, 3), 20, "a stable group of 3")
            for m in members:
                await m.consume(2 * len(m.assignment()))
                await m.consumer.commit()
            before = group_gauges(group_broker, group)
            assert before is not None and before.members_static == 3
            owned = {m.instance: m.assignment() for m in members}
            for m in members:
                m.listener.revoked.clear()

            victim, others = members[1], [members[0], members[2]]
            await victim.consumer.stop()  # aiokafka sends no LeaveGroup for a static member
            produce_tagged(bootstrap, topic_name, PARTITIONS, 1, "new")
            replacement = await Member(bootstrap, topic_name, group, "inst-1", 6000).start()
            await wait_until_async(
                lambda: replacement is not None and replacement.assignment() == owned["inst-1"],
                20,
                "the restarted member to get its partitions back",
            )
            resumed = await replacement.consume(len(owned["inst-1"]))
            expected = sorted(tp.partition for tp in owned["inst-1"])
            assert sorted(p for p, _, _ in resumed) == expected
            assert {o for _, o, _ in resumed} == {2}  # from the committed offsets
            assert all(v.startswith(b"new-") for _, _, v in resumed)

            after = group_gauges(group_broker, group)
            assert after is not None
            assert (after.state, after.generation) == ("Stable", before.generation)
            assert after.rebalances_total == before.rebalances_total
            assert after.members_static == 3
            assert request_count(group_broker, "leave_group") == 0
            for m in others:
                assert m.listener.revoked == []
                assert m.assignment() == owned[m.instance]
        finally:
            for m in [members[0], members[2]] + ([replacement] if replacement else []):
                await m.consumer.stop()

    asyncio.run(scenario())


def test_static_member_away_past_its_session_timeout_is_removed_and_group_rebalances(
    group_broker: BrokerThread, topic_name: str
) -> None:
    bootstrap, group = group_broker.bootstrap, "session-expiry"
    create_topic(bootstrap, topic_name, PARTITIONS)

    async def scenario() -> None:
        a = await Member(bootstrap, topic_name, group, "inst-a", 2000).start()
        b = await Member(bootstrap, topic_name, group, "inst-b", 2000).start()
        try:
            await _form([a, b], topic_name)
            await wait_until_async(stable_with(group_broker, group, 2), 20, "a stable group of 2")
            before = group_gauges(group_broker, group)
            assert before is not None
            a.listener.revoked.clear()
            await b.consumer.stop()
            everything = {TopicPartition(topic_name, p) for p in range(PARTITIONS)}
            await wait_until_async(
                lambda: a.assignment() == everything, 20, "the survivor to own all"
            )
            await wait_until_async(stable_with(group_broker, group, 1), 20, "a stable group of 1")
            after = group_gauges(group_broker, group)
            assert after is not None
            assert after.generation == before.generation + 1
            assert after.rebalances_total == before.rebalances_total + 1
            assert (after.members_static, after.members_dynamic) == (1, 0)
            assert len(a.listener.revoked) == 1
            assert request_count(group_broker, "leave_group") == 0
        finally:
            await a.consumer.stop()

    asyncio.run(scenario())


def test_removing_a_static_member_through_the_cli_rebalances_at_once(
    group_broker: BrokerThread, topic_name: str
) -> None:
    bootstrap, group = group_broker.bootstrap, "cli-removal"
    create_topic(bootstrap, topic_name, PARTITIONS)
    # The session (60 s) is far beyond the wait below: only the removal can free the partitions.
    session_ms = 60_000

    async def scenario() -> None:
        a = await Member(bootstrap, topic_name, group, "inst-a", session_ms).start()
        b = await Member(bootstrap, topic_name, group, "inst-b", session_ms).start()
        try:
            await _form([a, b], topic_name)
            await wait_until_async(stable_with(group_broker, group, 2), 20, "a stable group of 2")
            before = group_gauges(group_broker, group)
            assert before is not None
            await b.consumer.stop()
            argv = ["groups", "remove-members", "--bootstrap-server", bootstrap, "--group", group]
            code = await asyncio.to_thread(main, [*argv, "--instance-id", "inst-b"])
            assert code == 0
            everything = {TopicPartition(topic_name, p) for p in range(PARTITIONS)}
            await wait_until_async(
                lambda: a.assignment() == everything, 10, "the survivor to own every partition"
            )
            await wait_until_async(stable_with(group_broker, group, 1), 10, "a stable group of 1")
            after = group_gauges(group_broker, group)
            assert after is not None
            assert after.generation == before.generation + 1
            assert (after.members_static, after.members_dynamic) == (1, 0)
        finally:
            await a.consumer.stop()

    asyncio.run(scenario())


def test_broker_restart_keeps_offsets_and_static_members_without_rebalance(
    group_broker: BrokerThread, topic_name: str
) -> None:
    bootstrap, group = group_broker.bootstrap, "broker-restart"
    create_topic(bootstrap, topic_name, PARTITIONS)
    produce_tagged(bootstrap, topic_name, PARTITIONS, 2, "old")
    session_ms = 6000

    async def scenario() -> None:
        members = [
            await Member(bootstrap, topic_name, group, i, session_ms).start()
            for i in ("inst-a", "inst-b")
        ]
        try:
            await _form(members, topic_name)
            await wait_until_async(stable_with(group_broker, group, 2), 20, "a stable group of 2")
            for m in members:
                await m.consume(2 * len(m.assignment()))
                await m.consumer.commit()
            before = group_gauges(group_broker, group)
            assert before is not None
            owned = [m.assignment() for m in members]
            for m in members:
                m.listener.revoked.clear()

            await asyncio.to_thread(group_broker.restart)
            assert group_broker.bootstrap == bootstrap

            # Heartbeats must reach the new broker for more than one session timeout: a
            # member that had not come back would have expired by then.
            heartbeats_per_session = 2 * session_ms // 300
            await wait_until_async(
                lambda: request_count(group_broker, "heartbeat") > heartbeats_per_session,
                30,
                "members to heartbeat for a session timeout",
            )
            after = group_gauges(group_broker, group)
            assert after is not None
            assert (after.state, after.generation) == ("Stable", before.generation)
            assert (after.members_static, after.rebalances_total) == (2, 0)
            assert [m.assignment() for m in members] == owned
            assert all(m.listener.revoked == [] for m in members)

            async with AdminClient(bootstrap) as admin:
                committed = await admin.fetch_committed_offsets(group)
            assert {k: v.offset for k, v in committed.items()} == {
                (topic_name, p): 2 for p in range(PARTITIONS)
            }
            produce_tagged(bootstrap, topic_name, PARTITIONS, 1, "new")
            for m in members:
                got = await m.consume(len(m.assignment()))
                assert {o for _, o, _ in got} == {2}
        finally:
            for m in members:
                await m.consumer.stop()

    asyncio.run(scenario())


def test_mixed_static_and_dynamic_members(group_broker: BrokerThread, topic_name: str) -> None:
    bootstrap, group = group_broker.bootstrap, "mixed"
    create_topic(bootstrap, topic_name, PARTITIONS)

    async def scenario() -> None:
        static = [
            await Member(bootstrap, topic_name, group, i, 6000).start() for i in ("s-0", "s-1")
        ]
        dynamic = await Member(bootstrap, topic_name, group, None, 6000).start()
        replacement: Member | None = None
        try:
            await _form([*static, dynamic], topic_name)
            await wait_until_async(stable_with(group_broker, group, 3), 20, "a stable group of 3")
            before = group_gauges(group_broker, group)
            assert before is not None
            assert (before.members_static, before.members_dynamic) == (2, 1)
            owned = static[1].assignment()

            # A static member's bounce does not disturb the dynamic one.
            for m in (static[0], dynamic):
                m.listener.revoked.clear()
            await static[1].consumer.stop()
            replacement = await Member(bootstrap, topic_name, group, "s-1", 6000).start()
            await wait_until_async(
                lambda: replacement.assignment() == owned, 20, "s-1 to get its partitions"
            )
            bounced = group_gauges(group_broker, group)
            assert bounced is not None and bounced.generation == before.generation
            assert dynamic.listener.revoked == [] and static[0].listener.revoked == []

            # A dynamic member leaves with LeaveGroup: the static ones take its partitions.
            await dynamic.consumer.stop()
            everything = {TopicPartition(topic_name, p) for p in range(PARTITIONS)}
            await wait_until_async(
                lambda: static[0].assignment() | replacement.assignment() == everything,
                20,
                "the static members to own every partition",
            )
            await wait_until_async(stable_with(group_broker, group, 2), 20, "a stable group of 2")
            after = group_gauges(group_broker, group)
            assert after is not None
            assert after.generation == before.generation + 1
            assert (after.members_static, after.members_dynamic) == (2, 0)
            assert request_count(group_broker, "leave_group") == 1
        finally:
            await static[0].consumer.stop()
            if replacement is not None:
                await replacement.consumer.stop()

    asyncio.run(scenario())
