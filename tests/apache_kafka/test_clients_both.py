"""Differential: real clients' round trips and static membership, same assertions on both
brokers (our embedded one and Apache Kafka)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition as AioTP
from confluent_kafka import Consumer as CKConsumer
from confluent_kafka import KafkaError
from confluent_kafka import Producer as CKProducer
from confluent_kafka import TopicPartition as CKTP
from confluent_kafka.admin import AdminClient, ConfigResource
from kafka import KafkaConsumer as KPConsumer
from kafka import KafkaProducer as KPProducer
from kafka import TopicPartition as KPTP

from tests.apache_kafka.support import BrokerEndpoint, create_topic
from tests.broker.test_groups_aiokafka import Member
from tests.broker.test_groups_confluent import CKMember, pump

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


@pytest.mark.parametrize("codec", CODECS)
def test_aiokafka_produce_consume(
    any_broker: BrokerEndpoint, topic_name: str, codec: str | None
) -> None:
    create_topic(any_broker.bootstrap, topic_name, 3)

    async def go() -> list[tuple[int, bytes, bytes]]:
        producer = AIOKafkaProducer(
            bootstrap_servers=any_broker.bootstrap, compression_type=codec, acks="all"
        )
        await producer.start()
        try:
            for i in range(60):
                await producer.send(
                    topic_name, f"v{i}".encode(), key=f"k{i}".encode(), partition=i % 3
                )
            await producer.flush()
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            bootstrap_servers=any_broker.bootstrap, enable_auto_commit=False
        )
        await consumer.start()
        got: list[tuple[int, bytes, bytes]] = []
        try:
            tps = [AioTP(topic_name, p) for p in range(3)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            deadline = time.monotonic() + 20
            while len(got) < 60 and time.monotonic() < deadline:
                batch = await consumer.getmany(timeout_ms=500)
                got += [(m.partition, m.key, m.value) for ms in batch.values() for m in ms]
        finally:
            await consumer.stop()
        return got

    got = asyncio.run(asyncio.wait_for(go(), 60))
    assert sorted(got) == sorted((i % 3, f"k{i}".encode(), f"v{i}".encode()) for i in range(60))


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_confluent_idempotent_produce_consume(
    any_broker: BrokerEndpoint, topic_name: str, codec: str
) -> None:
    create_topic(any_broker.bootstrap, topic_name, 2)
    producer = CKProducer(
        {
            "bootstrap.servers": any_broker.bootstrap,
            "enable.idempotence": True,
            "compression.codec": codec,
            "linger.ms": 5,
        }
    )
    errors: list[object] = []
    for i in range(200):
        producer.produce(
            topic_name,
            key=f"k{i}",
            value=f"value-{i}" * 10,
            partition=i % 2,
            on_delivery=lambda err, msg: errors.append(err) if err else None,
        )
    assert producer.flush(20) == 0
    assert errors == []
    consumer = CKConsumer(
        {
            "bootstrap.servers": any_broker.bootstrap,
            "group.id": "unused",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([CKTP(topic_name, 0, 0), CKTP(topic_name, 1, 0)])
    got = []
    deadline = time.monotonic() + 20
    while len(got) < 200 and time.monotonic() < deadline:
        for m in consumer.consume(100, timeout=0.5):
            assert m.error() is None, m.error()
            got.append((m.partition(), m.offset(), m.key()))
    consumer.close()
    assert len(got) == 200
    for p in (0, 1):
        assert [o for pp, o, _ in got if pp == p] == list(range(100))


def test_kafka_python_idempotent_produce_consume(
    any_broker: BrokerEndpoint, topic_name: str
) -> None:
    create_topic(any_broker.bootstrap, topic_name, 2)
    producer = KPProducer(
        bootstrap_servers=any_broker.bootstrap, compression_type="zstd", enable_idempotence=True
    )
    for i in range(50):
        producer.send(topic_name, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % 2)
    producer.flush(10)
    producer.close()
    consumer = KPConsumer(
        bootstrap_servers=any_broker.bootstrap, enable_auto_commit=False, consumer_timeout_ms=3000
    )
    tps = [KPTP(topic_name, 0), KPTP(topic_name, 1)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    got = [(m.partition, m.offset, m.value) for m in consumer]
    consumer.close()
    for p in (0, 1):
        assert [o for (pp, o, _) in got if pp == p] == list(range(25))
    assert sorted(v for *_, v in got) == sorted(f"v{i}".encode() for i in range(50))


def test_compacted_topic_config_is_visible(any_broker: BrokerEndpoint, topic_name: str) -> None:
    config = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"}
    create_topic(any_broker.bootstrap, topic_name, 1, config=config)
    admin = AdminClient({"bootstrap.servers": any_broker.bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, topic_name)
    described = admin.describe_configs([res])[res].result(10)
    assert described["cleanup.policy"].value == "compact"
    assert described["min.cleanable.dirty.ratio"].value == "0.01"
    assert described["segment.bytes"].value == "1073741824"  # Kafka's default


def test_confluent_static_member_restart_keeps_partitions(
    any_broker: BrokerEndpoint, topic_name: str
) -> None:
    """librdkafka consumers with group.instance.id: one restarts within its session and gets
    its partitions back from the committed offsets; nobody else is revoked."""
    bootstrap, group, partitions = any_broker.bootstrap, f"ck-{topic_name}", 6
    create_topic(bootstrap, topic_name, partitions)
    producer = CKProducer({"bootstrap.servers": bootstrap})
    for p in range(partitions):
        for i in range(2):
            producer.produce(topic_name, value=f"old-{p}-{i}", partition=p)
    assert producer.flush(20) == 0
    members = [CKMember(bootstrap, topic_name, group, f"ck-{i}") for i in range(3)]
    replacement: CKMember | None = None

    def formed() -> bool:
        owned = [m.owned() for m in members]
        return all(owned) and set().union(*owned) == set(range(partitions))

    try:
        pump(members, "every member to own partitions", formed, 60)
        pump(
            members,
            "each member to read its partitions",
            lambda: all(m.read_to(2) for m in members),
            30,
        )
        for m in members:
            m.consumer.commit(asynchronous=False)
        owned = {m.instance: m.owned() for m in members}
        for m in members:
            m.revoked.clear()
        members[1].close()
        for p in range(partitions):
            producer.produce(topic_name, value=f"new-{p}", partition=p)
        assert producer.flush(20) == 0
        replacement = CKMember(bootstrap, topic_name, group, "ck-1")
        others = [members[0], members[2]]
        pump(
            [*others, replacement],
            "the restarted member's records",
            lambda: len(replacement.records) == len(owned["ck-1"]),
            30,
        )
        assert replacement.owned() == owned["ck-1"]
        assert {o for _, o, _ in replacement.records} == {2}  # from the committed offsets
        for m in others:
            assert m.revoked == [] and m.owned() == owned[m.instance]
    finally:
        for m in [members[0], members[2]] + ([replacement] if replacement else []):
            m.close()


def test_confluent_duplicate_instance_id_fences_the_older(
    any_broker: BrokerEndpoint, topic_name: str
) -> None:
    bootstrap, group = any_broker.bootstrap, f"dup-{topic_name}"
    create_topic(bootstrap, topic_name, 2)
    older = CKMember(bootstrap, topic_name, group, "dup")
    newer: CKMember | None = None
    try:
        pump(
            [older], "the first consumer to own its partitions", lambda: len(older.owned()) == 2, 60
        )
        newer = CKMember(bootstrap, topic_name, group, "dup")
        pump(
            [older, newer],
            "a fatal error in the older consumer",
            lambda: any(e.code() == KafkaError._FATAL for e in older.errors),
            60,
        )
        fatal = [e for e in older.errors if e.code() == KafkaError._FATAL]
        assert KafkaError(KafkaError.FENCED_INSTANCE_ID).str() in fatal[0].str()
        pump(
            [newer], "the newer consumer to own the partitions", lambda: len(newer.owned()) == 2, 60
        )
    finally:
        older.close()
        if newer is not None:
            newer.close()


def test_aiokafka_static_members_restart_and_expiry(
    any_broker: BrokerEndpoint, topic_name: str
) -> None:
    """The runtime's client: a static member back within its session gets its partitions and
    committed offsets with nobody revoked; one away past its session is replaced by exactly
    one rebalance."""
    bootstrap, group, partitions = any_broker.bootstrap, f"aio-{topic_name}", 6
    create_topic(bootstrap, topic_name, partitions)
    producer = CKProducer({"bootstrap.servers": bootstrap})
    for p in range(partitions):
        for i in range(2):
            producer.produce(topic_name, value=f"old-{p}-{i}", partition=p)
    assert producer.flush(20) == 0
    everything = {AioTP(topic_name, p) for p in range(partitions)}

    async def until(what: str, condition: Callable[[], bool], limit: float = 60) -> None:
        deadline = asyncio.get_running_loop().time() + limit
        while not condition():
            if asyncio.get_running_loop().time() > deadline:
                pytest.fail(f"timed out waiting for {what}")
            await asyncio.sleep(0.05)

    async def scenario() -> None:
        members = [await Member(bootstrap, topic_name, group, i, 6000).start() for i in ("a", "b")]
        replacement: Member | None = None
        try:
            await until(
                "both to own partitions",
                lambda: (
                    all(m.assignment() for m in members)
                    and members[0].assignment() | members[1].assignment() == everything
                    # both sides of the rebalance done: the first member no longer holds all
                    and members[0].assignment().isdisjoint(members[1].assignment())
                ),
            )
            for m in members:
                await m.consume(2 * len(m.assignment()))
                await m.consumer.commit()
            owned = members[1].assignment()
            members[0].listener.revoked.clear()
            await members[1].consumer.stop()  # no LeaveGroup for a static member
            for p in range(partitions):
                producer.produce(topic_name, value=f"new-{p}", partition=p)
            assert producer.flush(20) == 0
            replacement = await Member(bootstrap, topic_name, group, "b", 6000).start()
            await until("b back with its partitions", lambda: replacement.assignment() == owned)
            resumed = await replacement.consume(len(owned))
            assert {o for _, o, _ in resumed} == {2}
            assert members[0].listener.revoked == []

            await replacement.consumer.stop()
            replacement = None
            await until("a to own everything", lambda: members[0].assignment() == everything)
            assert len(members[0].listener.revoked) == 1  # one rebalance, after b's session
        finally:
            await members[0].consumer.stop()
            if replacement is not None:
                await replacement.consumer.stop()

    asyncio.run(asyncio.wait_for(scenario(), 120))
