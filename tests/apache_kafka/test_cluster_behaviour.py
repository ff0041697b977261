"""Distributed behaviour only a real cluster shows (3 Apache Kafka nodes, RF 3,
min.insync.replicas=2): a rolling bounce of the app, the group coordinator's broker killed
mid-stream, and a broker restart under acks=all load.

These tests create every topic of the app first, with the cluster's default replication factor
3, so each starts from the same layout; the runtime's own creation of internal topics with the
brokers' default replication factor is tested in ``test_internal_topics_replication.py``.
"""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from streamrt.deploy.event_tail import EventTail
from streamrt.deploy.report import count_rebalances, count_restores
from streamrt.dev.apache_kafka import ApacheKafka
from streamrt.events import events_topic
from streamrt.runtime import App
from streamrt.runtime.graph.topology import changelog_topic
from tests.apache_kafka.cluster_app import build
from tests.apache_kafka.support import create_topic
from tests.kafka_helpers import latest_by_key, read_all, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.kafka]

SESSION = {
    "session.timeout.ms": "10000",
    "heartbeat.interval.ms": "500",
    "commit.interval.ms": "200",
}
KEYS = 16


def _topics(bootstrap: str, app_id: str, partitions: int) -> None:
    create_topic(bootstrap, f"{app_id}-in", partitions)
    create_topic(bootstrap, f"{app_id}-out", partitions)
    create_topic(
        bootstrap,
        changelog_topic(app_id, "counts"),
        partitions,
        config={"cleanup.policy": "compact"},
    )
    create_topic(bootstrap, events_topic(app_id), 1)


def _counts(bootstrap: str, app_id: str) -> dict[str, int]:
    return {
        k.decode(): struct.unpack(">q", v)[0]
        for k, v in latest_by_key(read_all(bootstrap, f"{app_id}-out")).items()
    }


def _produce(bootstrap: str, topic: str, n: int, start: int = 0) -> Counter[str]:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    sent: Counter[str] = Counter()
    for i in range(start, start + n):
        key = f"k{i % KEYS}"
        producer.produce(topic, key=key, value=b"e")
        sent[key] += 1
    assert producer.flush(30) == 0
    return sent


def _settings(bootstrap: str, state: Path, instance: str) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "state.dir": str(state),
        "group.instance.id": instance,
        "num.stream.threads": "1",
        **SESSION,
    }


def _run_process(bootstrap: str, app_id: str, state: Path, instance: str) -> subprocess.Popen[str]:
    args = [
        sys.executable,
        "-m",
        "streamrt.cli",
        "run",
        "tests.apache_kafka.cluster_app:app",
        "--instance-id",
        instance,
        "--bootstrap-server",
        bootstrap,
        "--state-dir",
        str(state),
    ]
    for key, value in SESSION.items():
        args += ["--config", f"{key}={value}"]
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root, "CLUSTER_APP_ID": app_id}
    state.mkdir(parents=True, exist_ok=True)
    with open(state.parent / f"{instance}.log", "a") as log:  # kept for the failure report
        return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, text=True, env=env)


def _counts_match(bootstrap: str, app_id: str, sent: Counter[str]) -> bool | str:
    """True when the latest count per key is what was sent; else a printable difference."""
    got = _counts(bootstrap, app_id)
    if got == sent:
        return True
    return str(
        {
            k: (got.get(k), sent.get(k))
            for k in sorted(set(got) | set(sent))
            if got.get(k) != sent.get(k)
        }
    )


def test_rolling_bounce_on_three_brokers_has_no_rebalance_and_restores_nothing(
    apache_kafka_cluster: ApacheKafka, tmp_path: Path
) -> None:
    bootstrap, app_id = apache_kafka_cluster.bootstrap, f"roll-{uuid.uuid4().hex[:6]}"
    _topics(bootstrap, app_id, 4)
    sent = _produce(bootstrap, f"{app_id}-in", 200)
    instances = {i: _run_process(bootstrap, app_id, tmp_path / i, i) for i in ("i-a", "i-b")}
    try:
        with EventTail(bootstrap, app_id) as tail:
            for p in instances.values():
                wait_until(lambda p=p: tail.is_running(p.pid, 1), 90, "instance running")
            wait_until(lambda: _counts(bootstrap, app_id) == sent, 90, "first counts")
            time.sleep(1)  # let the first commits land before the bounce window opens
            since = time.time()
            for name in list(instances):
                old = instances[name]
                old.send_signal(signal.SIGTERM)
                assert old.wait(60) == 0
                instances[name] = _run_process(bootstrap, app_id, tmp_path / name, name)
                new_pid = instances[name].pid
                wait_until(lambda pid=new_pid: tail.is_running(pid, 1), 90, f"{name} back")
            sent += _produce(bootstrap, f"{app_id}-in", 100, 200)
            try:
                wait_until(lambda: _counts_match(bootstrap, app_id, sent) is True, 90, "counts")
            except AssertionError:
                logs = {i: (tmp_path / f"{i}.log").read_text()[-3000:] for i in instances}
                raise AssertionError(
                    f"counts after bounce (got, sent): {_counts_match(bootstrap, app_id, sent)}"
                    f"\nlogs: {logs}"
                ) from None
            rebalances, generations = count_rebalances(tail.events(), since)
            assert (rebalances, generations) == (0, [])
            assert count_restores(tail.events(), since) == (0, 0)
    finally:
        for p in instances.values():
            p.terminate()
            p.wait(60)


