"""The restore consumer on a real broker, through the interface restoration and standbys use.

librdkafka's restore consumer (the stream threads' one) restores a store from the beginning of
its changelog and from a checkpoint, skips aborted records and transaction markers under
read_committed (the restore ends at the last stable offset), and keeps a standby following its
changelog; the thread's client factory builds it with the ``restore.consumer.`` settings.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import confluent_kafka
import pytest
from aiokafka import AIOKafkaProducer

from streamrt.admin.client import AdminClient
from streamrt.admin.connection import AdminConnectionError
from streamrt.runtime import App
from streamrt.runtime import client_settings as cs
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.engine.clients.clients import ClientFactory
from streamrt.runtime.engine.clients.end_offsets import OffsetsConsumer
from streamrt.runtime.engine.clients.rdkafka_restore import (
    LibrdkafkaRestoreConsumer,
    librdkafka_restore_config,
)
from streamrt.runtime.engine.env import ThreadEnv
from streamrt.runtime.engine.restore.restore import ChangelogRestorer
from streamrt.runtime.engine.restore.standby import StandbyTask, StandbyUpdater
from streamrt.runtime.engine.restore_consumer import RestoreConsumer
from streamrt.runtime.graph.topology import changelog_topic
from streamrt.state import ROCKS_DB, StateManager, TopicPartition
from tests.kafka_helpers import create_topic, produce

APP = "rc"
EOS = {"processing.guarantee": "exactly_once_v2"}
KINDS = ("librdkafka",)  # the one implementation; the tests keep the parameter


def restore_consumer(
    kind: str, bootstrap: str, read_committed: bool = False, **settings: str
) -> RestoreConsumer:
    """The restore consumer a stream thread builds."""
    assert kind == "librdkafka"
    cfg = StreamsConfig.from_mapping(
        {"application.id": APP, "bootstrap.servers": bootstrap, **settings}
    )
    config, max_records = librdkafka_restore_config(
        cfg.client_config(), "rc-restore", APP, read_committed
    )
    return LibrdkafkaRestoreConsumer(config, max_records)


def offsets_consumer(bootstrap: str, read_committed: bool = False) -> OffsetsConsumer:
    """The thread's offsets consumer (streamrt's admin client, the runtime's TopicPartition)."""
    return OffsetsConsumer(AdminClient(bootstrap), read_committed)


def task_state(tmp_path: Path, task_id: str, changelog: TopicPartition) -> StateManager:
    state = StateManager(task_id, tmp_path / task_id)
    state.register("s", changelog, ROCKS_DB)
    state.open()
    return state


def contents(state: StateManager) -> dict[bytes, bytes]:
    return {bytes(k): bytes(v) for k, v in state.store("s").items()}


