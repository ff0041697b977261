"""Repartition purging after a commit (Kafka Streams' maybePurgeCommittedRecords)."""

from __future__ import annotations

import asyncio

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.structs import TopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KPTP

from streamrt.runtime.purge import purge_repartition_records
from tests.apache_kafka.support import BrokerEndpoint


def test_purge_deletes_records_before_the_committed_offsets(any_broker: BrokerEndpoint) -> None:
    topic = "app-agg-repartition"

    async def scenario() -> dict[TopicPartition, int]:
        admin = AIOKafkaAdminClient(bootstrap_servers=any_broker.bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, 2, 1)])
            producer = KafkaProducer(bootstrap_servers=any_broker.bootstrap)
            for p in (0, 1):
                for i in range(5):
                    producer.send(topic, value=b"v%d" % i, partition=p).get(10)
            producer.close()
            committed = {TopicPartition(topic, 0): 3, TopicPartition(topic, 1): 0}
            return await purge_repartition_records(admin, committed)
        finally:
            await admin.close()

    assert asyncio.run(scenario()) == {TopicPartition(topic, 0): 3}
    consumer = KafkaConsumer(bootstrap_servers=any_broker.bootstrap)
    starts = consumer.beginning_offsets([KPTP(topic, 0), KPTP(topic, 1)])
    consumer.close()
    assert starts == {KPTP(topic, 0): 3, KPTP(topic, 1): 0}


def test_a_failed_purge_is_not_raised(any_broker: BrokerEndpoint) -> None:
    async def scenario() -> dict[TopicPartition, int]:
        admin = AIOKafkaAdminClient(bootstrap_servers=any_broker.bootstrap)
        await admin.start()
        try:
            return await purge_repartition_records(admin, {TopicPartition("missing", 0): 10})
        finally:
            await admin.close()

    assert asyncio.run(scenario()) == {}
