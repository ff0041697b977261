"""Coordinator loads survive bad records (issue 29, item 3): garbage written into
``__consumer_offsets`` and ``__transaction_state`` (3-byte values, truncated values, unknown
versions, undecodable keys) is logged and skipped at load; the broker starts, and the good
groups' offsets and transactions are intact. Written through the log layer (clients may not
write internal topics), as a forged or damaged record would sit on disk."""

from __future__ import annotations

import logging
import struct
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from streamrt.broker.config import BrokerConfig
from streamrt.broker.coordination.partitioning import partition_for
from streamrt.broker.embedded import BrokerThread
from streamrt.broker.log import LogManager
from streamrt.broker.log.codec import NewRecord, build_batch
from streamrt.wire.api_keys import ApiKey
from tests.broker.transactions_support import (
    TXN_OVERRIDES,
    raw_request,
    start_txn_broker,
)
from tests.kafka_helpers import create_topic

GROUP, TXN_ID, TOPIC = "good-group", "good-txn", "data"


def _string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def _offset_key(group: str, topic: str, partition: int) -> bytes:
    return struct.pack(">h", 1) + _string(group) + _string(topic) + struct.pack(">i", partition)


def _group_key(group: str) -> bytes:
    return struct.pack(">h", 2) + _string(group)


def _txn_key(txn_id: str) -> bytes:
    return struct.pack(">h", 0) + _string(txn_id)


def _records(pairs: list[tuple[bytes, bytes]]) -> bytes:
    """One batch holding ``pairs`` (key, value) as the coordinator's own records."""
    now = int(time.time() * 1000)
    return bytes(build_batch(NewRecord(i, now, k, v) for i, (k, v) in enumerate(pairs)))


def _garbage_offsets() -> list[tuple[bytes, bytes]]:
    return [
        (b"\x00\x01\x02", b"\x00\x01\x02"),  # 3-byte key and value
        (_offset_key(GROUP, TOPIC, 0), b"\x00\x01\x02"),  # a 3-byte value of a known key
        (_offset_key(GROUP, TOPIC, 0), struct.pack(">hq", 3, 7)),  # a truncated value
        (_offset_key("other", TOPIC, 0), struct.pack(">h", 99) + b"\x00" * 40),  # unknown ver.
        (_group_key(GROUP), b"\xff" * 5),  # group metadata that does not decode
        (struct.pack(">h", 1) + b"\x7f\xff", b"x"),  # a key string longer than the key
    ]


def _garbage_txns() -> list[tuple[bytes, bytes]]:
    return [
        (_txn_key(TXN_ID), b"\x00\x01\x02"),  # issue 29's 3-byte value
        (_txn_key(TXN_ID), struct.pack(">hq", 1, 5)),  # truncated
        (_txn_key("bad"), struct.pack(">h", 42) + b"\x00" * 30),  # unknown value version
        (b"\x00", b"\x00\x00"),  # 1-byte key
    ]


def _write_garbage(data_dir: Path) -> None:
    config = BrokerConfig(TXN_OVERRIDES)
    logs = LogManager(data_dir, config)
    logs.load()
    now = int(time.time() * 1000)
    try:
        offsets_p = partition_for(GROUP, int(TXN_OVERRIDES["offsets.topic.num.partitions"]))
        txn_p = partition_for(TXN_ID, int(TXN_OVERRIDES["transaction.state.log.num.partitions"]))
        logs.log("__consumer_offsets", offsets_p).append(_records(_garbage_offsets()), now)
        logs.log("__transaction_state", txn_p).append(_records(_garbage_txns()), now)
        logs.log("__transaction_state", (txn_p + 1) % 4).append(_records(_garbage_txns()), now)
    finally:
        logs.close()


def _seed(bootstrap: str) -> None:
    create_topic(bootstrap, TOPIC)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": TXN_ID})
    producer.init_transactions(10)
    producer.begin_transaction()
    producer.produce(TOPIC, b"v", partition=0)
    producer.commit_transaction(10)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    consumer.commit(offsets=[TopicPartition(TOPIC, 0, 1)], asynchronous=False)
    consumer.close()


def _committed(bootstrap: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    try:
        (tp,) = consumer.committed([TopicPartition(TOPIC, 0)], timeout=10)
        return int(tp.offset)
    finally:
        consumer.close()


def _transactions(bootstrap: str) -> dict[str, int]:
    response = raw_request(bootstrap, ApiKey.LIST_TRANSACTIONS, 0)
    return {t.transactional_id: int(t.producer_id) for t in response.transaction_states}


def test_broker_starts_and_keeps_good_state_past_bad_coordinator_records(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    broker = start_txn_broker(tmp_path)
    try:
        _seed(broker.bootstrap)
        before = _transactions(broker.bootstrap)
        assert TXN_ID in before and _committed(broker.bootstrap) == 1
    finally:
        broker.stop()
    _write_garbage(tmp_path)
    caplog.set_level(logging.WARNING, logger="streamrt.broker.coordination.loader")
    broker = BrokerThread(tmp_path, TXN_OVERRIDES).start()
    try:
        assert _committed(broker.bootstrap) == 1
        assert _transactions(broker.bootstrap) == before
        skipped = [r for r in caplog.records if "cannot be loaded" in r.getMessage()]
        assert len(skipped) >= 5
        where = {(r.fields["topic"], r.fields["partition"]) for r in skipped}  # type: ignore[attr-defined]
        assert {t for t, _ in where} == {"__consumer_offsets", "__transaction_state"}
        assert all(r.fields["offset"] >= 0 for r in skipped)  # type: ignore[attr-defined]
        # the coordinators still work: a new commit and a new transaction
        producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": TXN_ID})
        producer.init_transactions(10)
        producer.begin_transaction()
        producer.produce(TOPIC, b"w", partition=0)
        producer.commit_transaction(10)
    finally:
        broker.stop()
