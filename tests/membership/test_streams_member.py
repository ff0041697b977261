"""``StreamsGroupMember`` (KIP-1071 client) against the real embedded broker's streams groups.

Tasks move only after their previous owner revoked them (its listener ran first); a member the
group dropped loses its tasks, rejoins at epoch 0 and gets tasks again; statuses are logged
with their names; a broker without streams groups is a clear error naming the version needed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest

from streamrt.admin.connection import BrokerConnection
from streamrt.broker.embedded import BrokerThread
from streamrt.errors import ErrorCode
from streamrt.membership.config import MemberConfig
from streamrt.membership.streams_member import (
    StreamsGroupMember,
    StreamsTaskListener,
    UnsupportedStreamsGroupError,
)
from streamrt.membership.streams_protocol import (
    StreamsIdentity,
    StreamsSubtopology,
    StreamsTasks,
    StreamsTopology,
    TaskIds,
    task_names,
)
from streamrt.wire.api_keys import ApiKey
from tests.kafka_helpers import create_topic, wait_until_async

GROUP = "sg-app"
TOPOLOGY = StreamsTopology((StreamsSubtopology("0", source_topics=("in",)),))
FAST = {"group.streams.heartbeat.interval.ms": "500"}


class Log(StreamsTaskListener):
    """Records every callback, in order, in a log shared by the members of a test."""

    def __init__(self, name: str, log: list[tuple[str, str, tuple[str, ...]]]) -> None:
        self.name, self.log = name, log
        self.active: tuple[str, ...] = ()

    async def on_tasks_revoked(self, revoked: TaskIds) -> None:
        await asyncio.sleep(0.2)  # a commit and a close take a while: the broker must wait
        self.log.append((self.name, "revoked", task_names(revoked)))

    async def on_tasks_assigned(self, tasks: StreamsTasks) -> None:
        self.active = tasks.active_names
        self.log.append((self.name, "assigned", tasks.active_names))

    async def on_tasks_lost(self, lost: StreamsTasks) -> None:
        self.active = ()
        self.log.append((self.name, "lost", lost.active_names))


def _member(
    broker: BrokerThread, listener: StreamsTaskListener, **extra: Any
) -> StreamsGroupMember:
    config = MemberConfig(
        bootstrap_servers=broker.bootstrap,
        group_id=GROUP,
        heartbeat_interval_ms=500,
        **extra,
    )
    return StreamsGroupMember(config, TOPOLOGY, StreamsIdentity(f"proc-{id(listener)}"), listener)


def _run(scenario: Callable[[], Any]) -> Any:
    return asyncio.run(scenario())


def test_tasks_move_only_after_their_owner_revoked_them(broker_factory: Any) -> None:
    broker = broker_factory(FAST)
    create_topic(broker.bootstrap, "in", partitions=4)
    log: list[tuple[str, str, tuple[str, ...]]] = []
    a, b = Log("a", log), Log("b", log)

    async def scenario() -> None:
        ma, mb = _member(broker, a), _member(broker, b)
        try:
            await ma.start()
            await wait_until_async(lambda: len(a.active) == 4, what="a owns all 4 tasks")
            await mb.start()
            await wait_until_async(
                lambda: len(a.active) == 2 and len(b.active) == 2, what="2 tasks each"
            )
            assert sorted(a.active + b.active) == ["0_0", "0_1", "0_2", "0_3"]
            assert ma.member_epoch > 0 and mb.member_epoch > 0
        finally:
            await mb.close()
            await ma.close()

    _run(scenario)
    revoked_at = next(i for i, e in enumerate(log) if e[:2] == ("a", "revoked"))
    moved = set(log[revoked_at][2])
    assert len(moved) == 2
    for i, (who, kind, names) in enumerate(log):
        if who == "b" and kind == "assigned" and moved & set(names):
            assert i > revoked_at, log  # b opened a task only after a had closed it


def test_a_member_the_group_dropped_loses_its_tasks_and_rejoins(broker_factory: Any) -> None:
    broker = broker_factory(FAST)
    create_topic(broker.bootstrap, "in", partitions=2)
    log: list[tuple[str, str, tuple[str, ...]]] = []
    a = Log("a", log)

    async def scenario() -> None:
        member = _member(broker, a)
        try:
            await member.start()
            await wait_until_async(lambda: len(a.active) == 2, what="a owns both tasks")
            conn = await BrokerConnection.open("127.0.0.1", broker.port)
            try:  # someone removes the member (a leave in its name): UNKNOWN_MEMBER_ID next
                gone = await conn.call(
                    ApiKey.STREAMS_GROUP_HEARTBEAT, **_leave(member.member_id, member.member_epoch)
                )
                assert gone.error_code == ErrorCode.none
            finally:
                await conn.close()
            await wait_until_async(
                lambda: any(e[1] == "lost" for e in log) and len(a.active) == 2,
                what="tasks lost, then back after a rejoin at epoch 0",
            )
        finally:
            await member.close()

    _run(scenario)
    kinds = [k for _, k, _ in log]
    assert kinds.index("lost") > 0 and "assigned" in kinds[kinds.index("lost") :]


def _leave(member_id: str, epoch: int) -> dict[str, Any]:
    return {
        "group_id": GROUP,
        "member_id": member_id,
        "member_epoch": -1,
        "endpoint_information_epoch": 0,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout": -1,
        "topology": None,
        "active_tasks": None,
        "standby_tasks": None,
        "warmup_tasks": None,
        "process_id": None,
        "user_endpoint": None,
        "client_tags": None,
        "task_offsets": None,
        "task_end_offsets": None,
        "shutdown_application": False,
    }


class FailsOnce(Log):
    """Taking new tasks fails once, as reading their committed offsets does while the
    coordinator is briefly away (the one thing isolated here)."""

    def __init__(self, log: list[tuple[str, str, tuple[str, ...]]]) -> None:
        super().__init__("a", log)
        self.failures = 0

    async def on_tasks_assigned(self, tasks: StreamsTasks) -> None:
        if tasks.active and not self.failures:
            self.failures += 1
            raise TimeoutError("OffsetFetch timed out")
        await super().on_tasks_assigned(tasks)


def test_tasks_not_taken_are_retried_not_fatal(broker_factory: Any) -> None:
    broker = broker_factory(FAST)
    create_topic(broker.bootstrap, "in", partitions=2)
    log: list[tuple[str, str, tuple[str, ...]]] = []
    a = FailsOnce(log)

    async def scenario() -> None:
        member = _member(broker, a)
        try:
            async with asyncio.timeout(60):  # a member that never retries never starts
                await member.start()
            await wait_until_async(lambda: len(a.active) == 2, what="tasks taken on a retry")
            assert member.error is None and member.owned.active_names == ("0_0", "0_1")
        finally:
            await member.close()

    _run(scenario)
    assert a.failures == 1 and log == [("a", "assigned", ("0_0", "0_1"))]


def test_a_missing_source_topic_is_logged_as_an_error_with_its_status(
    broker_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    broker = broker_factory(FAST)
    log: list[tuple[str, str, tuple[str, ...]]] = []

    async def scenario() -> None:
        member = _member(broker, Log("a", log))
        try:
            await member.start()  # joined, no tasks: the topology cannot be configured
        finally:
            await member.close()

    with caplog.at_level(logging.ERROR, logger="streamrt.membership.streams_member"):
        _run(scenario)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any(m.startswith("MISSING_SOURCE_TOPICS: ") and "in" in m for m in errors), errors
    assert log == [("a", "assigned", ())]


def test_a_broker_without_streams_groups_is_a_clear_error(broker_factory: Any) -> None:
    broker = broker_factory({"group.coordinator.rebalance.protocols": "classic,consumer"})

    async def scenario() -> None:
        member = _member(broker, StreamsTaskListener())
        try:
            await member.start()
        finally:
            await member.close()

    with pytest.raises(UnsupportedStreamsGroupError) as caught:
        _run(scenario)
    assert "UNSUPPORTED_VERSION" in str(caught.value)
    assert "Apache Kafka 4.2 or later" in str(caught.value)
    assert "group.protocol=classic" in str(caught.value)
