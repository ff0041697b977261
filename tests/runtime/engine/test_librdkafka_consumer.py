"""The stream threads' librdkafka main consumer: every main-consumer setting reaches librdkafka,
security included; the consumer in assign mode fetches, seeks, pauses and skips aborted
transactions on a real broker, never joining the group; a word count through it (librdkafka's
producer too, transactional under exactly_once_v2) is exact and commits its input, on both
brokers."""

from __future__ import annotations

import asyncio
import struct
from collections import Counter
from pathlib import Path
from typing import Any

import confluent_kafka
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient

from streamrt.runtime import App
from streamrt.runtime import client_settings as cs
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.engine.clients.rdkafka_consumer import (
    TUNING_KWARGS,
    LibrdkafkaConsumer,
    PositionUnknownError,
    librdkafka_consumer_config,
)
from streamrt.topic_partition import TopicPartition
from tests.kafka_helpers import create_topic, latest_by_key, produce, read_all, wait_until

SETTINGS = {
    "consumer.fetch.max.bytes": "3000000",
    "main.consumer.fetch.min.bytes": "2",
    "consumer.fetch.max.wait.ms": "250",
    "consumer.max.partition.fetch.bytes": "500000",
    "consumer.check.crcs": "true",
    "consumer.client.rack": "rack-a",
    "request.timeout.ms": "12345",  # bare: every client
    "consumer.retry.backoff.ms": "77",
    "consumer.metadata.max.age.ms": "60000",
    "consumer.connections.max.idle.ms": "90000",
    "main.consumer.auto.offset.reset": "latest",
    "main.consumer.max.poll.records": "321",
    "restore.consumer.fetch.min.bytes": "9",  # another consumer's: not the main one's
}


def config_of(read_committed: bool = False, **settings: str) -> tuple[dict[str, Any], int]:
    cfg = StreamsConfig.from_mapping({"application.id": "rd", **settings})
    return librdkafka_consumer_config(cfg.client_config(), "rd-thread-1", "rd", read_committed)


def test_every_kafka_consumer_setting_has_a_librdkafka_mapping() -> None:
    kwargs = {kwarg for kwarg, _parse in cs.CONSUMER_KEYS.values()}
    assert kwargs <= TUNING_KWARGS | {"max_poll_records"}
    assert {"isolation.level", "auto.offset.reset"} <= set(cs.CONSUMER_KEYS)


def test_settings_reach_librdkafka_and_the_client_accepts_them() -> None:
    config, max_records = config_of(**SETTINGS)
    assert config["fetch.max.bytes"] == 3000000 and config["fetch.min.bytes"] == 2
    assert config["fetch.wait.max.ms"] == 250 and config["max.partition.fetch.bytes"] == 500000
    assert config["check.crcs"] is True and config["client.rack"] == "rack-a"
    assert config["socket.timeout.ms"] == 12345 and config["retry.backoff.ms"] == 77
    assert config["metadata.max.age.ms"] == 60000 and config["connections.max.idle.ms"] == 90000
    assert config["auto.offset.reset"] == "latest" and max_records == 321
    # the runtime's: never commits, never stores offsets, reads uncommitted under at-least-once
    assert config["enable.auto.commit"] is False and config["enable.auto.offset.store"] is False
    assert config["isolation.level"] == "read_uncommitted"
    assert (config["group.id"], config["client.id"]) == ("rd", "rd-thread-1")
    confluent_kafka.Consumer(config).close()  # librdkafka checks every name and value


def test_defaults_and_exactly_once_reads_committed() -> None:
    config, max_records = config_of(read_committed=True)
    assert max_records == cs.MAIN_CONSUMER_DEFAULTS["max_poll_records"]
    assert config["auto.offset.reset"] == "earliest"
    assert config["isolation.level"] == "read_committed"
    assert config_of(**{"auto.offset.reset": "none"})[0]["auto.offset.reset"] == "error"


def test_sasl_and_tls_settings_reach_librdkafka() -> None:
    config, _ = config_of(
        **{
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "alice",
            "sasl.password": "alice-secret",
            "main.consumer.sasl.username": "bob",  # the main consumer's own
        }
    )
    assert config["security.protocol"] == "sasl_plaintext"
    assert config["sasl.mechanisms"] == "SCRAM-SHA-256"
    assert (config["sasl.username"], config["sasl.password"]) == ("bob", "alice-secret")


