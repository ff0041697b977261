"""Kafka test helpers shared by every test package: real clients against the embedded broker.

One ``wait_until(condition, timeout, what)`` for every poll-until-true in the suite (and
``wait_until_async`` with the same signature for conditions that must run on a test's loop):
a timeout is a bound that fails the test, never a timing assertion.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import time
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.structs import TopicPartition
from confluent_kafka import Producer

T = TypeVar("T")


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from sync code, also when called inside a running loop
    (then on a fresh loop in a worker thread, blocking the caller as a sync client would)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def create_topic(bootstrap: str, name: str, partitions: int = 1, **configs: str) -> None:
    """Create ``name`` with ``partitions`` partitions, replication 1 and topic ``configs``."""

    async def go() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(name, partitions, 1, topic_configs=configs)])
            deadline = time.monotonic() + 30
            while not await _led(admin, name, partitions):
                assert time.monotonic() < deadline, f"partitions of {name} have no leader"
                await asyncio.sleep(0.05)
        finally:
            await admin.close()

    _run(go())


async def _led(admin: AIOKafkaAdminClient, topic: str, partitions: int) -> bool:
    """Every partition of ``topic`` has a leader in the metadata: a CreateTopics answer
    does not mean that yet on Apache Kafka (the controller answers, the brokers follow)."""
    (described,) = await admin.describe_topics([topic])
    led = [p for p in described.get("partitions") or () if p.get("leader", -1) >= 0]
    return described.get("error_code", 0) == 0 and len(led) >= partitions


def produce(
    bootstrap: str,
    topic: str,
    records: Iterable[tuple[bytes | None, bytes | None]],
    *,
    timestamps: Iterable[int] | None = None,
    partition: int | None = None,
    partitions: Iterable[int] | None = None,
) -> None:
    """Send ``records`` (key, value) and wait for every ack; ``partitions`` gives one per record."""

    async def go() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
        await producer.start()
        try:
            stamps = list(timestamps) if timestamps is not None else None
            targets = list(partitions) if partitions is not None else None
            for i, (key, value) in enumerate(records):
                ts = stamps[i] if stamps is not None else None
                part = targets[i] if targets is not None else partition
                await producer.send(topic, value=value, key=key, timestamp_ms=ts, partition=part)
            await producer.flush()
        finally:
            await producer.stop()

    _run(go())


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

    return _run(go())


def wait_until(
    condition: Callable[[], Any], timeout: float = 60.0, what: str = "", interval: float = 0.25
) -> Any:
    """Poll ``condition`` until it returns a truthy value (returned); fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what or condition}: last={last!r}")


async def wait_until_async(
    condition: Callable[[], Any],
    timeout: float = 60.0,  # noqa: ASYNC109 - the same signature as wait_until, on purpose
    what: str = "",
    interval: float = 0.1,
) -> Any:
    """``wait_until`` inside a test's event loop, without blocking it.

    An ``async`` condition is awaited on the loop (e.g. an admin call); a plain one runs in a
    worker thread, since it may block (e.g. scraping ``/metrics``).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: Any = None
    while loop.time() < deadline:
        if inspect.iscoroutinefunction(condition):
            last = await condition()
        else:
            last = await asyncio.to_thread(condition)
        if last:
            return last
        await asyncio.sleep(interval)
    raise AssertionError(f"timed out waiting for {what or condition}: last={last!r}")


def produce_tagged(
    bootstrap: str, topic: str, partitions: int, per_partition: int, tag: str
) -> None:
    """``per_partition`` records to every partition, values ``<tag>-<partition>-<i>``."""
    produce(
        bootstrap,
        topic,
        [
            (None, f"{tag}-{p}-{i}".encode())
            for p in range(partitions)
            for i in range(per_partition)
        ],
        partitions=[p for p in range(partitions) for _ in range(per_partition)],
    )


def latest_by_key(records: Iterable[Any]) -> dict[bytes, bytes]:
    out: dict[bytes, bytes] = {}
    for r in records:
        out[r.key] = r.value
    return out


Produced = tuple[int, int, bytes | None, bytes]  # partition, offset, key, value


def produce_acked(
    bootstrap: str,
    topic: str,
    records: Sequence[tuple[bytes | None, bytes]],
    headers: Sequence[tuple[str, bytes]] | None = None,
    partition: int = -1,
) -> list[Produced]:
    """Produce with confluent-kafka and return what the broker acknowledged: (partition,
    offset, key, value). ``partition=-1`` lets the key choose (murmur2, as Kafka's Java
    client does: Spark's readers and writers must agree with it).
    """
    acked: list[Produced] = []
    failures: list[str] = []

    def on_delivery(error: object, message: object) -> None:
        if error is not None:
            failures.append(str(error))
        else:
            acked.append((message.partition(), message.offset(), message.key(), message.value()))  # type: ignore[attr-defined]

    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    for key, value in records:
        producer.produce(
            topic,
            key=key,
            value=value,
            headers=headers,
            partition=partition,
            on_delivery=on_delivery,
        )
    assert producer.flush(30) == 0
    assert not failures, failures
    return sorted(acked)