async def restore_all(restorer: ChangelogRestorer, timeout_s: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while restorer.restoring:
        assert loop.time() < deadline, f"still restoring: {restorer.progress()}"
        await restorer.step()


@contextlib.asynccontextmanager
async def started(
    kind: str, bootstrap: str, read_committed: bool = False, **settings: str
) -> AsyncIterator[tuple[RestoreConsumer, OffsetsConsumer]]:
    """A started restore consumer of ``kind`` and the offsets consumer (the admin client)."""
    consumer = restore_consumer(kind, bootstrap, read_committed, **settings)
    offsets = offsets_consumer(bootstrap, read_committed)
    await consumer.start()
    await offsets.start()
    try:
        yield consumer, offsets
    finally:
        await consumer.stop()
        await offsets.stop()


@pytest.mark.parametrize("kind", KINDS)
def test_two_stores_restore_their_whole_changelogs_from_the_beginning(
    kind: str, broker, tmp_path: Path
) -> None:
    """Stores with no position restore every record of their partition, one task added while
    the other restores (the assignment changes under the first one's fetch)."""
    topic = "rc-full"
    create_topic(broker.bootstrap, topic, 2)
    records = [(f"k{i % 300}".encode(), f"v{i}".encode() * 50) for i in range(6000)]
    produce(broker.bootstrap, topic, records, partitions=[i % 2 for i in range(len(records))])
    expected = [
        {k: v for i, (k, v) in enumerate(records) if i % 2 == p} for p in range(2)
    ]  # the last value per key of each partition
    states = [task_state(tmp_path, f"0_{p}", TopicPartition(topic, p)) for p in range(2)]

    async def go() -> int:
        async with started(kind, broker.bootstrap) as (consumer, offsets):
            restorer = ChangelogRestorer(consumer, "t", offsets=offsets)
            assert not await restorer.add(states[0])
            await restorer.step()
            assert not await restorer.add(states[1])
            await restore_all(restorer)
            return restorer.stats.records

    assert asyncio.run(go()) == len(records)
    for p, state in enumerate(states):
        assert contents(state) == expected[p]
        assert state.position(TopicPartition(topic, p)) == len(records) // 2
        state.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_changelog_fetched_to_its_end_before_the_first_step_is_applied_whole(
    kind: str, broker, tmp_path: Path
) -> None:
    """One poll hands over every record and the end-of-partition event after them: the
    records are applied, then the position moves to the end."""
    topic = "rc-prefetched"
    create_topic(broker.bootstrap, topic, 1)
    records = [(f"k{i}".encode(), b"v" * 100) for i in range(3000)]
    produce(broker.bootstrap, topic, records)
    tp = TopicPartition(topic, 0)
    state = task_state(tmp_path, "0_0", tp)

    async def go() -> int:
        async with started(kind, broker.bootstrap) as (consumer, offsets):
            restorer = ChangelogRestorer(consumer, "t", offsets=offsets)
            assert not await restorer.add(state)
            await asyncio.sleep(1.0)  # the consumer fetches it all meanwhile
            await restore_all(restorer)
            return restorer.stats.records

    assert asyncio.run(go()) == len(records)
    assert len(contents(state)) == len(records) and state.position(tp) == len(records)
    state.close()


def test_a_large_changelog_partition_is_written_while_the_rest_is_fetched(
    broker, tmp_path: Path
) -> None:
    """Kafka's 1 MiB per partition per fetch (the restore consumer's default): 12 MB of one
    changelog partition reach the store over several steps, the first while the rest is still
    being fetched. librdkafka hands a fetch over only once whole, so with the 16 MiB of before
    the whole partition came in one step after ~0.2 s of idle waiting, and writing never
    overlapped fetching."""
    topic = "rc-large"
    create_topic(broker.bootstrap, topic, 1)
    value = b"p" * 2400  # a session profile's size
    records = [(f"u{i:05d}".encode(), value) for i in range(5000)]  # 12 MB, under 16 MiB
    produce(broker.bootstrap, topic, records)
    tp = TopicPartition(topic, 0)
    state = task_state(tmp_path, "0_0", tp)

    async def go() -> list[int]:
        async with started("librdkafka", broker.bootstrap) as (consumer, offsets):
            restorer = ChangelogRestorer(consumer, "t", offsets=offsets)
            assert not await restorer.add(state)
            steps: list[int] = []
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 60
            while restorer.restoring:
                assert loop.time() < deadline, f"still restoring: {restorer.progress()}"
                before = restorer.stats.records
                await restorer.step()
                if restorer.stats.records > before:
                    steps.append(restorer.stats.records - before)
            return steps

    steps = asyncio.run(go())
    assert sum(steps) == len(records)
    # ~12 fetches of 1 MiB: at least two steps even if the thread is starved for most of them
    assert len(steps) >= 2, steps
    assert len(contents(state)) == len(records) and state.position(tp) == len(records)
    state.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_store_resumes_from_its_position(kind: str, broker, tmp_path: Path) -> None:
    topic = "rc-tail"
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, [(f"k{i}".encode(), b"old") for i in range(10)])
    tp = TopicPartition(topic, 0)
    state = task_state(tmp_path, "0_0", tp)
    state.restore_batch(tp, [(f"k{i}".encode(), b"old") for i in range(6)], 6)
    produce(broker.bootstrap, topic, [(b"k0", b"new")])

    async def go() -> int:
        async with started(kind, broker.bootstrap) as (consumer, offsets):
            restorer = ChangelogRestorer(consumer, "t", offsets=offsets)
            assert not await restorer.add(state)
            await restore_all(restorer)
            return restorer.stats.records

    assert asyncio.run(go()) == 5  # offsets 6..10 only
    assert contents(state)[b"k0"] == b"new" and len(contents(state)) == 10
    assert state.position(tp) == 11
    state.close()


def _transactions(bootstrap: str, topic: str) -> None:
    """committed a=1 b=1 | aborted a=X c=X | committed a=2 | aborted d=X: the log ends with an
    abort marker after records a read_committed reader never sees."""

    async def go() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="rc-txn")
        await producer.start()
        try:
            for commit, pairs in (
                (True, [(b"a", b"1"), (b"b", b"1")]),
                (False, [(b"a", b"X"), (b"c", b"X")]),
                (True, [(b"a", b"2")]),
                (False, [(b"d", b"X")]),
            ):
                await producer.begin_transaction()
                for key, value in pairs:
                    await producer.send_and_wait(topic, value, key=key, partition=0)
                if commit:
                    await producer.commit_transaction()
                else:
                    await producer.abort_transaction()
        finally:
            await producer.stop()

    asyncio.run(go())


