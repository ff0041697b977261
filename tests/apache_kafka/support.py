"""Helpers of the tests that run on Apache Kafka: the fixture's health check, and a raw
group-protocol member that records the coordinator's exact answers.

The raw member speaks JoinGroup v5 / SyncGroup v3 / Heartbeat v3 / LeaveGroup v3 at pinned
versions (streamrt's admin connection frames them), so the same request gets compared on both
brokers: no client library retries or hides an error code.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from streamrt.admin.cluster import Cluster
from streamrt.admin.connection import BrokerConnection
from streamrt.dev.apache_kafka import ApacheKafka
from streamrt.errors import ErrorCode, KafkaError
from tests.kafka_helpers import wait_until

JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 11, 12, 13, 14


@dataclasses.dataclass(frozen=True)
class BrokerEndpoint:
    """What ``any_broker`` yields: which broker, and where to reach it."""

    kind: str  # "embedded" or "apache-kafka"
    bootstrap: str


def healthy(kafka: ApacheKafka) -> Iterator[ApacheKafka]:
    """Restart nodes a previous test left stopped; after the test, report any node that is
    not running (it died, or the test stopped it and never started it again)."""
    kafka.restore()
    marks = {n.node_id: _log_size(n.log_path) for n in kafka.nodes}
    yield kafka
    failed_loads = [
        line
        for n in kafka.nodes
        for line in _log_since(n.log_path, marks[n.node_id])
        if _FAILED_LOAD in line
    ]
    if failed_loads:
        pytest.fail(
            "Apache Kafka could not load a __consumer_offsets partition (every group on it "
            "now gets NOT_COORDINATOR until the node restarts):\n" + "\n".join(failed_loads)
        )
    dead = [n for n in kafka.nodes if not n.running()]
    if dead:
        report = "\n".join(
            f"node {n.node_id} ({n.address}) exit "
            f"{n.process.returncode if n.process else None}:\n{n.log_tail(20)}"
            for n in dead
        )
        kafka.restore()
        pytest.fail(f"Apache Kafka node(s) not running at the end of the test:\n{report}")


_FAILED_LOAD = "Failed to load metadata from __consumer_offsets"


def _log_size(path: Any) -> int:
    try:
        return int(path.stat().st_size)
    except OSError:
        return 0


def _log_since(path: Any, offset: int) -> list[str]:
    """The node's log lines written since ``offset`` (its size before the test)."""
    try:
        with open(path, "rb") as log:
            log.seek(offset)
            return log.read().decode(errors="replace").splitlines()
    except OSError:
        return []


def create_topic(
    bootstrap: str, topic: str, partitions: int, *, rf: int = -1, config: dict | None = None
) -> None:
    """Create ``topic``; ``rf=-1`` takes the broker's default.replication.factor (KIP-464)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, partitions, rf, config=config or {})
    admin.create_topics([new])[topic].result(30)

    def led() -> bool:  # the controller answers; the brokers become leaders a moment later
        described = admin.list_topics(topic, timeout=30).topics[topic]
        parts = described.partitions.values()
        return (
            described.error is None
            and len(parts) == partitions
            and all(p.leader >= 0 for p in parts)
        )

    wait_until(led, 30, what=f"leaders of {topic}")


def clean_slate(bootstrap: str, timeout: float = 60.0) -> None:
    """Delete every group and every topic but the broker's own (``__*``), and wait until
    the broker no longer lists them (KRaft: a name can be created again at once).

    Static members a test stopped stay in their group until their session times out (they
    send no LeaveGroup), and a group with members cannot be deleted: they are removed by
    instance id first (as ``streamrt groups remove-members``); dynamic members left behind
    are waited out. A group left behind would hand its members and committed offsets to the
    next test that reuses the name. Groups go through streamrt's admin client: librdkafka
    2.x aborted the process in DescribeConsumerGroups while groups were being deleted."""
    import time

    asyncio.run(_delete_groups(bootstrap, timeout))
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout
    while True:
        topics = [t for t in admin.list_topics(timeout=30).topics if not t.startswith("__")]
        if not topics:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"topics still listed after deletion: {sorted(topics)}")
        for future in admin.delete_topics(topics, operation_timeout=30).values():
            with contextlib.suppress(Exception):  # already being deleted
                future.result(30)
        time.sleep(0.2)


async def _delete_groups(bootstrap: str, limit_s: float) -> None:
    from streamrt.admin.client import AdminClient as StreamrtAdmin

    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_s
    async with StreamrtAdmin(bootstrap, client_id="clean-slate") as admin:
        while groups := [g.group_id for g in await admin.list_groups()]:
            if loop.time() > deadline:
                raise TimeoutError(f"groups still listed after deletion: {sorted(groups)}")
            for group in groups:
                try:
                    described = (await admin.describe_groups([group]))[group]
                except KafkaError as exc:  # a consumer or streams group: not a classic one
                    if exc.code != ErrorCode.group_id_not_found:
                        raise
                    continue
                static = [m.group_instance_id for m in described.members if m.group_instance_id]
                if static:
                    with contextlib.suppress(Exception):  # gone meanwhile
                        await admin.remove_members(group, static)
            await admin.delete_groups(groups)  # NON_EMPTY_GROUP: waited out next round
            await asyncio.sleep(0.2)


def subscription(user_data: bytes = b"", topics: tuple[str, ...] = ()) -> bytes:
    """A ConsumerProtocolSubscription v0, as a consumer's JoinGroup metadata carries it."""
    from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata

    return bytes(ConsumerProtocolMemberMetadata(0, list(topics), user_data).encode())


