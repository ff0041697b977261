"""Small synchronous helpers over real aiokafka clients for the runtime's integration tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.structs import TopicPartition


def create_topic(bootstrap: str, name: str, partitions: int, **configs: str) -> None:
    async def go() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(name, partitions, 1, topic_configs=configs)])
        finally:
            await admin.close()

    asyncio.run(go())


def produce(
    bootstrap: str,
    topic: str,
    records: Iterable[tuple[bytes | None, bytes | None]],
    *,
    timestamps: Iterable[int] | None = None,
    partition: int | None = None,
) -> None:
    async def go() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
        await producer.start()
        try:
            stamps = list(timestamps) if timestamps is not None else None
            for i, (key, value) in enumerate(records):
                ts = stamps[i] if stamps is not None else None
                await producer.send(
                    topic, value=value, key=key, timestamp_ms=ts, partition=partition
                )
            await producer.flush()
        finally:
            await producer.stop()

    asyncio.run(go())


def read_all(bootstrap: str, topic: str) -> list[Any]:
    """Every record currently in ``topic`` (all partitions), in partition/offset order."""

    async def go() -> list[Any]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            parts = consumer.partitions_for_topic(topic)
            if not parts:
                await consumer._client.force_metadata_update()
                parts = consumer.partitions_for_topic(topic) or set()
            tps = [TopicPartition(topic, p) for p in sorted(parts)]
            if not tps:
                return []
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            ends = await consumer.end_offsets(tps)
            out: list[Any] = []
            while [tp for tp in tps if await consumer.position(tp) < ends[tp]]:
                for _tp, recs in (await consumer.getmany(timeout_ms=500)).items():
                    out.extend(recs)
            return sorted(out, key=lambda r: (r.partition, r.offset))
        finally:
            await consumer.stop()

    return asyncio.run(go())


def wait_until(condition: Callable[[], Any], timeout: float = 60.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what or condition}: last={last!r}")


def latest_by_key(records: Iterable[Any]) -> dict[bytes, bytes]:
    out: dict[bytes, bytes] = {}
    for r in records:
        out[r.key] = r.value
    return out
