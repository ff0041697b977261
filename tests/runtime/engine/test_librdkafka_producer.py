"""The stream threads' librdkafka producer: every producer setting reaches librdkafka, security
included; a stateful app on a real broker gives exact results with keys partitioned as
Java/aiokafka place them, changelogs written and offsets committed."""

from __future__ import annotations

import asyncio
import struct
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import confluent_kafka
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.partitioner import murmur2

from streamrt.runtime import App
from streamrt.runtime import client_settings as cs
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.engine.clients.rdkafka_producer import (
    SECURITY_KWARGS,
    TUNING_KWARGS,
    DeliveryError,
    LibrdkafkaCollector,
    LibrdkafkaProducer,
    librdkafka_config,
)
from streamrt.runtime.engine.clients.zero_timestamp import ZeroTimestampSender
from streamrt.topic_partition import TopicPartition
from tests.kafka_helpers import create_topic, latest_by_key, produce, read_all, wait_until

SETTINGS = {
    "producer.acks": "1",
    "producer.linger.ms": "7",
    "producer.batch.size": "65536",
    "producer.max.request.size": "2000000",
    "producer.compression.type": "lz4",
    "producer.enable.idempotence": "false",
    "request.timeout.ms": "12345",  # bare: every client
    "producer.retry.backoff.ms": "77",
    "producer.metadata.max.age.ms": "60000",
    "producer.connections.max.idle.ms": "90000",
}


def config_of(**settings: str) -> dict[str, Any]:
    cfg = StreamsConfig.from_mapping({"application.id": "rd", **settings})
    return librdkafka_config(cfg.client_config(), "rd-thread-1-producer")


def test_every_kafka_producer_setting_has_a_librdkafka_mapping() -> None:
    kwargs = {kwarg for kwarg, _parse in cs.PRODUCER_KEYS.values()}
    assert kwargs <= TUNING_KWARGS
    assert not TUNING_KWARGS & SECURITY_KWARGS


def test_settings_reach_librdkafka_and_the_client_accepts_them() -> None:
    config = config_of(**SETTINGS)
    assert config["acks"] == "1" and config["linger.ms"] == 7
    assert config["batch.size"] == 65536 and config["compression.type"] == "lz4"
    assert config["message.max.bytes"] == 2000000 and config["request.timeout.ms"] == 12345
    assert config["retry.backoff.ms"] == 77 and config["metadata.max.age.ms"] == 60000
    assert config["connections.max.idle.ms"] == 90000
    # not idempotent: one request in flight keeps retries in order, as aiokafka does
    assert config["enable.idempotence"] is False
    assert config["max.in.flight.requests.per.connection"] == 1
    assert config["client.id"] == "rd-thread-1-producer"
    confluent_kafka.Producer(config).flush(0)  # librdkafka checks every name and value


def test_defaults_are_the_runtimes_with_java_partitioning_and_ordered_retries() -> None:
    config = config_of(**{"bootstrap.servers": "127.0.0.1:9999"})
    assert config["bootstrap.servers"] == "127.0.0.1:9999"
    assert config["acks"] == "all" and config["linger.ms"] == 10
    assert config["batch.size"] == cs.PRODUCER_DEFAULTS["max_batch_size"]
    assert config["partitioner"] == "murmur2_random"
    assert config["enable.idempotence"] is True
    assert "max.in.flight.requests.per.connection" not in config
    confluent_kafka.Producer(config).flush(0)


def test_sasl_settings_reach_librdkafka() -> None:
    """TLS too: tests/security/test_runtime_sasl_ssl.py runs this producer over SASL_SSL."""
    config = config_of(
        **{
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "alice",
            "sasl.password": "alice-secret",
            "producer.sasl.username": "bob",  # the producer's own, as Kafka's prefixes
        }
    )
    assert config["security.protocol"] == "sasl_plaintext"
    assert config["sasl.mechanisms"] == "SCRAM-SHA-256"
    assert (config["sasl.username"], config["sasl.password"]) == ("bob", "alice-secret")


WORDS = [f"w{i}" for i in range(40)]


