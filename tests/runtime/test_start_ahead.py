"""What a stream thread starts beside its join (runtime/engine/rebalance/start_ahead.py): the
exactly-once producer's start runs while the thread joins (tasks still wait for it), and a held
hand-off successor lists its changelog ends while it waits, not at its join. Embedded broker, the
counting app in-process, librdkafka's transactional producer."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from streamrt.runtime.engine.clients.rdkafka_txn import TransactionalLibrdkafkaProducer
from streamrt.runtime.engine.rebalance.group_member import GroupMember
from streamrt.runtime.engine.rebalance.own_membership import StreamrtMembership
from tests.kafka_helpers import create_topic, produce, wait_until
from tests.runtime.counting_app import make_app
from tests.runtime.eos_support import EOS, count_updates, exactness

BROKER = {"group.min.session.timeout.ms": "1000", "group.initial.rebalance.delay.ms": "0"}
SLOW_START_S = 3.0  # far longer than a join, even on a loaded machine


def _settings(bootstrap: str, state: Path) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "state.dir": str(state),
        "group.instance.id": "solo",
        "session.timeout.ms": "8000",
        "heartbeat.interval.ms": "500",
        "commit.interval.ms": "500",
    }


def _mark_ts(events: list[dict[str, Any]], mark: str) -> float:
    found = [e["ts"] for e in events if e["type"] == "timeline" and e["fields"].get("mark") == mark]
    assert found, f"no {mark!r} timeline mark in {[e['type'] for e in events][-20:]}"
    return float(found[0])


def test_the_exactly_once_producer_starts_while_the_thread_joins(
    broker_factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the producer's start (InitProducerId) made slow, the thread still joins at once
    (its assignment arrives while the producer is starting), and its tasks open only once the
    producer is up: the output stays exact."""
    broker = broker_factory(BROKER)
    create_topic(broker.bootstrap, "events", 2)
    create_topic(broker.bootstrap, "event-counts-out", 2)
    produce(broker.bootstrap, "events", [(f"k{i % 4}".encode(), b"e") for i in range(40)])
    started_at: list[float] = []
    real_start = TransactionalLibrdkafkaProducer.start

    async def slow_start(self: TransactionalLibrdkafkaProducer) -> None:
        await asyncio.sleep(SLOW_START_S)
        await real_start(self)
        started_at.append(time.time())

    monkeypatch.setattr(TransactionalLibrdkafkaProducer, "start", slow_start)
    settings = _settings(broker.bootstrap, tmp_path / "s") | EOS
    app = make_app(settings)
    seen: list[dict[str, Any]] = []
    app.on_event(seen.append)
    app.start()
    try:
        want = {f"k{i}": 10 for i in range(4)}
        wait_until(
            lambda: exactness(count_updates(broker.bootstrap), want) == (0, 0),
            60,
            "exact counts",
        )
    finally:
        app.stop()
    assert started_at, "the transactional producer never started"
    synced, assigned = _mark_ts(seen, "synced"), _mark_ts(seen, "assigned")
    assert synced < started_at[0], (
        f"the join waited for the producer: assignment in {synced - started_at[0]:+.2f} s "
        "after the producer's start ended"
    )
    assert assigned >= started_at[0], "a task opened before the producer had started"