class _Load:
    """Produces ``k0..k15`` with acks=all (idempotent) in a thread; counts acknowledged."""

    def __init__(self, bootstrap: str, topic: str, rate: float = 200.0) -> None:
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.timeout.ms": 120000,
            }
        )
        self.topic, self.rate = topic, rate
        self.acked: Counter[str] = Counter()
        self.errors: list[str] = []
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _ack(self, err: object, msg: object) -> None:
        if err is not None:
            self.errors.append(str(err))
        else:
            self.acked[msg.key().decode()] += 1  # type: ignore[attr-defined]

    def _run(self) -> None:
        while not self._stop.is_set():
            self.producer.produce(
                self.topic, key=f"k{self.sent % KEYS}", value=b"e", on_delivery=self._ack
            )
            self.sent += 1
            self.producer.poll(0)
            time.sleep(1 / self.rate)

    def __enter__(self) -> _Load:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self.producer.flush(120)


def _coordinator(bootstrap: str, group: str, other_than: int | None = None) -> int:
    """The group coordinator's node id (one other than ``other_than``), asked until it is
    known: right after a coordinator is killed the answer is a retriable error for a while
    (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS), or still the old node."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    deadline = time.monotonic() + 90
    while True:
        try:
            description = admin.describe_consumer_groups([group])[group].result(30)
            node = int(description.coordinator.id)
            if node != other_than:
                return node
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if not (isinstance(error, KafkaError) and error.retriable()):
                raise
        if time.monotonic() > deadline:
            raise AssertionError(f"group {group}: no coordinator other than {other_than}")
        time.sleep(0.25)


def _assigned(app: App) -> list[tuple[str, int]]:
    return sorted(p for t in app.metadata_for_local_threads() for p in t.topic_partitions)


def _running(*apps: App, partitions: int) -> bool:
    total = sum(len(_assigned(a)) for a in apps)
    states = {t.state.name for a in apps for t in a.metadata_for_local_threads()}
    return total == partitions and states == {"RUNNING"}


def test_killing_the_group_coordinator_keeps_static_members_and_loses_nothing(
    apache_kafka_cluster: ApacheKafka, tmp_path: Path
) -> None:
    kafka = apache_kafka_cluster
    bootstrap, app_id, partitions = kafka.bootstrap, f"coord-{uuid.uuid4().hex[:6]}", 6
    _topics(bootstrap, app_id, partitions)
    apps = [build(app_id, _settings(bootstrap, tmp_path / i, i)) for i in ("i-a", "i-b")]
    killed: int | None = None
    for a in apps:
        a.start()
    try:
        wait_until(lambda: _running(*apps, partitions=partitions), 90, "both running")
        with _Load(bootstrap, f"{app_id}-in") as load:
            wait_until(lambda: sum(load.acked.values()) > 300, 60, "load flowing")
            before = [_assigned(a) for a in apps]
            rebalances = [t.rebalances for a in apps for t in a.metadata_for_local_threads()]
            killed = _coordinator(bootstrap, app_id)
            kafka.stop_node(killed, kill=True)
            _coordinator(bootstrap, app_id, other_than=killed)  # a new coordinator
            acked_at_kill = sum(load.acked.values())
            wait_until(
                lambda: sum(load.acked.values()) > acked_at_kill + 600, 90, "load after the kill"
            )
        assert load.errors == []
        acked = load.acked
        wait_until(
            lambda: all(_counts(bootstrap, app_id).get(k, 0) >= n for k, n in acked.items()),
            120,
            "every acknowledged record counted (at-least-once)",
        )
        assert [_assigned(a) for a in apps] == before
        assert [t.rebalances for a in apps for t in a.metadata_for_local_threads()] == rebalances
    finally:
        for a in apps:
            a.stop()
        if killed is not None:
            kafka.start_node(killed)


def test_broker_restart_under_acks_all_load_loses_and_duplicates_nothing(
    apache_kafka_cluster: ApacheKafka,
) -> None:
    kafka = apache_kafka_cluster
    bootstrap, topic = kafka.bootstrap, f"load-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, 3, config={"min.insync.replicas": "2"})
    restarted = 2
    with _Load(bootstrap, topic, rate=300) as load:
        wait_until(lambda: sum(load.acked.values()) > 300, 60, "load flowing")
        kafka.stop_node(restarted)  # controlled shutdown: leaders move, ISR shrinks to 2
        at_stop = sum(load.acked.values())
        wait_until(lambda: sum(load.acked.values()) > at_stop + 600, 60, "writes with 2 of 3")
        kafka.start_node(restarted)
        at_start = sum(load.acked.values())
        wait_until(lambda: sum(load.acked.values()) > at_start + 300, 60, "writes after restart")
    assert load.errors == []
    total = sum(load.acked.values())
    assert total == load.sent
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"check-{topic}", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(3)])
    got: list[tuple[int, int]] = []
    deadline = time.monotonic() + 60
    while len(got) < total and time.monotonic() < deadline:
        for m in consumer.consume(1000, timeout=0.5):
            assert m.error() is None, m.error()
            got.append((m.partition(), m.offset()))
    consumer.close()
    assert len(got) == total  # idempotent acks=all: every acknowledged record, once
    for p in range(3):
        offsets = [o for pp, o in got if pp == p]
        assert offsets == list(range(len(offsets)))
