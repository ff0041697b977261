"""Transactions with confluent-kafka (librdkafka): commit, abort, read_committed, consume-
transform-produce offsets, zombie fencing, timeout, and a fenced static member's offsets."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from streamrt.broker.embedded import BrokerThread
from tests.broker.transactions_support import read_values, start_txn_broker
from tests.kafka_helpers import create_topic


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = start_txn_broker(tmp_path / "broker")
    yield b
    b.stop()


def producer(bootstrap: str, txn_id: str, **extra: object) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, **extra})
    p.init_transactions(15)
    return p


def test_committed_data_is_read_and_aborted_data_never(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "t")
    p = producer(broker.bootstrap, "tx-commit-abort")
    p.begin_transaction()
    for i in range(3):
        p.produce("t", key=b"k", value=f"c{i}".encode())
    p.commit_transaction(15)
    p.begin_transaction()
    for i in range(3):
        p.produce("t", key=b"k", value=f"a{i}".encode())
    p.flush(10)
    p.abort_transaction(15)
    p.begin_transaction()
    p.produce("t", value=b"c3")
    p.commit_transaction(15)
    committed = read_values(broker.bootstrap, "t", "read_committed", expect=4)
    assert committed == [b"c0", b"c1", b"c2", b"c3"]
    everything = read_values(broker.bootstrap, "t", "read_uncommitted", expect=7)
    assert everything == [b"c0", b"c1", b"c2", b"a0", b"a1", b"a2", b"c3"]


def test_read_committed_stops_at_an_open_transaction(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "t")
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce("t", value=b"before")
    plain.flush(10)
    p = producer(broker.bootstrap, "tx-open")
    p.begin_transaction()
    p.produce("t", value=b"in-txn")
    p.flush(10)
    plain.produce("t", value=b"after")
    plain.flush(10)
    assert read_values(broker.bootstrap, "t", "read_committed", timeout_s=3) == [b"before"]
    assert read_values(broker.bootstrap, "t", "read_uncommitted", expect=3) == [
        b"before",
        b"in-txn",
        b"after",
    ]
    p.commit_transaction(15)
    assert read_values(broker.bootstrap, "t", "read_committed", expect=3) == [
        b"before",
        b"in-txn",
        b"after",
    ]


def _group_consumer(bootstrap: str, group: str, instance: str | None = None) -> Consumer:
    conf: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
        "session.timeout.ms": 6000,
    }
    if instance is not None:
        conf["group.instance.id"] = instance
    c = Consumer(conf)
    c.subscribe(["in"])
    return c


def _poll_until_assigned(c: Consumer, want: int = 1, timeout_s: float = 20) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and len(got) < want:
        msg = c.poll(0.2)
        if msg is not None and not msg.error():
            got.append(msg.value())
    return got


def test_send_offsets_commits_with_the_transaction_only(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "in")
    create_topic(broker.bootstrap, "out")
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(4):
        plain.produce("in", value=f"m{i}".encode())
    plain.flush(10)
    consumer = _group_consumer(broker.bootstrap, "ctp")
    assert len(_poll_until_assigned(consumer, 4)) == 4
    p = producer(broker.bootstrap, "tx-ctp")
    # Aborted: neither the output nor the offsets become visible.
    p.begin_transaction()
    p.produce("out", value=b"x")
    p.send_offsets_to_transaction(
        [TopicPartition("in", 0, 2)], consumer.consumer_group_metadata(), 15
    )
    p.abort_transaction(15)
    assert consumer.committed([TopicPartition("in", 0)], 10)[0].offset < 0
    # Committed: both become visible together.
    p.begin_transaction()
    p.produce("out", value=b"y")
    p.send_offsets_to_transaction(
        [TopicPartition("in", 0, 4)], consumer.consumer_group_metadata(), 15
    )
    p.commit_transaction(15)
    deadline = time.monotonic() + 10
    while consumer.committed([TopicPartition("in", 0)], 10)[0].offset != 4:
        assert time.monotonic() < deadline, "transactional offsets never became committed"
        time.sleep(0.1)
    assert read_values(broker.bootstrap, "out", "read_committed", expect=1) == [b"y"]
    consumer.close()


def test_a_second_producer_fences_the_zombie(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "t")
    zombie = producer(broker.bootstrap, "tx-zombie")
    zombie.begin_transaction()
    zombie.produce("t", value=b"zombie")
    zombie.flush(10)
    successor = producer(broker.bootstrap, "tx-zombie")  # fences and aborts the zombie's txn
    successor.begin_transaction()
    successor.produce("t", value=b"successor")
    successor.commit_transaction(15)
    with pytest.raises(KafkaException) as excinfo:
        zombie.commit_transaction(15)
    error = excinfo.value.args[0]
    assert error.fatal() or error.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED)
    assert read_values(broker.bootstrap, "t", "read_committed", expect=1) == [b"successor"]


def test_transaction_timeout_aborts_and_the_producer_learns_it(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "t")
    p = producer(broker.bootstrap, "tx-timeout", **{"transaction.timeout.ms": 1500})
    p.begin_transaction()
    p.produce("t", value=b"late")
    p.flush(10)
    time.sleep(3)  # the broker's scan (every 300 ms) aborts it after 1.5 s
    assert read_values(broker.bootstrap, "t", "read_committed", timeout_s=2) == []
    with pytest.raises(KafkaException) as excinfo:
        p.commit_transaction(15)
    error = excinfo.value.args[0]
    assert error.fatal() or error.txn_requires_abort()
    # Nothing was committed; the id is usable again by a new producer.
    again = producer(broker.bootstrap, "tx-timeout")
    again.begin_transaction()
    again.produce("t", value=b"fresh")
    again.commit_transaction(15)
    assert read_values(broker.bootstrap, "t", "read_committed", expect=1) == [b"fresh"]


def test_a_fenced_static_member_cannot_commit_offsets(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "in")
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce("in", value=b"m0")
    plain.flush(10)
    old = _group_consumer(broker.bootstrap, "static", "s1")
    assert _poll_until_assigned(old, 1) == [b"m0"]
    stale_metadata = old.consumer_group_metadata()
    new = _group_consumer(broker.bootstrap, "static", "s1")  # same instance: replaces `old`
    _poll_until_assigned(new, 1, timeout_s=8)
    p = producer(broker.bootstrap, "tx-static")
    p.begin_transaction()
    with pytest.raises(KafkaException) as excinfo:
        p.send_offsets_to_transaction([TopicPartition("in", 0, 1)], stale_metadata, 15)
    assert excinfo.value.args[0].code() == KafkaError.FENCED_INSTANCE_ID
    p.abort_transaction(15)
    p.begin_transaction()
    p.send_offsets_to_transaction([TopicPartition("in", 0, 1)], new.consumer_group_metadata(), 15)
    p.commit_transaction(15)
    deadline = time.monotonic() + 10
    while new.committed([TopicPartition("in", 0)], 10)[0].offset != 1:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    new.close()
    old.close()
