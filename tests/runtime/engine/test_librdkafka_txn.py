"""exactly_once_v2 on librdkafka's transactional producer: the group metadata blob is
librdkafka's own format, the broker checks the generation, member id and instance id it
carries (a stale member's TxnOffsetCommit is refused, the transaction lost but abortable); a
zombie is fenced; a record at timestamp 0 is refused by name under exactly_once_v2."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from unittest import mock

import confluent_kafka
import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.structs import TopicPartition as KafkaTP

from streamrt.membership.config import FencedInstanceError
from streamrt.membership.member import GroupMember
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.engine.clients import rdkafka_txn
from streamrt.runtime.engine.clients.rdkafka_producer import librdkafka_config
from streamrt.runtime.engine.clients.rdkafka_txn import (
    GroupMetadata,
    LibrdkafkaTransactionalCollector,
    ProducerFencedError,
    TransactionalLibrdkafkaProducer,
    group_metadata_bytes,
    transactional_config,
)
from streamrt.runtime.engine.eos import (
    TransactionLostError,
    abort_transaction,
    commit_transaction,
)
from streamrt.state import TopicPartition
from tests.kafka_helpers import create_topic
from tests.membership.support import member
from tests.runtime.eos_support import read_committed

Metadata = GroupMetadata
GROUP = "txn-group"


async def joined(bootstrap: str, instance: str | None) -> GroupMember:
    """A member of GROUP (streamrt's, as a stream thread's) that owns "in"."""
    m = member(bootstrap, GROUP, "in", instance=instance)
    await asyncio.wait_for(m.start(), 30)
    return m


def metadata_of(m: GroupMember) -> Metadata:
    return Metadata(m.generation, m.member_id, m.config.group_instance_id)


async def committed(bootstrap: str) -> int | None:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP)
    await consumer.start()
    try:
        for _ in range(50):  # the commit marker lands just after EndTxn is answered
            value = await consumer.committed(KafkaTP("in", 0))
            if value is not None:
                return int(value)
            await asyncio.sleep(0.1)
        return None
    finally:
        await consumer.stop()


def consumer_blob(group: str, instance: str | None) -> bytes:
    """What librdkafka's own consumer writes before it joined (generation -1, member "")."""
    config = {"group.id": group, "bootstrap.servers": "127.0.0.1:1"}
    if instance is not None:
        config["group.instance.id"] = instance
    consumer = confluent_kafka.Consumer(config)
    try:
        blob = consumer.consumer_group_metadata()
    finally:
        consumer.close()
    assert isinstance(blob, bytes)
    return bytes(blob)


@pytest.mark.parametrize("instance", ["inst-1", None])
def test_the_blob_is_librdkafkas_own_format(instance: str | None) -> None:
    ours = group_metadata_bytes("g1", Metadata(-1, "", instance))
    assert ours == consumer_blob("g1", instance)


def test_the_blob_carries_generation_member_and_instance() -> None:
    blob = group_metadata_bytes("app", Metadata(7, "m-1", "web-1-thread-1"))
    assert blob == b"CGMDv2:" + (7).to_bytes(4, "little") + b"app\0m-1\0\0web-1-thread-1\0"
    with pytest.raises(ValueError, match="NUL"):
        group_metadata_bytes("a\0b", Metadata(1, "m", None))


def test_transactional_config_is_accepted_by_librdkafka() -> None:
    cfg = StreamsConfig.from_mapping(
        {
            "application.id": "rd",
            "processing.guarantee": "exactly_once_v2",
            "producer.linger.ms": "3",
            "producer.enable.idempotence": "false",  # implied by transactions, as in Kafka
        }
    )
    config = transactional_config(librdkafka_config(cfg.client_config(), "p"), "rd-web-1-t-1")
    assert config["transactional.id"] == "rd-web-1-t-1"
    assert config["transaction.timeout.ms"] == 10_000 and config["linger.ms"] == 3
    assert config["enable.idempotence"] is True
    assert "max.in.flight.requests.per.connection" not in config
    confluent_kafka.Producer(config).flush(0)  # librdkafka checks every name and value


async def commit_offsets(
    bootstrap: str, txn_id: str, offset: int, metadata: Metadata, out: bytes = b""
) -> None:
    """One transaction of librdkafka's producer: ``out`` to topic "out" (if given), the input
    offset with ``metadata``; aborted (and the error raised) when refused."""
    config = transactional_config({"bootstrap.servers": bootstrap, "linger.ms": 1}, txn_id)
    producer = TransactionalLibrdkafkaProducer(config, lambda: metadata)
    collector = LibrdkafkaTransactionalCollector(producer)
    await producer.start()
    try:
        await collector.begin()
        if out:
            collector.send("out", b"k", out, 0, int(time.time() * 1000))
        await collector.flush()
        try:
            await collector.send_offsets({TopicPartition("in", 0): offset}, GROUP)
        except TransactionLostError:
            await collector.abort()  # abortable: the producer stays usable
            collector.reset()
            raise
        await collector.commit()
    finally:
        await producer.stop()


