"""The admin client's DeleteRecords and read_committed ListOffsets on both brokers, with real
producers (kafka-python, and confluent-kafka for an open transaction)."""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import Producer
from kafka import KafkaProducer

from streamrt.admin.client import EARLIEST, LATEST, AdminClient
from streamrt.errors import ErrorCode, KafkaError
from tests.apache_kafka.support import BrokerEndpoint
from tests.kafka_helpers import create_topic


def _produce(bootstrap: str, topic: str, partitions: int, each: int) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for p in range(partitions):
        for i in range(each):
            producer.send(topic, value=b"v%d" % i, partition=p).get(30)
    producer.close()


def test_delete_records_moves_the_log_start_and_answers_per_partition(
    any_broker: BrokerEndpoint,
) -> None:
    topic = "purged"
    create_topic(any_broker.bootstrap, topic, 3)
    _produce(any_broker.bootstrap, topic, 3, 5)

    async def scenario() -> tuple[object, ...]:
        async with AdminClient(any_broker.bootstrap) as admin:
            deleted = await admin.delete_records({(topic, 0): 3, (topic, 1): 0, (topic, 2): 9})
            starts = await admin.list_offsets([(topic, p) for p in range(3)], EARLIEST)
            with pytest.raises(KafkaError) as missing:
                await admin.delete_records({("no-such-topic", 0): 1})
            return deleted, starts, missing.value.code

    deleted, starts, missing_code = asyncio.run(scenario())
    assert isinstance(deleted, dict)
    assert {tp: deleted[tp] for tp in ((topic, 0), (topic, 1))} == {(topic, 0): 3, (topic, 1): 0}
    # past the log end: that partition's own error, the others still deleted
    beyond = deleted[(topic, 2)]
    assert isinstance(beyond, KafkaError) and beyond.code == ErrorCode.offset_out_of_range
    assert starts == {(topic, 0): 3, (topic, 1): 0, (topic, 2): 0}
    assert missing_code == ErrorCode.unknown_topic_or_partition


def test_list_offsets_read_committed_ends_at_the_last_stable_offset(
    any_broker: BrokerEndpoint,
) -> None:
    """An open transaction's records are past the last stable offset: a read_committed
    consumer's end (what a restore waits for) is before them, a read_uncommitted one's after."""
    topic = "open-txn"
    producer = Producer(
        {"bootstrap.servers": any_broker.bootstrap, "transactional.id": "offsets-calls-txn"}
    )

    async def ends(read_committed: bool) -> dict[tuple[str, int], int]:
        async with AdminClient(any_broker.bootstrap) as admin:
            return await admin.list_offsets([(topic, 0)], LATEST, read_committed=read_committed)

    create_topic(any_broker.bootstrap, topic, 1)
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, value=b"c%d" % i, partition=0)
    producer.commit_transaction(30)  # offsets 0-2, then the commit marker at 3
    producer.begin_transaction()
    for i in range(2):
        producer.produce(topic, value=b"o%d" % i, partition=0)
    assert producer.flush(30) == 0  # offsets 4-5, written, not committed
    try:
        assert asyncio.run(ends(read_committed=False)) == {(topic, 0): 6}
        assert asyncio.run(ends(read_committed=True)) == {(topic, 0): 4}
    finally:
        producer.abort_transaction(30)
