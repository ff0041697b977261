"""A compacted topic, written and read by real clients, converges to the latest value per key."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from streamrt.broker.embedded import BrokerThread


def _read_all(bootstrap: str, topic: str) -> list[tuple[int, bytes, bytes | None]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "x", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    out: list[tuple[int, bytes, bytes | None]] = []
    idle = time.monotonic()
    while time.monotonic() - idle < 1.5:
        msgs = c.consume(1000, timeout=0.3)
        if msgs:
            idle = time.monotonic()
        for m in msgs:
            assert m.error() is None, m.error()
            out.append((m.offset(), m.key(), m.value()))
    c.close()
    return out


def test_compacted_topic_keeps_latest_value_per_key(broker: BrokerThread, topic_name: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    config = {
        "cleanup.policy": "compact",
        "segment.bytes": "8192",
        "min.cleanable.dirty.ratio": "0.01",
        "delete.retention.ms": "0",
    }
    admin.create_topics([NewTopic(topic_name, 1, 1, config=config)])[topic_name].result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    errors: list[object] = []

    def send(key: bytes, value: bytes | None) -> None:
        producer.produce(
            topic_name,
            key=key,
            value=value,
            partition=0,
            on_delivery=lambda err, _msg: errors.append(err) if err else None,
        )

    latest: dict[bytes, bytes | None] = {}
    for round_ in range(30):
        for k in range(20):
            key, value = f"k{k}".encode(), f"r{round_}-k{k}".encode()
            send(key, value)
            latest[key] = value
        producer.flush(10)
    send(b"k0", None)  # tombstone: k0 must disappear, old values included
    latest[b"k0"] = None
    producer.flush(10)
    for round_ in range(30):  # other keys roll the segment that holds the tombstone
        for k in range(20, 30):
            key, value = f"k{k}".encode(), f"later-{round_}".encode() * 5
            send(key, value)
            latest[key] = value
        producer.flush(10)
    assert errors == []
    total_written = 30 * 20 + 1 + 30 * 10

    deadline = time.monotonic() + 30
    records = _read_all(broker.bootstrap, topic_name)
    while any(k == b"k0" for _, k, _ in records) and time.monotonic() < deadline:
        time.sleep(1)  # log.retention.check.interval.ms=500 in the test broker
        records = _read_all(broker.bootstrap, topic_name)
    assert len(records) < total_written / 3, "compaction did not run"
    assert not any(k == b"k0" for _, k, _ in records), "tombstoned key still readable"
    final: dict[bytes, bytes | None] = {}
    for _, key, value in records:
        final[key] = value
    expected = {k: v for k, v in latest.items() if v is not None}
    assert {k: v for k, v in final.items() if v is not None} == expected
    offsets = [o for o, _, _ in records]
    assert offsets == sorted(offsets)  # offsets of retained records are unchanged, in order
    assert records[-1][0] == total_written - 1