async def _restore_committed(
    kind: str, bootstrap: str, state: StateManager, **settings: str
) -> int:
    """Restore ``state`` under read_committed within 10 s; the records applied."""
    async with started(kind, bootstrap, True, **settings) as (consumer, offsets):
        restorer = ChangelogRestorer(consumer, "t", offsets=offsets)
        assert not await restorer.add(state)
        await restore_all(restorer, timeout_s=10)
        return restorer.stats.records


@pytest.mark.parametrize("kind", KINDS)
def test_read_committed_restores_committed_records_and_ends_past_the_markers(
    kind: str, broker, tmp_path: Path
) -> None:
    topic = "rc-txn"
    create_topic(broker.bootstrap, topic, 1)
    _transactions(broker.bootstrap, topic)
    tp = TopicPartition(topic, 0)
    state = task_state(tmp_path, "0_0", tp)

    assert asyncio.run(_restore_committed(kind, broker.bootstrap, state)) == 3
    assert contents(state) == {b"a": b"2", b"b": b"1"}
    # 3 committed + 3 aborted records + 4 markers: the store is complete at the log's end
    assert state.position(tp) == 10
    state.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_tail_of_aborted_records_ends_without_waiting_for_an_empty_fetch(
    kind: str, broker, tmp_path: Path
) -> None:
    """What a SIGKILL under exactly_once_v2 leaves: the store checkpointed after the last
    commit, the changelog ending with an aborted transaction. Nothing is applied and the
    restore ends once that tail is fetched. The broker holds an empty fetch for
    ``fetch.max.wait.ms`` (20 s here), so a restore that waited for it (librdkafka's
    partition-EOF) would outlast the 10 s allowed."""
    topic = "rc-txn-tail"
    create_topic(broker.bootstrap, topic, 1)
    _transactions(broker.bootstrap, topic)
    tp = TopicPartition(topic, 0)
    state = task_state(tmp_path, "0_0", tp)
    # a=1 b=1 marker | a=X c=X marker | a=2 marker: the store holds offsets 0..7
    state.restore_batch(tp, [(b"a", b"2"), (b"b", b"1")], 8)

    wait = {"restore.consumer.fetch.max.wait.ms": "20000"}
    assert asyncio.run(_restore_committed(kind, broker.bootstrap, state, **wait)) == 0
    assert contents(state) == {b"a": b"2", b"b": b"1"}
    assert state.position(tp) == 10
    state.close()


@pytest.mark.parametrize("kind", KINDS)
def test_a_standby_follows_its_changelog(kind: str, broker, tmp_path: Path) -> None:
    app = App({"application.id": APP})
    app.stream("rc-in", key_serde="str", value_serde="str").group_by_key().count(store="counts")
    (sub,) = app.topology.subtopologies(APP)
    topic = changelog_topic(APP, "counts")
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, [(f"k{i}".encode(), b"1") for i in range(50)])

    async def until(updater: StandbyUpdater, predicate: Callable[[], bool]) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while not predicate():
            assert loop.time() < deadline, f"standby lags: {updater.lags()}"
            await updater.step(timeout_ms=50)

    async def go() -> None:
        async with started(kind, broker.bootstrap) as (consumer, offsets):
            updater = StandbyUpdater(
                consumer,
                lambda task_id: StandbyTask(task_id, sub, app.topology, APP, tmp_path),
                lambda: False,
                "t",
                offsets=offsets,
            )
            await follow(updater)

    async def follow(updater: StandbyUpdater) -> None:
        await updater.update(["0_0"])
        assert updater.lags() == {"0_0": 50}
        await until(updater, lambda: updater.records_applied == 50)
        # the active goes on writing: the standby follows
        await asyncio.to_thread(produce, broker.bootstrap, topic, [(b"k0", b"2"), (b"late", b"1")])
        await until(updater, lambda: updater.records_applied == 52 and updater.lags() == {"0_0": 0})
        task = updater.tasks["0_0"]
        store = task.state.store("counts")
        assert store.get(b"k0") is not None and store.get(b"late") is not None
        assert task.state.position(TopicPartition(topic, 0)) == 52
        updater.close_all()

    asyncio.run(go())


