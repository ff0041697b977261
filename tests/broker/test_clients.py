"""Real, unmodified clients produce and consume against the embedded broker."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition as AioTP
from confluent_kafka import Consumer as CKConsumer
from confluent_kafka import KafkaException
from confluent_kafka import Producer as CKProducer
from confluent_kafka import TopicPartition as CKTP
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic
from kafka import KafkaConsumer as KPConsumer
from kafka import KafkaProducer as KPProducer
from kafka import TopicPartition as KPTP

from streamrt.broker.embedded import BrokerThread

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


def _create(bootstrap: str, topic: str, partitions: int = 3, config: dict | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fut = admin.create_topics([NewTopic(topic, partitions, 1, config=config or {})])[topic]
    fut.result(10)


@pytest.mark.parametrize("codec", CODECS)
def test_aiokafka_produce_consume(broker: BrokerThread, topic_name: str, codec: str | None) -> None:
    _create(broker.bootstrap, topic_name, 3)

    async def run() -> list[tuple[int, bytes, bytes]]:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap, compression_type=codec, acks="all"
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
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
        await consumer.start()
        got: list[tuple[int, bytes, bytes]] = []
        try:
            tps = [AioTP(topic_name, p) for p in range(3)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            deadline = time.monotonic() + 20
            while len(got) < 60 and time.monotonic() < deadline:
                batch = await consumer.getmany(timeout_ms=500)
                for msgs in batch.values():
                    got += [(m.partition, m.key, m.value) for m in msgs]
        finally:
            await consumer.stop()
        return got

    got = asyncio.run(run())
    assert sorted(got) == sorted((i % 3, f"k{i}".encode(), f"v{i}".encode()) for i in range(60))


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_idempotent_produce_consume(
    broker: BrokerThread, topic_name: str, codec: str | None
) -> None:
    _create(broker.bootstrap, topic_name, 2)
    producer = KPProducer(
        bootstrap_servers=broker.bootstrap, compression_type=codec, enable_idempotence=True
    )
    for i in range(50):
        producer.send(topic_name, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % 2)
    producer.flush(10)
    producer.close()
    consumer = KPConsumer(
        bootstrap_servers=broker.bootstrap, enable_auto_commit=False, consumer_timeout_ms=3000
    )
    tps = [KPTP(topic_name, 0), KPTP(topic_name, 1)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    got = [(m.partition, m.offset, m.value) for m in consumer]
    consumer.close()
    assert len(got) == 50
    for p in (0, 1):
        offsets = [o for (pp, o, _) in got if pp == p]
        assert offsets == list(range(25))  # idempotence: nothing duplicated, in order
    assert sorted(v for *_, v in got) == sorted(f"v{i}".encode() for i in range(50))


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_confluent_idempotent_produce_consume(
    broker: BrokerThread, topic_name: str, codec: str
) -> None:
    _create(broker.bootstrap, topic_name, 2)
    producer = CKProducer(
        {
            "bootstrap.servers": broker.bootstrap,
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
        {"bootstrap.servers": broker.bootstrap, "group.id": "unused", "enable.auto.commit": False}
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


def test_admin_topics_configs_and_partitions(broker: BrokerThread, topic_name: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    _create(broker.bootstrap, topic_name, 2, {"cleanup.policy": "compact"})
    with pytest.raises(KafkaException) as exc:
        admin.create_topics([NewTopic(topic_name, 2, 1)])[topic_name].result(10)
    assert "TOPIC_ALREADY_EXISTS" in str(exc.value)
    bad = admin.create_topics([NewTopic(topic_name + "x", 1, 1, config={"retention.ms": "abc"})])
    with pytest.raises(KafkaException) as exc:
        bad[topic_name + "x"].result(10)
    assert "INVALID_CONFIG" in str(exc.value)

    res = ConfigResource(ConfigResource.Type.TOPIC, topic_name)
    described = admin.describe_configs([res])[res].result(10)
    assert described["cleanup.policy"].value == "compact"
    assert described["segment.bytes"].value == "1073741824"

    admin.incremental_alter_configs(
        [
            ConfigResource(
                ConfigResource.Type.TOPIC,
                topic_name,
                incremental_configs=[
                    __import__("confluent_kafka.admin", fromlist=["ConfigEntry"]).ConfigEntry(
                        "retention.ms",
                        "1000",
                        incremental_operation=__import__(
                            "confluent_kafka.admin", fromlist=["AlterConfigOpType"]
                        ).AlterConfigOpType.SET,
                    )
                ],
            )
        ]
    )[res].result(10)
    described = admin.describe_configs([res])[res].result(10)
    assert described["retention.ms"].value == "1000"

    admin.create_partitions([NewPartitions(topic_name, 4)])[topic_name].result(10)
    md = admin.list_topics(topic_name, timeout=10)
    assert len(md.topics[topic_name].partitions) == 4

    admin.delete_topics([topic_name])[topic_name].result(10)
    assert topic_name not in admin.list_topics(timeout=10).topics


def test_list_offsets_by_time(broker: BrokerThread, topic_name: str) -> None:
    _create(broker.bootstrap, topic_name, 1)
    producer = CKProducer({"bootstrap.servers": broker.bootstrap})
    # Recent timestamps: older ones would be past retention.ms and deleted by the broker.
    base = int(time.time() * 1000) - 60_000
    for i in range(10):
        producer.produce(topic_name, value=b"x", partition=0, timestamp=base + i * 1000)
        producer.flush(10)  # one batch per record, so lookups are exact
    consumer = CKConsumer({"bootstrap.servers": broker.bootstrap, "group.id": "g"})
    lo, hi = consumer.get_watermark_offsets(CKTP(topic_name, 0), timeout=10)
    assert (lo, hi) == (0, 10)
    found = consumer.offsets_for_times([CKTP(topic_name, 0, base + 4500)], timeout=10)
    assert found[0].offset == 5
    consumer.close()


def test_data_survives_restart(broker: BrokerThread, topic_name: str) -> None:
    _create(broker.bootstrap, topic_name, 1)
    producer = KPProducer(bootstrap_servers=broker.bootstrap, acks="all")
    for i in range(20):
        producer.send(topic_name, value=f"a{i}".encode(), partition=0)
    producer.flush(10)
    producer.close()
    broker.restart()
    producer = KPProducer(bootstrap_servers=broker.bootstrap, acks="all")
    meta = producer.send(topic_name, value=b"after", partition=0).get(10)
    producer.close()
    assert meta.offset == 20  # offsets continue
    consumer = KPConsumer(bootstrap_servers=broker.bootstrap, consumer_timeout_ms=3000)
    consumer.assign([KPTP(topic_name, 0)])
    consumer.seek_to_beginning()
    values = [m.value for m in consumer]
    consumer.close()
    assert values == [f"a{i}".encode() for i in range(20)] + [b"after"]


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is installed by .ci/run")
def test_kcat_metadata_produce_consume(broker: BrokerThread, topic_name: str) -> None:
    _create(broker.bootstrap, topic_name, 1)
    kcat = ["kcat", "-b", broker.bootstrap]
    meta = subprocess.run(
        [*kcat, "-L", "-t", topic_name], capture_output=True, text=True, timeout=30
    )
    assert meta.returncode == 0, meta.stderr
    assert f'topic "{topic_name}" with 1 partitions' in meta.stdout
    lines = "\n".join(f"line-{i}" for i in range(10)) + "\n"
    prod = subprocess.run(
        [*kcat, "-P", "-t", topic_name, "-z", "snappy"], input=lines, text=True, timeout=30
    )
    assert prod.returncode == 0
    cons = subprocess.run(
        [*kcat, "-C", "-t", topic_name, "-o", "beginning", "-e", "-q"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert cons.returncode == 0, cons.stderr
    assert cons.stdout.splitlines() == [f"line-{i}" for i in range(10)]
