"""Transactions with kafka-python 3.0.12 (v3 transaction APIs, TxnOffsetCommit v3 with group
metadata): commit, abort, read_committed consumer, offsets with group metadata, fencing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError, ProducerFencedError
from kafka.structs import OffsetAndMetadata

from streamrt.broker.embedded import BrokerThread
from tests.broker.transactions_support import read_values, start_txn_broker
from tests.kafka_helpers import create_topic


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = start_txn_broker(tmp_path / "broker")
    yield b
    b.stop()


def _producer(bootstrap: str, txn_id: str) -> KafkaProducer:
    p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
    p.init_transactions()
    return p


def _read_committed(bootstrap: str, topic: str, expect: int, wait_s: float = 6.0) -> list[bytes]:
    c = KafkaConsumer(
        bootstrap_servers=bootstrap, isolation_level="read_committed", enable_auto_commit=False
    )
    c.assign([TopicPartition(topic, 0)])
    c.seek_to_beginning()
    values: list[bytes] = []
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and len(values) < expect:
        for msgs in c.poll(timeout_ms=200).values():
            values += [m.value for m in msgs]
    c.close()
    return values


def test_commit_abort_and_read_committed(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "t")
    p = _producer(broker.bootstrap, "kp-tx")
    p.begin_transaction()
    p.send("t", b"c0")
    p.send("t", b"c1")
    p.commit_transaction()
    p.begin_transaction()
    p.send("t", b"aborted")
    p.flush()
    p.abort_transaction()
    p.begin_transaction()
    p.send("t", b"open")
    p.flush()
    assert _read_committed(broker.bootstrap, "t", 3, wait_s=2) == [b"c0", b"c1"]
    p.commit_transaction()
    p.close()
    assert _read_committed(broker.bootstrap, "t", 3) == [b"c0", b"c1", b"open"]
    assert read_values(broker.bootstrap, "t", "read_uncommitted", expect=4) == [
        b"c0",
        b"c1",
        b"aborted",
        b"open",
    ]


def test_offsets_with_group_metadata_commit_with_the_transaction(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "in")
    create_topic(broker.bootstrap, "out")
    seed = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i in range(3):
        seed.send("in", f"m{i}".encode())
    seed.flush()
    seed.close()
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id="kp-group",
        group_instance_id="kp-1",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
    # kafka-python's leader assigns nothing for a topic missing from its metadata snapshot and
    # may not rejoin: learn the topic's partitions before joining.
    assert "in" in consumer.topics()
    consumer.subscribe(["in"])
    seen = 0
    deadline = time.monotonic() + 20
    while seen < 3 and time.monotonic() < deadline:
        seen += sum(len(v) for v in consumer.poll(timeout_ms=200).values())
    assert seen == 3
    p = _producer(broker.bootstrap, "kp-ctp")
    p.begin_transaction()
    p.send("out", b"y")
    p.send_offsets_to_transaction(
        {TopicPartition("in", 0): OffsetAndMetadata(3, "", -1)}, consumer.group_metadata()
    )
    p.commit_transaction()
    p.close()
    deadline = time.monotonic() + 10
    while consumer.committed(TopicPartition("in", 0)) != 3:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    consumer.close()
    assert _read_committed(broker.bootstrap, "out", 1) == [b"y"]


def test_zombie_is_fenced_by_a_new_producer(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "t")
    zombie = _producer(broker.bootstrap, "kp-zombie")
    zombie.begin_transaction()
    zombie.send("t", b"zombie")
    zombie.flush()
    successor = _producer(broker.bootstrap, "kp-zombie")
    successor.begin_transaction()
    successor.send("t", b"successor")
    successor.commit_transaction()
    successor.close()
    with pytest.raises(KafkaError) as excinfo:
        zombie.commit_transaction()
    assert isinstance(excinfo.value, ProducerFencedError) or "fenc" in str(excinfo.value).lower()
    zombie.close(timeout=1)
    assert _read_committed(broker.bootstrap, "t", 1) == [b"successor"]


def test_timed_out_transaction_is_aborted_and_fenced(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "t")
    p = KafkaProducer(
        bootstrap_servers=broker.bootstrap,
        transactional_id="kp-timeout",
        transaction_timeout_ms=1500,
    )
    p.init_transactions()
    p.begin_transaction()
    p.send("t", b"late")
    p.flush()
    time.sleep(3)
    with pytest.raises(KafkaError):
        p.commit_transaction()
    p.close(timeout=1)
    assert _read_committed(broker.bootstrap, "t", 1, wait_s=2) == []


def _static_consumer(bootstrap: str, instance: str) -> KafkaConsumer:
    c = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id="kp-static",
        group_instance_id=instance,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=6000,
    )
    assert "in" in c.topics()
    c.subscribe(["in"])
    deadline = time.monotonic() + 20
    while not c.assignment() and time.monotonic() < deadline:
        c.poll(timeout_ms=200)
    assert c.assignment()
    return c


def test_a_fenced_static_member_cannot_commit_offsets(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "in")
    old = _static_consumer(broker.bootstrap, "kp-s1")
    stale = old.group_metadata()
    new = _static_consumer(broker.bootstrap, "kp-s1")  # replaces `old` (KIP-345)
    assert new.group_metadata().member_id != stale.member_id
    p = _producer(broker.bootstrap, "kp-static-tx")
    p.begin_transaction()
    with pytest.raises(KafkaError) as excinfo:
        p.send_offsets_to_transaction(
            {TopicPartition("in", 0): OffsetAndMetadata(1, "", -1)}, stale
        )
    assert "fenced" in type(excinfo.value).__name__.lower() or "FENCED" in str(excinfo.value)
    p.abort_transaction()
    p.close()
    new.close()
    old.close()