def test_word_count_through_librdkafka_is_exact_and_partitioned_as_java(
    any_broker, tmp_path: Path
) -> None:
    bootstrap = any_broker.bootstrap
    create_topic(bootstrap, "rd-lines", 2)
    create_topic(bootstrap, "rd-counts", 3)
    lines = [" ".join(WORDS[i : i + 4]) for i in range(0, 40, 2)]
    produce(
        bootstrap, "rd-lines", [(str(i).encode(), line.encode()) for i, line in enumerate(lines)]
    )
    app = App(
        {
            "application.id": "rdwc",
            "bootstrap.servers": bootstrap,
            "state.dir": str(tmp_path / "state"),
            "commit.interval.ms": "200",
            "session.timeout.ms": "6000",
            "heartbeat.interval.ms": "500",
        }
    )
    (
        app.stream("rd-lines", key_serde="str", value_serde="str")
        .flat_map(lambda _k, line: [(w, w) for w in line.split()], key_serde="str")
        .group_by_key(name="words")
        .count(store="counts")
        .to_stream()
        .to("rd-counts", value_serde="int")
    )
    expected = {w: sum(line.split().count(w) for line in lines) for w in WORDS}

    def counts() -> dict[str, int]:
        latest = latest_by_key(read_all(bootstrap, "rd-counts"))
        return {k.decode(): struct.unpack(">q", v)[0] for k, v in latest.items()}

    app.start()
    try:
        wait_until(lambda: counts() == expected, what="word counts")
    finally:
        app.stop()
    assert app.fatal_error is None
    # keyed records go where Java's and aiokafka's murmur2 put them (repartition and sink)
    for rec in read_all(bootstrap, "rd-counts"):
        assert rec.partition == (murmur2(rec.key) & 0x7FFFFFFF) % 3
    for rec in read_all(bootstrap, "rdwc-words-repartition"):
        assert rec.partition == (murmur2(rec.key) & 0x7FFFFFFF) % 2
    changelog = read_all(bootstrap, "rdwc-counts-changelog")
    assert {r.key.decode() for r in changelog} == set(WORDS)
    # the final commit moved the input offsets to the end: every line committed once
    ends = Counter(r.partition for r in read_all(bootstrap, "rd-lines"))  # fresh: from 0
    assert committed(bootstrap, "rdwc", "rd-lines") == dict(ends)


def committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    async def go() -> dict[int, int]:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            offsets = await admin.list_consumer_group_offsets(group)
        finally:
            await admin.close()
        return {tp.partition: md.offset for tp, md in offsets.items() if tp.topic == topic}

    return asyncio.run(go())


def run_collector(
    bootstrap: str, config: dict[str, Any], records: list[tuple[str, bytes]]
) -> dict[Any, int]:
    """Send ``records`` to partition 0 through a collector, flush; the offsets reached."""

    async def go() -> dict[Any, int]:
        producer = LibrdkafkaProducer({"bootstrap.servers": bootstrap, **config})
        await producer.start()
        collector = LibrdkafkaCollector(producer)
        try:
            for topic, value in records:
                collector.send(topic, b"k", value, 0, int(time.time() * 1000))
            return await collector.flush()
        finally:
            await producer.stop()

    return asyncio.run(go())


def test_a_full_librdkafka_queue_keeps_records_waiting_in_order(broker) -> None:
    create_topic(broker.bootstrap, "rd-full", 1)
    values = [str(i).encode() for i in range(200)]
    tiny = {"queue.buffering.max.messages": 7, "linger.ms": 1}
    reached = run_collector(broker.bootstrap, tiny, [("rd-full", v) for v in values])
    assert list(reached.values()) == [200]
    assert [r.value for r in read_all(broker.bootstrap, "rd-full")] == values


def test_an_undelivered_record_fails_the_flush(broker) -> None:
    create_topic(broker.bootstrap, "rd-small", 1, **{"max.message.bytes": "1000"})
    with pytest.raises(DeliveryError, match="rd-small-0"):
        run_collector(broker.bootstrap, {}, [("rd-small", b"x" * 5000)])


