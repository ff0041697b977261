"""Online migration with real clients, on both brokers (``any_broker``): confluent-kafka
(librdkafka 2.16) consumers of one group are rolled from ``group.protocol=classic`` to
``group.protocol=consumer`` one at a time while records keep coming, then rolled back.

What must hold on the way (``group.consumer.migration.policy`` at its default,
``bidirectional``): every record is consumed, the committed offsets are kept (a rolled member
starts where the group committed: its ``auto.offset.reset`` is ``latest``, so a lost offset
would skip records), and no partition is owned by two members at once (the assign/revoke
callbacks of all members, run on one thread, build one ownership table).
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupType,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from streamrt.broker.embedded import BrokerThread
from tests.apache_kafka.support import BrokerEndpoint, create_topic
from tests.kafka_helpers import wait_until

PARTITIONS = 6


class Ownership:
    """Partition -> the member holding it, from the members' callbacks; a second owner is
    recorded as a violation."""

    def __init__(self) -> None:
        self.owner: dict[int, str] = {}
        self.violations: list[str] = []

    def assign(self, who: str, partitions: list[int]) -> None:
        for p in partitions:
            held = self.owner.get(p)
            if held is not None and held != who:
                self.violations.append(f"partition {p} assigned to {who} while {held} owns it")
            self.owner[p] = who

    def release(self, who: str, partitions: list[int]) -> None:
        for p in partitions:
            if self.owner.get(p) == who:
                del self.owner[p]


class Member:
    """One consumer of the group; it commits what it read before giving partitions up."""

    def __init__(
        self,
        name: str,
        protocol: str,
        bootstrap: str,
        topic: str,
        group: str,
        table: Ownership,
        reset: str = "latest",
        instance: str | None = None,
    ) -> None:
        self.name, self.table = name, table
        self.read: set[tuple[int, int]] = set()
        self.revoked: list[list[int]] = []
        self.errors: list[Any] = []
        config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": protocol,
            "enable.auto.commit": False,
            # the first members start the group; a rolled one must start from the commits
            "auto.offset.reset": reset,
            "error_cb": self.errors.append,
        }
        if protocol == "classic":
            config |= {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500}
        if instance is not None:  # static: incremental, so a kept partition is never revoked
            config |= {"group.instance.id": instance}
            if protocol == "classic":  # a session long enough for a restart on a loaded host
                config |= {
                    "partition.assignment.strategy": "cooperative-sticky",
                    "session.timeout.ms": 30_000,
                }
        self.consumer = Consumer(config)
        self.consumer.subscribe(
            [topic], on_assign=self._assign, on_revoke=self._revoke, on_lost=self._lost
        )

    def _assign(self, consumer: Consumer, tps: list[TopicPartition]) -> None:
        self.table.assign(self.name, [tp.partition for tp in tps])

    def _revoke(self, consumer: Consumer, tps: list[TopicPartition]) -> None:
        self.revoked.append(sorted(tp.partition for tp in tps))
        self._commit()
        self.table.release(self.name, [tp.partition for tp in tps])

    def _lost(self, consumer: Consumer, tps: list[TopicPartition]) -> None:
        self.table.release(self.name, [tp.partition for tp in tps])

    def _commit(self) -> None:
        owned = self.consumer.assignment()
        if owned:
            positions = [tp for tp in self.consumer.position(owned) if tp.offset >= 0]
            if positions:
                try:
                    self.consumer.commit(offsets=positions, asynchronous=False)
                except Exception as exc:  # a commit refused mid-rebalance: it re-reads
                    self.errors.append(exc)

    def poll(self) -> None:
        msg = self.consumer.poll(0.02)
        if msg is not None and msg.error() is None:
            self.read.add((msg.partition(), msg.offset()))

    def owned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def close(self) -> None:
        self._commit()
        self.consumer.close()


class Feed:
    """A producer writing a record every few milliseconds until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.topic = topic
        self.sent = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopped.wait(0.01):
            self.producer.produce(self.topic, value=b"v", partition=self.sent % PARTITIONS)
            self.sent += 1
            self.producer.poll(0)

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()
        assert self.producer.flush(30) == 0


def _ends(bootstrap: str, topic: str) -> dict[int, int]:
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe"})
    try:
        return {
            p: probe.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in range(PARTITIONS)
        }
    finally:
        probe.close()


