"""A broker restart never loses a transaction: a decided one is completed (its markers are
written after the restart), an open one keeps holding read_committed readers until its
timeout aborts it, and pending transactional offsets stay pending."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from streamrt.broker.embedded import BrokerThread
from streamrt.broker.log import PartitionLog
from tests.broker.transactions_support import read_values, start_txn_broker
from tests.kafka_helpers import create_topic


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = start_txn_broker(tmp_path / "broker")
    yield b
    b.stop()


def _txn_state(broker: BrokerThread, txn_id: str) -> str:
    assert broker.broker is not None and broker.broker.core is not None
    txn = broker.broker.core.txn
    assert txn is not None
    return txn.coordinator.transactions[txn_id].state.wire_name


def test_open_transaction_is_aborted_after_restart_by_its_timeout(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "t")
    p = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "transactional.id": "restart-open",
            "transaction.timeout.ms": 4000,
        }
    )
    p.init_transactions(15)
    p.begin_transaction()
    p.produce("t", value=b"open")
    p.flush(10)
    started = time.monotonic()
    broker.restart()
    assert _txn_state(broker, "restart-open") == "Ongoing"
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce("t", value=b"after")
    plain.flush(10)
    if time.monotonic() - started < 3:  # still inside the timeout: the LSO is held
        assert read_values(broker.bootstrap, "t", "read_committed", timeout_s=1) == []
    assert read_values(broker.bootstrap, "t", "read_committed", expect=1, timeout_s=10) == [
        b"after"
    ]
    assert _txn_state(broker, "restart-open") == "CompleteAbort"
    with pytest.raises(KafkaException):
        p.commit_transaction(10)


def test_decided_commit_is_completed_after_restart(
    broker: BrokerThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    create_topic(broker.bootstrap, "t")
    assert broker.broker is not None and broker.broker.core is not None
    data_log = broker.broker.core.logs.log("t", 0)

    def disk_full(self: PartitionLog, *args: object, **kwargs: object) -> int:
        raise OSError(28, "No space left on device")

    # The one thing isolated: markers cannot be written before the restart.
    monkeypatch.setattr(data_log, "append_marker", disk_full.__get__(data_log))
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "restart-decided"})
    p.init_transactions(15)
    p.begin_transaction()
    p.produce("t", value=b"decided")
    p.commit_transaction(15)  # answered once PrepareCommit is durable
    assert _txn_state(broker, "restart-decided") == "PrepareCommit"
    assert read_values(broker.bootstrap, "t", "read_committed", timeout_s=1) == []
    broker.restart()  # a fresh log object: the markers now land
    assert read_values(broker.bootstrap, "t", "read_committed", expect=1) == [b"decided"]
    deadline = time.monotonic() + 10
    while _txn_state(broker, "restart-decided") != "CompleteCommit":
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _committed(bootstrap: str, group: str, isolation: str = "read_uncommitted") -> int:
    """librdkafka's read_committed consumers fetch with require_stable: while a transaction
    holds a pending offset the broker answers UNSTABLE_OFFSET_COMMIT and they retry."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": isolation})
    try:
        return int(c.committed([TopicPartition("in", 0)], 10)[0].offset)
    finally:
        c.close()


def test_pending_offsets_survive_a_restart_as_pending(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "in")
    member = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-restart"})
    metadata = member.consumer_group_metadata()  # generation -1: a simple group's commit
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "restart-offsets"})
    p.init_transactions(15)
    p.begin_transaction()
    p.send_offsets_to_transaction([TopicPartition("in", 0, 7)], metadata, 15)
    broker.restart()
    assert _committed(broker.bootstrap, "g-restart") < 0  # replayed as pending, not committed
    with pytest.raises(KafkaException):  # still unstable: require_stable keeps retrying
        _committed(broker.bootstrap, "g-restart", "read_committed")
    p.commit_transaction(20)
    deadline = time.monotonic() + 10
    while _committed(broker.bootstrap, "g-restart", "read_committed") != 7:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    member.close()


def test_committed_transactional_offsets_are_replayed_after_restart(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "in")
    member = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-replay"})
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "replay-offsets"})
    p.init_transactions(15)
    for offset, commit in ((3, True), (9, False)):
        p.begin_transaction()
        p.send_offsets_to_transaction(
            [TopicPartition("in", 0, offset)], member.consumer_group_metadata(), 15
        )
        if commit:
            p.commit_transaction(15)
        else:
            p.abort_transaction(15)
    member.close()
    broker.restart()  # the transactional batches and both markers are replayed
    assert _committed(broker.bootstrap, "g-replay", "read_committed") == 3