def _consumer(bootstrap: str, group: str, read_committed: bool = False) -> LibrdkafkaConsumer:
    config, _ = config_of(read_committed, **{"bootstrap.servers": bootstrap})
    return LibrdkafkaConsumer({**config, "group.id": group}, max_records=1000)


async def _take(consumer: LibrdkafkaConsumer, n: int, timeout_s: float = 20.0) -> list[Any]:
    """Fetch until ``n`` records arrived (or the timeout), in partition order."""
    got: list[Any] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while len(got) < n and loop.time() < deadline:
        for records in (await consumer.getmany(timeout_ms=200)).values():
            got.extend(records)
    return got


def test_assign_seek_pause_and_records_as_the_task_path_reads_them(broker) -> None:
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "rdc-in", 2)
    produce(bootstrap, "rdc-in", [(b"k", f"v{i}".encode()) for i in range(10)], partition=0)
    _send_with_header(bootstrap, "rdc-in", 1, b"p1", ("h", b"x"))
    p0, p1 = TopicPartition("rdc-in", 0), TopicPartition("rdc-in", 1)

    async def go() -> None:
        consumer = _consumer(bootstrap, "rdc")
        await consumer.start()
        try:
            consumer.assign([p0, p1])
            consumer.seek(p0, 4)
            with pytest.raises(PositionUnknownError):
                await consumer.position(p1)  # auto.offset.reset, nothing fetched yet
            got = await _take(consumer, 7)
            by_tp = {(r.topic, r.partition): r for r in got}
            assert [r.offset for r in got if r.partition == 0] == list(range(4, 10))
            assert next(r.value for r in got if r.partition == 0) == b"v4"
            head = by_tp[("rdc-in", 1)]
            assert (head.key, head.value, list(head.headers)) == (None, b"p1", [("h", b"x")])
            assert head.timestamp > 0 and head.timestamp_type == 0  # create time
            assert await consumer.position(p0) == 10 and await consumer.position(p1) == 1
            assert consumer.highwater(p0) == 10
            # back to 2 while paused: nothing comes until resumed, then 2.. again
            consumer.pause(p0)
            consumer.seek(p0, 2)
            assert await _take(consumer, 1, timeout_s=1.0) == []
            consumer.resume(p0)
            assert [r.offset for r in await _take(consumer, 8)] == list(range(2, 10))
            # a partition that leaves the assignment gives nothing more
            consumer.assign([p1])
            assert consumer.assignment() == {p1}
            produce(bootstrap, "rdc-in", [(b"k", b"late")], partition=0)
            assert await _take(consumer, 1, timeout_s=1.0) == []
        finally:
            await consumer.stop()

    asyncio.run(go())
    assert _group_state(bootstrap, "rdc") is None  # librdkafka never joined nor committed


def test_a_partition_paused_then_sought_and_resumed_before_a_fetch_runs(broker) -> None:
    """What the member listener does to a kept partition in a cooperative rebalance: pause it,
    seek it back to its position, resume it, all before the next fetch. The seek restarts the
    partition in librdkafka, which keeps the application's pause across that restart: the
    partition must not stay paused."""
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "rdc-kept", 1)
    tp = TopicPartition("rdc-kept", 0)

    async def go() -> None:
        consumer = _consumer(bootstrap, "rdc-kept")
        await consumer.start()
        try:
            consumer.assign([tp])
            assert await _take(consumer, 1, timeout_s=1.0) == []  # started, empty
            consumer.pause(tp)
            consumer.seek(tp, 0)
            consumer.resume(tp)
            produce(bootstrap, "rdc-kept", [(b"k", f"v{i}".encode()) for i in range(5)])
            assert [r.offset for r in await _take(consumer, 5)] == list(range(5))
        finally:
            await consumer.stop()

    asyncio.run(go())