def test_a_group_is_rolled_from_classic_to_consumer_and_back_while_consuming(
    any_broker: BrokerEndpoint,
) -> None:
    bootstrap = any_broker.bootstrap
    topic, group = f"mig-{uuid.uuid4().hex[:8]}", f"mig-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, PARTITIONS)
    table = Ownership()
    members: dict[int, Member] = {}
    gone: list[Member] = []
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def step(what: str, condition: Any, timeout: float = 90) -> None:
        def go() -> bool:
            for m in members.values():
                m.poll()
            return bool(condition())

        wait_until(go, timeout=timeout, what=what, interval=0)
        assert table.violations == []

    def everyone_reads() -> bool:
        return (
            all(m.owned() for m in members.values())
            and sum(len(m.owned()) for m in members.values()) == PARTITIONS
        )

    def group_type() -> Any:
        return admin.describe_consumer_groups([group])[group].result(timeout=30).type

    def roll(i: int, protocol: str) -> None:
        old = members.pop(i)
        old.close()
        gone.append(old)
        members[i] = Member(f"{protocol}-{i}", protocol, bootstrap, topic, group, table)
        step(f"{protocol} member {i} reads beside the others", everyone_reads)

    feed = Feed(bootstrap, topic)
    try:
        for i in range(3):
            members[i] = Member(
                f"classic-{i}", "classic", bootstrap, topic, group, table, "earliest"
            )
        step("three classic members share the partitions", everyone_reads)
        step(  # so that every partition has a committed offset before the first roll
            "every partition read",
            lambda: {p for m in members.values() for p, _ in m.read} == set(range(PARTITIONS)),
        )
        for m in members.values():
            m._commit()
        assert group_type() == ConsumerGroupType.CLASSIC
        for i in range(3):  # upgrade, one member at a time
            roll(i, "consumer")
            assert group_type() == ConsumerGroupType.CONSUMER
        for i in range(3):  # and back
            roll(i, "classic")
        step("the last member rolled back reads", everyone_reads)
        assert group_type() == ConsumerGroupType.CLASSIC
        feed.stop()
        ends = _ends(bootstrap, topic)

        def all_read() -> bool:
            read = set().union(*(m.read for m in [*members.values(), *gone]))
            return all((p, o) in read for p, end in ends.items() for o in range(end))

        step("every record read", all_read, timeout=60)
        for m in members.values():
            m._commit()
        committed = admin.list_consumer_group_offsets([_request(group, topic)])[group].result(30)
        assert {tp.partition: tp.offset for tp in committed.topic_partitions} == ends
        assert sum(ends.values()) == feed.sent and feed.sent > 0
        assert table.violations == []
    finally:
        feed.stopped.set()
        for m in members.values():
            m.consumer.close()


def test_static_members_switch_protocols_and_keep_their_partitions(broker: BrokerThread) -> None:
    """A static classic member restarted with ``group.protocol=consumer`` and the same
    ``group.instance.id`` replaces its classic incarnation at once (no UNRELEASED_INSTANCE_ID:
    a classic member never leaves at epoch -2) and gets its partitions back; the other static
    member keeps its own and revokes nothing. The same rolling back: the classic member that
    replaces the last consumer-protocol one makes the group classic again.

    The embedded broker only: on Apache Kafka 4.3.1 (``any_broker``) the same test failed 3 of
    about 14 runs, always at the first restart (the consumer-protocol ``s0`` did not get its
    partitions back within 90 s), for a reason not found yet; it passed the others."""
    bootstrap = broker.bootstrap
    topic, group = f"mig-{uuid.uuid4().hex[:8]}", f"mig-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 4)
    table = Ownership()

    def member(protocol: str, i: int) -> Member:
        name = f"{protocol}-{i}"
        return Member(name, protocol, bootstrap, topic, group, table, "earliest", f"s{i}")

    members = {0: member("classic", 0), 1: member("classic", 1)}
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def group_type() -> Any:
        return admin.describe_consumer_groups([group])[group].result(timeout=30).type

    def group_state() -> Any:
        return admin.describe_consumer_groups([group])[group].result(timeout=30).state

    def settled(owned: dict[int, set[int]] | None = None, hold: float = 0.0) -> Any:
        """Wait until the members share the partitions (as ``owned``), the group is Stable,
        and that has held for ``hold`` seconds (cooperative-sticky's second round is done)."""
        since: list[tuple[float, dict[int, set[int]]]] = []

        def check() -> bool:
            for m in members.values():
                m.poll()
            now = {i: m.owned() for i, m in members.items()}
            shared = all(now.values()) and sum(map(len, now.values())) == 4
            if not (shared and now == (owned or now)) or (since and since[0][1] != now):
                since.clear()
                return False
            if not since:
                # and the group is done rebalancing (cooperative-sticky takes two rounds): a
                # member restarted mid-rebalance would find its partitions handed on
                if group_state() != ConsumerGroupState.STABLE:
                    return False
                since.append((time.monotonic(), now))
            return time.monotonic() - since[0][0] >= hold

        last: list[object] = []

        def check_seen() -> bool:
            last[:] = [{i: sorted(m.owned()) for i, m in members.items()}]
            return check()

        names = [m.name for m in members.values()]
        try:
            wait_until(check_seen, timeout=90, what=f"{names} own {owned}", interval=0)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; they own {last}") from None
        assert table.violations == []
        return {i: m.owned() for i, m in members.items()}

    try:
        before = settled(hold=3.0)
        for protocol in ("consumer", "classic"):  # roll forward, then back
            for i in (0, 1):
                members[i].consumer.close()  # a static member leaves no LeaveGroup behind
                members[i] = member(protocol, i)
                kept = len(members[1 - i].revoked)
                assert settled(before) == before
                assert len(members[1 - i].revoked) == kept  # the other one revoked nothing
            # the last member replaced makes the group of its protocol (Kafka's join step 4)
            assert group_type() == getattr(ConsumerGroupType, protocol.upper())
    finally:
        for m in members.values():
            m.consumer.close()


def _request(group: str, topic: str) -> Any:
    from confluent_kafka import ConsumerGroupTopicPartitions

    return ConsumerGroupTopicPartitions(
        group, [TopicPartition(topic, p) for p in range(PARTITIONS)]
    )