def test_records_at_timestamp_zero_keep_it_and_their_order(broker) -> None:
    """librdkafka stamps a timestamp of 0 "now"; the thread's producer sends those records
    through aiokafka after everything queued before them, so CreateTime 0 and the partition's
    order both hold, and flush reports the offset past the last."""
    create_topic(broker.bootstrap, "rd-zero", 1, **{"retention.ms": "-1"})
    stamps = [5, 0, 7, 0, 0, 9, 11, 0]

    async def go() -> dict[Any, int]:
        at_zero = ZeroTimestampSender(lambda: AIOKafkaProducer(bootstrap_servers=broker.bootstrap))
        producer = LibrdkafkaProducer({"bootstrap.servers": broker.bootstrap}, at_zero)
        await producer.start()
        collector = LibrdkafkaCollector(producer)
        try:
            for i, ts in enumerate(stamps):
                collector.send("rd-zero", b"k", str(i).encode(), None, ts, [("h", b"%d" % i)])
            return await collector.flush()
        finally:
            await producer.stop()

    reached = asyncio.run(go())
    assert list(reached.values()) == [len(stamps)]
    records = read_all(broker.bootstrap, "rd-zero")
    assert [(r.value, r.timestamp) for r in records] == [
        (str(i).encode(), ts) for i, ts in enumerate(stamps)
    ]
    assert [list(r.headers) for r in records] == [[("h", b"%d" % i)] for i in range(len(stamps))]


def test_a_named_partitions_offset_reached_counts_a_last_record_at_timestamp_zero(
    broker,
) -> None:
    """A changelog record at timestamp 0 goes out after the records queued before it, through
    its own client: the offset reached is past it, not past the last one librdkafka sent."""
    create_topic(broker.bootstrap, "rd-zero-named", 1, **{"retention.ms": "-1"})

    async def go() -> dict[Any, int]:
        at_zero = ZeroTimestampSender(lambda: AIOKafkaProducer(bootstrap_servers=broker.bootstrap))
        producer = LibrdkafkaProducer({"bootstrap.servers": broker.bootstrap}, at_zero)
        await producer.start()
        collector = LibrdkafkaCollector(producer)
        try:
            for i, ts in enumerate([5, 6, 0]):
                collector.send("rd-zero-named", b"k", str(i).encode(), 0, ts)
            return await collector.flush()
        finally:
            await producer.stop()

    assert asyncio.run(go()) == {TopicPartition("rd-zero-named", 0): 3}


def test_without_delivered_offsets_records_go_out_and_a_failure_still_fails_the_flush(
    broker,
) -> None:
    """A store-less thread's producer asks librdkafka for failed deliveries only (no callback
    and message object per delivered record): the records arrive, no offsets are reported,
    and a record the broker refuses still raises at the flush."""
    create_topic(broker.bootstrap, "rd-noreport", 1)
    create_topic(broker.bootstrap, "rd-noreport-small", 1, **{"max.message.bytes": "1000"})
    values = [str(i).encode() for i in range(50)]

    async def go(records: list[tuple[str, bytes]]) -> dict[Any, int]:
        producer = LibrdkafkaProducer(
            {"bootstrap.servers": broker.bootstrap}, delivered_offsets=False
        )
        await producer.start()
        collector = LibrdkafkaCollector(producer)
        try:
            for topic, value in records:
                collector.send(topic, b"k", value, 0, int(time.time() * 1000))
            return await collector.flush()
        finally:
            await producer.stop()

    assert asyncio.run(go([("rd-noreport", v) for v in values])) == {}
    assert [r.value for r in read_all(broker.bootstrap, "rd-noreport")] == values
    with pytest.raises(DeliveryError, match="rd-noreport-small-0"):
        asyncio.run(go([("rd-noreport-small", b"x" * 5000)]))