def assignment(user_data: bytes = b"") -> bytes:
    """A ConsumerProtocolAssignment v0 with no partitions and ``user_data``."""
    from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment

    return bytes(ConsumerProtocolMemberAssignment(0, [], user_data).encode())


def error_name(code: int) -> str:
    return ErrorCode(int(code)).name.upper()


class RawGroups:
    """One connection to a group's coordinator, for raw group requests at pinned versions."""

    def __init__(self, bootstrap: str, group: str) -> None:
        self.group = group
        self._cluster = Cluster(
            bootstrap, client_id="raw-group", request_timeout=30, api_timeout=30, retry_backoff=0.1
        )
        self._conn: BrokerConnection | None = None

    async def conn(self) -> BrokerConnection:
        if self._conn is None or self._conn.closed:
            self._conn = await self._cluster.coordinator(self.group)
        return self._conn

    async def close(self) -> None:
        await self._cluster.close()

    async def join(
        self,
        member_id: str,
        instance: str | None,
        session_ms: int = 10_000,
        rebalance_ms: int = 15_000,
        metadata: bytes | None = None,
    ) -> Any:
        conn = await self.conn()
        return await conn.call(
            JOIN_GROUP,
            min_version=5,
            max_version=5,
            group_id=self.group,
            session_timeout=session_ms,
            rebalance_timeout=rebalance_ms,
            member_id=member_id,
            group_instance_id=instance,
            protocol_type="consumer",
            protocols=[{"name": "range", "metadata": metadata or subscription()}],
            response_timeout=rebalance_ms / 1000 + 10,
        )

    async def sync(
        self,
        generation: int,
        member_id: str,
        instance: str | None,
        assignments: dict[str, bytes] | None = None,
    ) -> Any:
        conn = await self.conn()
        return await conn.call(
            SYNC_GROUP,
            min_version=3,
            max_version=3,
            group_id=self.group,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=instance,
            assignments=[{"member_id": m, "assignment": a} for m, a in (assignments or {}).items()],
            response_timeout=30,
        )

    async def heartbeat(self, generation: int, member_id: str, instance: str | None) -> str:
        conn = await self.conn()
        response = await conn.call(
            HEARTBEAT,
            min_version=3,
            max_version=3,
            group_id=self.group,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=instance,
        )
        return error_name(response.error_code)

    async def leave(self, members: list[tuple[str, str | None]]) -> tuple[str, list[str]]:
        """Batch LeaveGroup v3: (top-level error, per-member errors in request order)."""
        conn = await self.conn()
        response = await conn.call(
            LEAVE_GROUP,
            min_version=3,
            max_version=3,
            group_id=self.group,
            members=[{"member_id": m, "group_instance_id": i} for m, i in members],
        )
        return error_name(response.error_code), [error_name(m.error_code) for m in response.members]


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 120))