def test_a_held_successor_lists_the_changelog_ends_while_it_waits(
    broker_factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hand-off successor's threads (App.prestart: held) list the changelog ends before they
    are released; their first join does not list them again."""
    broker = broker_factory(BROKER)
    create_topic(broker.bootstrap, "events", 2)
    create_topic(broker.bootstrap, "event-counts-out", 2)
    produce(broker.bootstrap, "events", [(f"k{i % 4}".encode(), b"e") for i in range(40)])
    listed_at: list[float] = []
    real_refresh = GroupMember.refresh_changelog_ends

    async def spy(self: GroupMember, *args: Any) -> None:
        listed_at.append(time.time())
        await real_refresh(self, *args)

    monkeypatch.setattr(GroupMember, "refresh_changelog_ends", spy)
    app = make_app(_settings(broker.bootstrap, tmp_path / "s"))
    seen: list[dict[str, Any]] = []
    app.on_event(seen.append)
    app.prestart()
    try:
        app.start()
        want = {f"k{i}": 10 for i in range(4)}
        wait_until(lambda: _latest(broker.bootstrap) == want, 60, "counts")
    finally:
        app.stop()
    released, synced = _mark_ts(seen, "released"), _mark_ts(seen, "synced")
    assert [t for t in listed_at if t < released], "the ends were not listed while held"
    late = [round(t - released, 3) for t in listed_at if released <= t <= synced]
    assert not late, f"the first join listed the ends again, {late} s after the release"


def test_a_started_thread_lists_the_changelog_ends_beside_its_start_up(
    broker_factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thread started the ordinary way (a restart after a fault) begins its first join's
    changelog-end listing as soon as its clients are up, before it finds the group
    coordinator and is released to join; the join does not list them again."""
    broker = broker_factory(BROKER)
    create_topic(broker.bootstrap, "events", 2)
    create_topic(broker.bootstrap, "event-counts-out", 2)
    produce(broker.bootstrap, "events", [(f"k{i % 4}".encode(), b"e") for i in range(40)])
    began: list[float] = []  # the listing's first step: the source topics' partition counts
    listed: list[float] = []
    real_counts = StreamrtMembership.partition_counts
    real_refresh = GroupMember.refresh_changelog_ends

    async def counts_spy(self: StreamrtMembership, *args: Any) -> dict[str, int]:
        began.append(time.time())
        return await real_counts(self, *args)

    async def refresh_spy(self: GroupMember, *args: Any) -> None:
        listed.append(time.time())
        await real_refresh(self, *args)

    monkeypatch.setattr(StreamrtMembership, "partition_counts", counts_spy)
    monkeypatch.setattr(GroupMember, "refresh_changelog_ends", refresh_spy)
    app = make_app(_settings(broker.bootstrap, tmp_path / "s"))
    seen: list[dict[str, Any]] = []
    app.on_event(seen.append)
    app.start()
    try:
        want = {f"k{i}": 10 for i in range(4)}
        wait_until(lambda: _latest(broker.bootstrap) == want, 60, "counts")
    finally:
        app.stop()
    released, synced = _mark_ts(seen, "released"), _mark_ts(seen, "synced")
    assert began and began[0] < released, "the listing began only at the join"
    assert len([t for t in listed if t <= synced]) == 1, "the first join listed them again"


def test_a_held_successor_connects_its_transactional_producer_before_the_release(
    broker_factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under exactly_once_v2 a held thread creates its librdkafka transactional producer (and
    waits for its broker connection) while it waits; its InitProducerId, which would fence
    the running process, comes only after the release."""
    import confluent_kafka

    broker = broker_factory(BROKER)
    create_topic(broker.bootstrap, "events", 2)
    create_topic(broker.bootstrap, "event-counts-out", 2)
    produce(broker.bootstrap, "events", [(f"k{i % 4}".encode(), b"e") for i in range(40)])
    created: list[float] = []
    initialised: list[float] = []

    class SpyProducer(confluent_kafka.Producer):  # type: ignore[misc]
        def __init__(self, config: dict[str, Any]) -> None:
            super().__init__(config)
            if "transactional.id" in config:
                created.append(time.time())

        def init_transactions(self, *args: Any) -> None:
            initialised.append(time.time())
            super().init_transactions(*args)

    monkeypatch.setattr(confluent_kafka, "Producer", SpyProducer)
    settings = _settings(broker.bootstrap, tmp_path / "s") | EOS
    app = make_app(settings)
    seen: list[dict[str, Any]] = []
    app.on_event(seen.append)
    app.prestart()
    try:
        app.start()
        want = {f"k{i}": 10 for i in range(4)}
        wait_until(
            lambda: exactness(count_updates(broker.bootstrap), want) == (0, 0),
            60,
            "exact counts",
        )
    finally:
        app.stop()
    released = _mark_ts(seen, "released")
    assert created and created[0] < released, "the producer was created only after the release"
    assert initialised and initialised[0] >= released, "InitProducerId before the release"


def test_a_restarted_thread_looks_its_changelog_topics_up_beside_the_join(
    broker_factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thread that must restore (its state directory is gone) has its restore consumer look
    the changelog topic up before its assignment arrives, not on the path that opens its
    tasks (where each task's restore waited for its changelog topic's lookup)."""
    import shutil

    from streamrt.runtime.engine.clients.rdkafka_restore import LibrdkafkaRestoreConsumer

    broker = broker_factory(BROKER)
    create_topic(broker.bootstrap, "events", 2)
    create_topic(broker.bootstrap, "event-counts-out", 2)
    produce(broker.bootstrap, "events", [(f"k{i % 4}".encode(), b"e") for i in range(40)])
    settings = _settings(broker.bootstrap, tmp_path / "s")
    first = make_app(settings)
    first.start()
    try:  # the changelog gets the counts
        wait_until(lambda: _latest(broker.bootstrap) == {f"k{i}": 10 for i in range(4)}, 60, "")
    finally:
        first.stop()
    shutil.rmtree(tmp_path / "s")  # the restart restores every store from its changelog
    looked_up: list[tuple[float, list[str]]] = []
    real_describe = LibrdkafkaRestoreConsumer._describe

    def spy(self: LibrdkafkaRestoreConsumer, topics: Any) -> None:
        looked_up.append((time.time(), sorted(topics)))
        real_describe(self, topics)

    monkeypatch.setattr(LibrdkafkaRestoreConsumer, "_describe", spy)
    app = make_app(settings)
    seen: list[dict[str, Any]] = []
    app.on_event(seen.append)
    app.start()
    try:
        wait_until(lambda: any(e["type"] == "restore_complete" for e in seen), 60, "a restore")
    finally:
        app.stop()
    assigned = _mark_ts(seen, "assigned")
    changelog = "counting-event-counts-changelog"
    before = [t for t, topics in looked_up if changelog in topics and t < assigned]
    after = [round(t - assigned, 3) for t, topics in looked_up if t >= assigned]
    assert before, f"the changelog topic was not looked up ahead: {looked_up}"
    assert not after, f"a task's restore looked a topic up {after} s after the assignment"


def _latest(bootstrap: str) -> dict[str, int]:
    return {k: v[-1] for k, v in count_updates(bootstrap).items()}