def test_librdkafka_going_back_by_itself_hands_nothing_out_twice(broker, caplog) -> None:
    """The one thing isolated: librdkafka moving a partition back without a seek of ours (seen
    after quick restarts in a rebalance; here its own seek, behind the wrapper's back). What
    was handed out is not handed out again, and the partition goes on from its position."""
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "rdc-back", 1)
    produce(bootstrap, "rdc-back", [(b"k", f"v{i}".encode()) for i in range(5)])
    tp = TopicPartition("rdc-back", 0)

    async def go() -> None:
        consumer = _consumer(bootstrap, "rdc-back")
        await consumer.start()
        try:
            consumer.assign([tp])
            consumer.seek(tp, 0)
            assert [r.offset for r in await _take(consumer, 5)] == list(range(5))
            consumer._consumer.seek(confluent_kafka.TopicPartition("rdc-back", 0, 0))
            with caplog.at_level("WARNING"):
                assert await _take(consumer, 1, timeout_s=2.0) == []
            assert "went back on rdc-back-0: at 5, got 0" in caplog.text
            produce(bootstrap, "rdc-back", [(b"k", f"v{i}".encode()) for i in range(5, 8)])
            assert [r.offset for r in await _take(consumer, 3)] == [5, 6, 7]
            assert await consumer.position(tp) == 8
        finally:
            await consumer.stop()

    asyncio.run(go())