def test_the_broker_checks_the_members_generation_and_ids(any_broker) -> None:
    bootstrap = any_broker.bootstrap
    create_topic(bootstrap, "in", 1)
    create_topic(bootstrap, "out", 1)

    async def go() -> None:
        member = await joined(bootstrap, None)
        try:
            now = metadata_of(member)
            await commit_offsets(bootstrap, "rt-1", 5, now, b"committed")
            assert await committed(bootstrap) == 5
            stale = Metadata(now.generation_id - 1, now.member_id, None)
            with pytest.raises(TransactionLostError, match="ILLEGAL_GENERATION"):
                await commit_offsets(bootstrap, "rt-1", 9, stale, b"aborted")
            unknown = Metadata(now.generation_id, "nobody", None)
            with pytest.raises(TransactionLostError, match="UNKNOWN_MEMBER_ID"):
                await commit_offsets(bootstrap, "rt-1", 9, unknown)
            assert await committed(bootstrap) == 5  # the refused commits never landed
        finally:
            await member.close()

    asyncio.run(go())
    assert [r.value for r in read_committed(bootstrap, "out")] == [b"committed"]


def test_a_replaced_static_member_is_fenced(broker) -> None:
    create_topic(broker.bootstrap, "in", 1)

    async def go() -> None:
        first = await joined(broker.bootstrap, "inst-1")
        stale = metadata_of(first)
        await first.close()
        second = await joined(broker.bootstrap, "inst-1")  # the same instance id, rejoined
        try:
            with pytest.raises(FencedInstanceError, match="inst-1"):
                await commit_offsets(broker.bootstrap, "rt-2", 9, stale)
            await commit_offsets(broker.bootstrap, "rt-2", 7, metadata_of(second))
            assert await committed(broker.bootstrap) == 7
        finally:
            await second.close()

    asyncio.run(go())


def test_a_zombie_is_fenced_by_init_transactions(broker) -> None:
    """A second producer with the same transactional.id starts: the first one's next
    transactional call fails as fenced (it must be re-created, it cannot abort)."""
    create_topic(broker.bootstrap, "out", 1)

    async def go() -> None:
        config = transactional_config({"bootstrap.servers": broker.bootstrap}, "rt-3")
        meta = lambda: Metadata(-1, "", None)  # noqa: E731
        zombie = TransactionalLibrdkafkaProducer(config, meta)
        await zombie.start()
        collector = LibrdkafkaTransactionalCollector(zombie)
        await collector.begin()
        collector.send("out", b"k", b"zombie", 0, int(time.time() * 1000))
        await collector.flush()
        successor = TransactionalLibrdkafkaProducer(config, meta)
        await successor.start()  # InitProducerId bumps the epoch
        try:
            with pytest.raises(ProducerFencedError):
                await collector.commit()
            with pytest.raises(ProducerFencedError):
                await collector.abort()
        finally:
            await zombie.stop()
            await successor.stop()

    asyncio.run(go())


def test_a_zombie_fenced_with_records_in_flight_loses_its_transaction_at_flush(broker) -> None:
    """The successor fences the zombie while the zombie's records are still on their way:
    flush fails as a lost transaction, which the thread recovers; not as confluent-kafka's
    own exception (or, on Python < 3.12, a garbled SystemError), which killed the thread."""
    create_topic(broker.bootstrap, "out", 2)

    async def go() -> None:
        config = transactional_config({"bootstrap.servers": broker.bootstrap}, "rt-5")
        meta = lambda: Metadata(-1, "", None)  # noqa: E731
        zombie = TransactionalLibrdkafkaProducer(config, meta)
        await zombie.start()
        collector = LibrdkafkaTransactionalCollector(zombie)
        now = int(time.time() * 1000)
        for i in range(50):
            collector.send("out", f"k{i}".encode(), b"before", None, now)
        await collector.drain()  # begins the transaction
        await collector.flush()
        for i in range(50):
            collector.send("out", f"k{i}".encode(), b"fenced", None, now)
        await collector.drain()
        successor = TransactionalLibrdkafkaProducer(config, meta)
        await successor.start()  # InitProducerId bumps the epoch
        try:
            for i in range(50):
                collector.send("out", f"k{i}".encode(), b"after", None, now)
            with pytest.raises(TransactionLostError):
                await collector.drain()
                await collector.flush()
        finally:
            await zombie.stop()
            await successor.stop()

    asyncio.run(go())


