"""A topic with far more partitions than ``ulimit -n`` (issue 42): the broker keeps serving and
restarts, because segment files are opened lazily and closed by an LRU (``log.max.open.files``).
"""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker import cli_broker

_PARTITIONS = 2000
_NOFILE = 256


def _produce_one_each(bootstrap: str, tag: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 50})
    errors: list[object] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(err)

    for p in range(_PARTITIONS):
        producer.produce("wide", value=f"{tag}-{p}".encode(), partition=p, on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(120) == 0
    assert errors == []


def _read_all(bootstrap: str, expected: int) -> dict[int, list[bytes]]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition("wide", p, 0) for p in range(_PARTITIONS)])
    got: dict[int, list[bytes]] = {}
    count = 0
    deadline = time.monotonic() + 180
    try:
        while count < expected and time.monotonic() < deadline:
            for msg in consumer.consume(1000, timeout=1):
                assert msg.error() is None, msg.error()
                got.setdefault(msg.partition(), []).append(msg.value())
                count += 1
    finally:
        consumer.close()
    return got


def test_partitions_beyond_the_descriptor_limit_serve_and_restart(tmp_path: Path) -> None:
    data_dir, log = tmp_path / "broker", tmp_path / "broker.log"
    port = cli_broker.free_port()
    bootstrap = f"127.0.0.1:{port}"
    proc = cli_broker.start(data_dir, port, nofile=_NOFILE, stderr=log)
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("wide", _PARTITIONS, 1)])["wide"].result(120)
        _produce_one_each(bootstrap, "a")
        # SIGKILL, not SIGTERM: a clean stop of 2000 logs is ~12,000 fsyncs (many seconds on a
        # busy disk), and recovering every partition after a crash is the harder start.
        proc.kill()
        proc.wait(30)
        proc = cli_broker.start(data_dir, port, nofile=_NOFILE, stderr=log)
        _produce_one_each(bootstrap, "b")
        got = _read_all(bootstrap, 2 * _PARTITIONS)
        assert got == {p: [f"a-{p}".encode(), f"b-{p}".encode()] for p in range(_PARTITIONS)}
    finally:
        proc.kill()
        proc.wait(30)
    assert "Too many open files" not in log.read_text()
