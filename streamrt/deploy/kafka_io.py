"""The few broker reads the scenario needs: topics, group lag, a whole topic's records, the
embedded broker's own rebalance counter (its Prometheus endpoint) and a streams group's epoch.

Each takes the driver's Kafka client properties (``--command-config``: TLS, SASL), so the
driver reaches a secured cluster as its instances do."""

from __future__ import annotations

import asyncio
import re
import urllib.request
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.structs import TopicPartition

from streamrt.admin.connection import BrokerConnection
from streamrt.admin.security import AdminSecurity
from streamrt.client_config import ClientConfig
from streamrt.errors import ErrorCode
from streamrt.events import security_kwargs
from streamrt.wire.api_keys import ApiKey

__all__ = (
    "coordinator_rebalances",
    "create_topics",
    "describe_streams_group",
    "group_lag",
    "read_topic",
    "streams_group_epoch",
)


def create_topics(
    bootstrap: str,
    topics: dict[str, tuple[int, dict[str, str]]],
    client: ClientConfig | None = None,
) -> None:
    """``{name: (partitions, configs)}``; existing topics are left as they are."""

    async def go() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **security_kwargs(client, "admin"))
        await admin.start()
        try:
            await admin.create_topics(
                [NewTopic(n, p, 1, topic_configs=c) for n, (p, c) in topics.items()]
            )
        finally:
            await admin.close()

    asyncio.run(go())


def group_lag(
    bootstrap: str, group: str, topic: str, partitions: int, client: ClientConfig | None = None
) -> int:
    """Records of ``topic`` not yet committed by ``group`` (uncommitted partitions count whole)."""

    async def go() -> int:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **security_kwargs(client, "admin"))
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            enable_auto_commit=False,
            **security_kwargs(client, "consumer"),
        )
        await admin.start()
        await consumer.start()
        try:
            tps = [TopicPartition(topic, p) for p in range(partitions)]
            committed = await admin.list_consumer_group_offsets(group, partitions=tps)
            ends = await consumer.end_offsets(tps)
            lag = 0
            for tp in tps:
                meta = committed.get(tp)
                done = meta.offset if meta is not None and meta.offset >= 0 else 0
                lag += max(ends[tp] - done, 0)
            return lag
        finally:
            await consumer.stop()
            await admin.close()

    return asyncio.run(go())


def read_topic(
    bootstrap: str, topic: str, partitions: int, client: ClientConfig | None = None
) -> list[Any]:
    """Every record of ``topic`` now, in partition/offset order."""

    async def go() -> list[Any]:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            enable_auto_commit=False,
            max_partition_fetch_bytes=8 << 20,
            **security_kwargs(client, "consumer"),
        )
        await consumer.start()
        try:
            tps = [TopicPartition(topic, p) for p in range(partitions)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            ends = await consumer.end_offsets(tps)
            out: list[Any] = []
            while [tp for tp in tps if await consumer.position(tp) < ends[tp]]:
                for recs in (await consumer.getmany(timeout_ms=500)).values():
                    out.extend(recs)
            return sorted(out, key=lambda r: (r.partition, r.offset))
        finally:
            await consumer.stop()

    return asyncio.run(go())


def coordinator_rebalances(metrics_url: str, group: str) -> int | None:
    """``streamrt_group_rebalances_total`` of ``group`` (None: the group is not there yet)."""
    with urllib.request.urlopen(metrics_url, timeout=10) as response:
        text = response.read().decode()
    pattern = rf'^streamrt_group_rebalances_total{{group="{re.escape(group)}"}} (\S+)$'
    match = re.search(pattern, text, re.MULTILINE)
    return int(float(match.group(1))) if match else None


def streams_group_epoch(
    bootstrap: str, group: str, client: ClientConfig | None = None
) -> int | None:
    """A streams group's epoch from the broker; None when the group is not there."""
    found = describe_streams_group(bootstrap, group, client)
    return None if found is None else found[0]


def describe_streams_group(
    bootstrap: str, group: str, client: ClientConfig | None = None
) -> tuple[int, str] | None:
    """A streams group's (epoch, state: "Stable" once every member has reconciled to the
    target assignment) from StreamsGroupDescribe (API 89: any broker with KIP-1071, so Apache
    Kafka too); None when the group is not there or the first bootstrap server is not its
    coordinator (the scenario's brokers have one node)."""
    host, _, port = bootstrap.split(",")[0].rpartition(":")

    async def go() -> tuple[int, str] | None:
        security = AdminSecurity.from_config(client)
        conn = await BrokerConnection.open(host, int(port), security=security)
        try:
            described = await conn.call(
                ApiKey.STREAMS_GROUP_DESCRIBE,
                group_ids=[group],
                include_authorized_operations=False,
            )
        finally:
            await conn.close()
        (found,) = described.groups
        if found.error_code != ErrorCode.none:
            return None
        return int(found.group_epoch), str(found.group_state)

    return asyncio.run(go())