def test_only_a_thread_without_stores_drops_the_delivered_offsets() -> None:
    """The changelog offsets a store checkpoints come from the delivery reports: a topology
    with a store keeps them, a stateless one does not ask for them."""
    from streamrt.runtime.engine.clients.clients import ClientFactory
    from streamrt.runtime.engine.env import ThreadEnv

    def producer_of(app: App) -> Any:
        config = StreamsConfig.from_mapping({"application.id": "rdr"})
        subs = tuple(app.topology.subtopologies("rdr"))
        env = ThreadEnv(config, app.topology, subs, "i-1", True, lambda *_a, **_kv: None)
        no_metadata: Any = lambda: None  # noqa: E731  (nothing is produced)
        factory = ClientFactory(env, "rdr-thread-1", "i-1-1", None, no_metadata)
        return factory.thread_producer(factory.thread_admin())

    stateless, stateful = App({"application.id": "rdr"}), App({"application.id": "rdr"})
    stateless.stream("rdr-in").filter(lambda k, v: True).to("rdr-out")
    stateful.stream("rdr-in", key_serde="str").group_by_key().count(store="counts")
    assert producer_of(stateless).delivered_offsets is False
    assert producer_of(stateful).delivered_offsets is True


def test_delivery_reports_reach_the_offsets_without_a_python_call_per_record(broker) -> None:
    """The changelog offsets come from librdkafka's delivery reports, stored by a C-level
    ``dict.__setitem__`` (no Python frame per delivered record): the last offset per named
    partition is still exact, and a failed record librdkafka placed still fails the flush."""
    create_topic(broker.bootstrap, "rd-slots", 2)
    create_topic(broker.bootstrap, "rd-slots-small", 1, **{"max.message.bytes": "1000"})
    calls: Counter[str] = Counter()

    def profile(frame: Any, event: str, _arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename.endswith("rdkafka_producer.py"):
            calls[frame.f_code.co_name] += 1

    async def go(records: list[tuple[str, int | None, bytes]]) -> dict[Any, int]:
        producer = LibrdkafkaProducer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        await producer.start()
        collector = LibrdkafkaCollector(producer)
        try:
            for topic, partition, value in records:
                collector.send(topic, b"k", value, partition, int(time.time() * 1000))
            await collector.drain()
            calls.clear()
            threading.setprofile(profile)
            sys.setprofile(profile)
            try:
                return await collector.flush()
            finally:
                sys.setprofile(None)
                threading.setprofile(None)  # type: ignore[arg-type]
        finally:
            await producer.stop()

    records: list[tuple[str, int | None, bytes]] = [
        ("rd-slots", i % 2, b"%d" % i) for i in range(600)
    ]
    records += [("rd-slots", None, b"keyed")] * 100  # librdkafka places them: no offsets
    reached = asyncio.run(go(records))
    assert sum(calls.values()) < 100, calls  # a callback per record: 700 calls and more
    assert reached == {TopicPartition("rd-slots", 0): 300, TopicPartition("rd-slots", 1): 300}
    assert len(read_all(broker.bootstrap, "rd-slots")) == 700
    with pytest.raises(DeliveryError, match="rd-slots-small-0"):
        asyncio.run(go([("rd-slots-small", 0, b"ok"), ("rd-slots-small", None, b"x" * 5000)]))


def test_a_missing_topics_partition_count_is_asked_again_only_after_a_while(broker) -> None:
    """A sink with a stream partitioner asks for the partition count of its topic at every
    record; a topic that does not exist yet (a cluster that does not create topics on request,
    as here: the producer does not ask it to) costs one metadata round trip on the thread's
    loop per second, not one per record; once it exists its count is read."""

    async def go() -> tuple[list[int], int]:
        producer = LibrdkafkaProducer(
            {"bootstrap.servers": broker.bootstrap, "allow.auto.create.topics": False}
        )
        await producer.start()
        asked: list[str] = []
        real = producer.partition_count

        def counting(topic: str, timeout_s: float = 5.0) -> int:
            asked.append(topic)
            return real(topic, timeout_s)

        producer.partition_count = counting  # type: ignore[method-assign]
        collector = LibrdkafkaCollector(producer)
        try:
            counts = [collector.partitions_for("rd-later") for _ in range(50)]
            create_topic(broker.bootstrap, "rd-later", 3)
            deadline = time.monotonic() + 30
            while collector.partitions_for("rd-later") != 3:
                assert time.monotonic() < deadline, "the new topic's count was never read"
                await asyncio.sleep(0.2)
            return counts, len(asked)
        finally:
            await producer.stop()

    counts, asked = asyncio.run(go())
    assert counts == [0] * 50
    assert 2 <= asked <= 40  # one miss for the 50 asks, then about one a second until found
