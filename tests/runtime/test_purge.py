"""Repartition purging after a commit (Kafka Streams' maybePurgeCommittedRecords)."""

from __future__ import annotations

import asyncio

from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KPTP

from streamrt.admin.client import AdminClient
from streamrt.admin.models import NewTopic
from streamrt.runtime.engine.clients.purge import purge_repartition_records
from streamrt.topic_partition import TopicPartition
from tests.apache_kafka.support import BrokerEndpoint


def test_purge_deletes_records_before_the_committed_offsets(any_broker: BrokerEndpoint) -> None:
    topic = "app-agg-repartition"

    async def scenario() -> dict[TopicPartition, int]:
        admin = AdminClient(any_broker.bootstrap)
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
        admin = AdminClient(any_broker.bootstrap)
        try:
            return await purge_repartition_records(admin, {TopicPartition("missing", 0): 10})
        finally:
            await admin.close()

    assert asyncio.run(scenario()) == {}


def test_the_runtime_purges_its_repartition_topic_after_commits(
    any_broker: BrokerEndpoint, tmp_path
) -> None:
    """Word count repartitions by word; after a commit the consumed records are deleted, so
    the repartition topic's log start offset moves up (it never did: the topic grew forever).
    """
    from tests.kafka_helpers import create_topic, produce, wait_until
    from tests.runtime.test_wordcount_integration import EXPECTED, wait_for_counts, wordcount_app

    create_topic(any_broker.bootstrap, "lines", 2)
    create_topic(any_broker.bootstrap, "counts-out", 2)
    produce(
        any_broker.bootstrap, "lines", [(None, b"the quick brown fox"), (None, b"the lazy dog")]
    )
    produce(any_broker.bootstrap, "lines", [(None, b"The fox")])
    app = wordcount_app(
        any_broker.bootstrap, tmp_path / "state", **{"repartition.purge.interval.ms": "0"}
    )
    (repartition,) = app.topology.repartition_topics("wc")
    app.start()
    try:
        wait_for_counts(app, any_broker.bootstrap, EXPECTED)
        consumer = KafkaConsumer(bootstrap_servers=any_broker.bootstrap)
        parts = [KPTP(repartition, p) for p in (0, 1)]
        try:
            ends = consumer.end_offsets(parts)
            wait_until(
                lambda: consumer.beginning_offsets(parts) == ends,
                what="repartition records purged up to the committed offsets",
            )
        finally:
            consumer.close()
        assert sum(ends.values()) == 9  # every word went through the repartition topic
    finally:
        app.stop()
    assert app.fatal_error is None