class _RepeatingConsume:
    """librdkafka's consumer, except that its first non-empty ``consume`` hands every message
    out twice in the one batch: the one thing isolated (what its late committed-offset answer
    did in the rebalance benchmark, inside one fetch)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.repeated = inner, False

    def consume(self, n: int, timeout: float) -> list[Any]:
        messages = self.inner.consume(n, timeout)
        if messages and not self.repeated:
            self.repeated = True
            return messages + messages
        return messages

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_records_repeated_inside_one_fetch_are_handed_out_once(broker, caplog) -> None:
    """A partition with no position yet whose first batch holds its records twice: the task
    path gets each record once, in offset order, with a warning; the position is right."""
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "rdc-twice", 1)
    produce(bootstrap, "rdc-twice", [(b"k", f"v{i}".encode()) for i in range(5)])
    tp = TopicPartition("rdc-twice", 0)

    async def go() -> None:
        consumer = _consumer(bootstrap, "rdc-twice")
        await consumer.start()
        consumer._consumer = _RepeatingConsume(consumer._consumer)
        try:
            consumer.assign([tp])
            with caplog.at_level("WARNING"):
                got = await _take(consumer, 5)
                got += await _take(consumer, 1, timeout_s=1.0)
            assert [r.offset for r in got] == list(range(5))
            assert "went back on rdc-twice-0" in caplog.text
            assert await consumer.position(tp) == 5
        finally:
            await consumer.stop()

    asyncio.run(go())


@pytest.mark.parametrize(("reset", "first"), [("earliest", 0), ("latest", 5)])
def test_a_partition_nobody_sought_starts_at_the_reset_not_at_librdkafkas_lookup(
    broker, reset: str, first: int
) -> None:
    """librdkafka never looks up the group's committed offsets (its late answer can move a
    partition restarted meanwhile back to the reset: librdkafka issue 5345): the member
    listener seeks committed offsets itself, so a partition assigned without a seek starts at
    ``auto.offset.reset``, here though the group has an offset committed (3)."""
    bootstrap = broker.bootstrap
    topic = f"rdc-reset-{reset}"
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, [(b"k", f"v{i}".encode()) for i in range(5)])
    committer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": topic})
    committer.commit(offsets=[confluent_kafka.TopicPartition(topic, 0, 3)], asynchronous=False)
    committer.close()
    tp = TopicPartition(topic, 0)

    async def go() -> None:
        config, _ = config_of(**{"bootstrap.servers": bootstrap, "auto.offset.reset": reset})
        consumer = LibrdkafkaConsumer({**config, "group.id": topic}, max_records=1000)
        await consumer.start()
        try:
            consumer.assign([tp])
            got = await _take(consumer, max(1, 5 - first), timeout_s=1.5)  # latest: nothing
            produce(bootstrap, topic, [(b"k", b"v5")])
            got += await _take(consumer, 1, timeout_s=10.0)
            assert [r.offset for r in got] == list(range(first, 6))
        finally:
            await consumer.stop()

    asyncio.run(go())


def test_a_topic_looked_up_in_vain_still_starts_once_it_exists(broker) -> None:
    """A partition of a topic this consumer has not read is held back while the topic is looked
    up. A topic that does not exist yet is not found; its partition still starts (librdkafka's
    own scan finds the topic later) and takes its records from the sought offset, with a
    topic that was found going on meanwhile."""
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "rdc-there", 1)
    produce(bootstrap, "rdc-there", [(b"k", b"t0")])
    there, later = TopicPartition("rdc-there", 0), TopicPartition("rdc-later", 0)

    async def go() -> None:
        consumer = _consumer(bootstrap, "rdc-lookup")
        await consumer.start()
        try:
            consumer.assign([there, later])
            consumer.seek(later, 1)
            assert [(r.topic, r.value) for r in await _take(consumer, 1)] == [("rdc-there", b"t0")]
            create_topic(bootstrap, "rdc-later", 1)
            produce(bootstrap, "rdc-later", [(b"k", f"l{i}".encode()) for i in range(3)])
            got = await _take(consumer, 2)
            assert [(r.topic, r.offset, r.value) for r in got] == [
                ("rdc-later", 1, b"l1"),
                ("rdc-later", 2, b"l2"),
            ]
        finally:
            await consumer.stop()

    asyncio.run(go())


def test_a_partition_assigned_while_paused_starts_at_its_offset_when_resumed(broker) -> None:
    """What an eager rebalance does to every task: revoke it, assign it again at the committed
    offset and keep it paused until the task is ready. The paused partition is started only
    when resumed (starting it paused left librdkafka's fetcher idle for a second after the
    resume), and then from the offset it was sought to, not the reset."""
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "rdc-eager", 1)
    produce(bootstrap, "rdc-eager", [(b"k", f"v{i}".encode()) for i in range(10)])
    tp = TopicPartition("rdc-eager", 0)

    async def go() -> None:
        consumer = _consumer(bootstrap, "rdc-eager")
        await consumer.start()
        try:
            consumer.assign([tp])
            assert [r.offset for r in await _take(consumer, 10)] == list(range(10))
            consumer.assign([])  # revoked
            consumer.assign([tp])  # and assigned again, at the committed offset
            consumer.seek(tp, 6)
            consumer.pause(tp)
            assert await _take(consumer, 1, timeout_s=1.0) == []
            assert consumer.paused() == {tp} and await consumer.position(tp) == 6
            consumer.resume(tp)
            assert [r.offset for r in await _take(consumer, 4)] == [6, 7, 8, 9]
            assert await consumer.position(tp) == 10
        finally:
            await consumer.stop()

    asyncio.run(go())


def test_partitions_resumed_while_every_partition_was_paused_go_on_from_their_positions(
    broker,
) -> None:
    """What the member listener does to the kept partitions in a cooperative rebalance while
    the new ones wait to restore: every partition librdkafka fetches is paused, then the kept
    ones resume. A resume alone reaches librdkafka's idle fetcher only at its next wake-up (up
    to a second), so the consumer restarts them at their positions instead: each goes on
    exactly where it stopped, nothing again and nothing skipped; a partition with no position
    yet is resumed as it is."""
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "rdc-idle", 3)
    for p in (0, 1):
        produce(bootstrap, "rdc-idle", [(b"k", f"a{i}".encode()) for i in range(10)], partition=p)
    tps = [TopicPartition("rdc-idle", p) for p in range(3)]

    async def go() -> None:
        consumer = _consumer(bootstrap, "rdc-idle")
        await consumer.start()
        try:
            consumer.assign(tps)
            assert len(await _take(consumer, 20)) == 20  # partition 2 is empty: no position
            consumer.pause(*tps)
            for p in (0, 1, 2):
                produce(
                    bootstrap, "rdc-idle", [(b"k", f"b{i}".encode()) for i in range(5)], partition=p
                )
            assert await _take(consumer, 1, timeout_s=1.0) == []
            consumer.resume(*tps)
            assert consumer.paused() == set()
            got = await _take(consumer, 15)
            by_partition = {p: [r.offset for r in got if r.partition == p] for p in range(3)}
            assert by_partition == {
                0: list(range(10, 15)),
                1: list(range(10, 15)),
                2: list(range(5)),
            }
            assert [await consumer.position(tp) for tp in tps] == [15, 15, 5]
            assert await _take(consumer, 1, timeout_s=1.0) == []
        finally:
            await consumer.stop()

    asyncio.run(go())


def test_read_committed_skips_aborted_records_and_markers(broker) -> None:
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "rdc-txn", 1)
    tp = TopicPartition("rdc-txn", 0)

    async def go() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="rdc-t")
        await producer.start()
        try:
            for commit, values in ((True, [b"a", b"b"]), (False, [b"x"]), (True, [b"c"])):
                await producer.begin_transaction()
                for value in values:
                    await producer.send_and_wait("rdc-txn", value, partition=0)
                if commit:
                    await producer.commit_transaction()
                else:
                    await producer.abort_transaction()
        finally:
            await producer.stop()
        consumer = _consumer(bootstrap, "rdc-txn-reader", read_committed=True)
        await consumer.start()
        try:
            consumer.assign([tp])
            consumer.seek(tp, 0)
            assert [r.value for r in await _take(consumer, 3)] == [b"a", b"b", b"c"]
            # a b |commit| x |abort| c |commit|: the position passes the last marker, so
            # the lag a multi-input task reads is 0, not 1 for ever
            await _take(consumer, 1, timeout_s=0.5)  # lets librdkafka serve the marker
            assert consumer.highwater(tp) == 7
            assert await consumer.position(tp) == 7
        finally:
            await consumer.stop()

    asyncio.run(go())


def _send_with_header(
    bootstrap: str, topic: str, partition: int, value: bytes, header: tuple[str, bytes]
) -> None:
    async def go() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        try:
            await producer.send_and_wait(topic, value, partition=partition, headers=[header])
        finally:
            await producer.stop()

    asyncio.run(go())


def _group_state(bootstrap: str, group: str) -> Any:
    async def go() -> Any:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            offsets = await admin.list_consumer_group_offsets(group)
        finally:
            await admin.close()
        return offsets or None

    return asyncio.run(go())


WORDS = [f"w{i}" for i in range(40)]


@pytest.mark.parametrize(
    "guarantee",
    [
        {},
        # librdkafka's transactional producer; the consumer reads committed (markers skipped)
        {"processing.guarantee": "exactly_once_v2"},
    ],
    ids=["at_least_once", "exactly_once_v2"],
)
def test_word_count_through_librdkafka_is_exact(
    guarantee: dict[str, str], any_broker, tmp_path: Path
) -> None:
    bootstrap = any_broker.bootstrap
    create_topic(bootstrap, "rdc-lines", 2)
    create_topic(bootstrap, "rdc-counts", 3)
    lines = [" ".join(WORDS[i : i + 4]) for i in range(0, 40, 2)]
    produce(
        bootstrap, "rdc-lines", [(str(i).encode(), line.encode()) for i, line in enumerate(lines)]
    )
    app = App(
        {
            "application.id": "rdcwc",
            "bootstrap.servers": bootstrap,
            "state.dir": str(tmp_path / "state"),
            "commit.interval.ms": "200",
            "session.timeout.ms": "6000",
            "heartbeat.interval.ms": "500",
            **guarantee,
        }
    )
    (
        app.stream("rdc-lines", key_serde="str", value_serde="str")
        .flat_map(lambda _k, line: [(w, w) for w in line.split()], key_serde="str")
        .group_by_key(name="words")
        .count(store="counts")
        .to_stream()
        .to("rdc-counts", value_serde="int")
    )
    expected = {w: sum(line.split().count(w) for line in lines) for w in WORDS}

    def counts() -> dict[str, int]:
        latest = latest_by_key(read_all(bootstrap, "rdc-counts"))
        return {k.decode(): struct.unpack(">q", v)[0] for k, v in latest.items()}

    app.start()
    try:
        wait_until(lambda: counts() == expected, what="word counts")
    finally:
        app.stop()
    assert app.fatal_error is None
    # every word counted once per occurrence: the repartition topic was read exactly once
    assert len(read_all(bootstrap, "rdcwc-words-repartition")) == sum(expected.values())
    ends = Counter(r.partition for r in read_all(bootstrap, "rdc-lines"))  # fresh: from 0
    offsets = _group_state(bootstrap, "rdcwc")
    assert {tp.partition: md.offset for tp, md in offsets.items() if tp.topic == "rdc-lines"} == (
        dict(ends)
    )