def test_closing_a_fenced_zombie_logs_the_failed_abort_instead_of_warning(
    broker, recwarn: pytest.WarningsRecorder, caplog: pytest.LogCaptureFixture
) -> None:
    """confluent-kafka's close aborts the open transaction and raises a RuntimeWarning when
    that fails, as it must once the producer is fenced: expected, so it is logged."""
    create_topic(broker.bootstrap, "out", 1)

    async def go() -> None:
        config = transactional_config({"bootstrap.servers": broker.bootstrap}, "rt-6")
        meta = lambda: Metadata(-1, "", None)  # noqa: E731
        zombie = TransactionalLibrdkafkaProducer(config, meta)
        await zombie.start()
        collector = LibrdkafkaTransactionalCollector(zombie)
        now = int(time.time() * 1000)
        collector.send("out", b"k", b"open", None, now)
        await collector.drain()  # begins the transaction
        await collector.flush()
        successor = TransactionalLibrdkafkaProducer(config, meta)
        await successor.start()  # fences the zombie
        try:
            for i in range(20):
                collector.send("out", f"k{i}".encode(), b"fenced", None, now)
            with pytest.raises(TransactionLostError):
                await collector.drain()
                await collector.flush()
            with caplog.at_level(
                logging.INFO, logger="streamrt.runtime.engine.clients.rdkafka_txn"
            ):
                await zombie.stop()
        finally:
            await successor.stop()

    asyncio.run(go())
    assert not [w for w in recwarn if "abort_transaction" in str(w.message)]
    assert any("transactional producer close: " in r.getMessage() for r in caplog.records)


def test_an_aborted_transactions_records_do_not_fail_the_next_one(broker) -> None:
    """Records still queued at an abort are purged (their delivery reports are errors): the
    next transaction's flush must not see them, and only its record is committed."""
    create_topic(broker.bootstrap, "out", 1)

    async def go() -> None:
        config = transactional_config({"bootstrap.servers": broker.bootstrap}, "rt-4")
        config["linger.ms"] = 5_000  # the first record stays queued until the abort
        producer = TransactionalLibrdkafkaProducer(config, lambda: Metadata(-1, "", None))
        await producer.start()
        collector = LibrdkafkaTransactionalCollector(producer)
        try:
            collector.send("out", b"k", b"aborted", 0, int(time.time() * 1000))
            await collector.drain()  # begins the transaction, hands the record over
            assert collector.in_transaction
            await collector.abort()
            collector.reset()
            collector.send("out", b"k", b"committed", 0, int(time.time() * 1000))
            await collector.drain()
            producer.poll()
            reached = await collector.flush()
            await collector.commit()
        finally:
            await producer.stop()
        assert reached == {TopicPartition("out", 0): reached[TopicPartition("out", 0)]}

    asyncio.run(go())
    assert [r.value for r in read_committed(broker.bootstrap, "out")] == [b"committed"]


def test_an_abort_with_no_transaction_open_drops_the_staged_records(broker) -> None:
    """Records sent after a commit wait for the drain that begins the next transaction; an
    abort before that drain (a commit that failed to begin, then the tasks closed dirty)
    must drop them as Kafka's abort drops what its producer was sent, or the next
    transaction commits the output of input that will be read again."""
    create_topic(broker.bootstrap, "staged", 1)

    async def go() -> None:
        config = transactional_config({"bootstrap.servers": broker.bootstrap}, "rt-5")
        producer = TransactionalLibrdkafkaProducer(config, lambda: Metadata(-1, "", None))
        await producer.start()
        collector = LibrdkafkaTransactionalCollector(producer)
        try:
            collector.send("staged", b"k", b"of the dirty-closed task", 0, int(time.time() * 1000))
            assert not collector.in_transaction  # staged: not handed to librdkafka yet
            assert await abort_transaction(collector, [])
            collector.send("staged", b"k", b"committed", 0, int(time.time() * 1000))
            assert await commit_transaction(collector, [], GROUP) == {}
        finally:
            await producer.stop()

    asyncio.run(go())
    assert [r.value for r in read_committed(broker.bootstrap, "staged")] == [b"committed"]


class _HangingClient:
    """confluent-kafka's Producer whose send_offsets_to_transaction never returns, as
    librdkafka's does when the group coordinator went away (librdkafka #5456)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.closed = threading.Event()

    def init_transactions(self, timeout: float) -> None:
        pass

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> None:
        pass

    def poll(self, timeout: float = 0) -> int:
        return 0

    def send_offsets_to_transaction(self, parts: object, blob: bytes, timeout: float) -> None:
        self.release.wait()  # ignores its timeout

    def close(self) -> None:
        self.release.wait()  # a close waits for the stuck call
        self.closed.set()


def test_a_call_that_never_answers_loses_the_transaction_and_the_producer_is_abandoned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(rdkafka_txn, "SEND_OFFSETS_TIMEOUT_S", 0.2)
    monkeypatch.setattr(rdkafka_txn, "STUCK_GRACE_S", 0.1)
    client = _HangingClient()
    producer = TransactionalLibrdkafkaProducer({}, lambda: Metadata(1, "m-1", None))

    async def go() -> None:
        with mock.patch("confluent_kafka.Producer", lambda _config: client):
            await producer.start()
        begun = time.monotonic()
        with pytest.raises(ProducerFencedError, match="no answer within"):
            await producer.send_offsets({TopicPartition("in", 0): 5}, GROUP)
        assert time.monotonic() - begun < 5 and producer.stuck
        with pytest.raises(ProducerFencedError, match="stuck"):
            await producer.abort()
        await asyncio.wait_for(producer.stop(), 5)  # not waiting for the stuck close

    try:
        asyncio.run(go())
        assert not client.closed.is_set()
    finally:
        client.release.set()
    assert client.closed.wait(5)  # the abandoned close finished once the call returned