def _factory(settings: dict[str, str]) -> ClientFactory:
    app = App({"application.id": APP})
    app.stream("rc-in", key_serde="str").group_by_key().count(store="counts")
    config = StreamsConfig.from_mapping({"application.id": APP, **settings})
    env = ThreadEnv(
        config,
        app.topology,
        tuple(app.topology.subtopologies(APP)),
        "web-1",
        True,
        lambda *_a, **_kv: None,
    )
    txn = f"{APP}-web-1-1" if config.exactly_once else None
    no_metadata: Any = lambda: None  # noqa: E731  (never asked: nothing is produced)
    return ClientFactory(env, "rc-thread-1", "web-1-1", txn, no_metadata)


def test_the_thread_builds_librdkafkas_restore_consumer() -> None:
    async def kinds() -> list[type]:
        return [type(_factory(s).restore_consumer()) for s in ({}, EOS)]

    assert asyncio.run(kinds()) == [LibrdkafkaRestoreConsumer, LibrdkafkaRestoreConsumer]


def test_restore_settings_reach_librdkafka_and_exactly_once_reads_committed() -> None:
    cfg = StreamsConfig.from_mapping(
        {
            "application.id": APP,
            "restore.consumer.fetch.max.bytes": "7000000",
            "consumer.fetch.min.bytes": "3",  # every consumer's
            "main.consumer.max.partition.fetch.bytes": "1000",  # not the restore consumer's
            "restore.consumer.max.poll.records": "777",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "alice",
            "sasl.password": "alice-secret",
            "restore.consumer.sasl.username": "carol",
        }
    )
    config, max_records = librdkafka_restore_config(cfg.client_config(), "c", APP, False)
    assert config["fetch.max.bytes"] == 7000000 and config["fetch.min.bytes"] == 3
    assert (
        config["max.partition.fetch.bytes"]
        == (cs.RESTORE_CONSUMER_DEFAULTS["max_partition_fetch_bytes"])
    )
    assert max_records == 777 and config["auto.offset.reset"] == "earliest"
    assert config["isolation.level"] == "read_uncommitted"
    assert config["enable.auto.commit"] is False and config["enable.partition.eof"] is True
    assert config["security.protocol"] == "sasl_ssl"
    assert config["sasl.mechanisms"] == "SCRAM-SHA-512"
    assert (config["sasl.username"], config["sasl.password"]) == ("carol", "alice-secret")
    confluent_kafka.Consumer(config).close()  # librdkafka checks every name and value
    eos = librdkafka_restore_config(cfg.client_config(), "c", APP, True)[0]
    assert eos["isolation.level"] == "read_committed"
    restore = _factory({"processing.guarantee": "exactly_once_v2"}).restore_consumer()
    assert isinstance(restore, LibrdkafkaRestoreConsumer)
    assert restore.config["isolation.level"] == "read_committed"


class _LeaderDownFor:
    """The offsets consumer's answers while a changelog's leader is down: a refused connection
    for the first ``failures`` calls (on a 3-broker Apache Kafka while one broker restarted),
    then the real consumer's answer."""

    def __init__(self, offsets: OffsetsConsumer, failures: int) -> None:
        self.offsets = offsets
        self.failures = failures
        self.calls = 0

    async def end_offsets(self, partitions: list[Any]) -> dict[Any, int]:
        self.calls += 1
        if self.calls <= self.failures:
            raise AdminConnectionError("cannot connect to 127.0.0.1:1: Connection refused")
        ends: dict[Any, int] = await self.offsets.end_offsets(partitions)
        return ends


def test_a_restore_check_waits_out_a_leader_that_is_down(broker, tmp_path: Path) -> None:
    """The restore check retries a retriable ListOffsets error instead of failing the thread
    (it killed the instance in the bounce test), and then restores as usual."""
    topic = "rc-leader-down"
    create_topic(broker.bootstrap, topic, 1)
    records = [(f"k{i}".encode(), b"v") for i in range(50)]
    produce(broker.bootstrap, topic, records)
    state = task_state(tmp_path, "0_0", TopicPartition(topic, 0))

    async def go() -> int:
        async with started("librdkafka", broker.bootstrap) as (consumer, offsets):
            down = _LeaderDownFor(offsets, failures=3)
            restorer = ChangelogRestorer(consumer, "t", offsets=down)
            assert not await restorer.add(state)
            assert down.calls == 4
            await restore_all(restorer)
            return restorer.stats.records

    assert asyncio.run(go()) == len(records)
    state.close()
