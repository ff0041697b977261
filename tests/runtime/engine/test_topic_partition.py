"""One TopicPartition type inside the runtime (issue 37, item 4): the Kafka clients the stream
threads use hand the engine ``streamrt.topic_partition.TopicPartition`` and nothing else, on a
real broker (the librdkafka main and restore consumers, the aiokafka offsets consumer, streamrt's
group member); the type keys a dict that a plain tuple or aiokafka's type reads, and back."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable
from typing import Any

from aiokafka.structs import TopicPartition as AiokafkaTP

from streamrt.admin.client import AdminClient
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.engine.clients.end_offsets import OffsetsConsumer
from streamrt.runtime.engine.clients.rdkafka_consumer import (
    LibrdkafkaConsumer,
    librdkafka_consumer_config,
)
from streamrt.runtime.engine.clients.rdkafka_restore import (
    LibrdkafkaRestoreConsumer,
    librdkafka_restore_config,
)
from streamrt.topic_partition import TopicPartition
from tests.kafka_helpers import create_topic, produce
from tests.membership.support import closing, member, recorder

BOUND = 30.0  # every wait is bounded; none is a timing assertion


def only_ours(partitions: Iterable[Any]) -> bool:
    """Every key is the runtime's type itself (not aiokafka's, not a plain tuple)."""
    found = list(partitions)
    return bool(found) and all(type(tp) is TopicPartition for tp in found)


def test_it_compares_and_hashes_as_aiokafkas_and_as_a_plain_tuple() -> None:
    ours, theirs = TopicPartition("t", 3), AiokafkaTP("t", 3)
    assert ours == theirs == ("t", 3) and hash(ours) == hash(theirs) == hash(("t", 3))
    assert {theirs: 1}[ours] == 1 and {ours: 2}[theirs] == 2 and {("t", 3): 3}[ours] == 3
    assert (ours.topic, ours.partition) == ("t", 3) and sorted([ours, ("a", 9)])[0] == ("a", 9)


def _config(bootstrap: str) -> StreamsConfig:
    return StreamsConfig.from_mapping({"application.id": "tp", "bootstrap.servers": bootstrap})


async def _fetched(consumer: LibrdkafkaConsumer) -> dict[Any, list[Any]]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + BOUND
    while loop.time() < deadline:
        batches = await consumer.getmany(timeout_ms=200)
        if batches:
            return batches
    raise AssertionError("nothing fetched")


async def _restored(consumer: LibrdkafkaRestoreConsumer) -> dict[Any, Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + BOUND
    while loop.time() < deadline:
        batches = await consumer.fetch(timeout_ms=200)
        if batches:
            return batches
    raise AssertionError("nothing restored")


def test_the_stream_threads_clients_hand_the_engine_its_own_type(broker) -> None:
    bootstrap, topic = broker.bootstrap, f"tp-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, [(b"k", b"v0"), (b"k", b"v1")], partition=1)
    tp = TopicPartition(topic, 1)
    clients = _config(bootstrap).client_config()

    async def go() -> None:
        config, max_records = librdkafka_consumer_config(clients, "tp-main", "tp", False)
        main = LibrdkafkaConsumer(config, max_records)
        config, max_records = librdkafka_restore_config(clients, "tp-restore", "tp", False)
        restore = LibrdkafkaRestoreConsumer(config, max_records)
        offsets = OffsetsConsumer(AdminClient(bootstrap))
        for client in (main, restore, offsets):
            await client.start()
        try:
            main.assign([TopicPartition(topic, 0), tp])
            main.pause(TopicPartition(topic, 0))
            batches = await _fetched(main)
            assert only_ours(batches) and [r.value for r in batches[tp]] == [b"v0", b"v1"]
            assert only_ours(main.assignment()) and only_ours(main.paused())
            ends = await restore.end_offsets([tp])
            assert only_ours(ends) and ends[tp] == 2
            listed = await offsets.end_offsets([tp, TopicPartition(topic, 0)])
            assert only_ours(listed) and listed == {tp: 2, (topic, 0): 0}
            await restore.assign_at({tp: 0})
            restored = await _restored(restore)
            assert only_ours(restored) and only_ours(restore.assignment())
        finally:
            for client in (main, restore, offsets):
                await client.stop()

    asyncio.run(go())


def test_the_group_members_assignment_is_the_runtimes_type(broker) -> None:
    """The assignor deals plain tuples; what the member holds and hands its listener (and so
    the member listener and the task manager) is the runtime's type."""
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"tp-{suffix}", f"tp-group-{suffix}"
    create_topic(broker.bootstrap, topic, 2)

    async def go() -> None:
        async with closing([]) as members:
            m = member(broker.bootstrap, group, topic)
            members.append(m)
            async with asyncio.timeout(BOUND):
                await m.start()
            assert m.assignment == {(topic, 0), (topic, 1)} and only_ours(m.assignment)
            assert only_ours(recorder(m).all("assigned"))

    asyncio.run(go())
