"""Internal topics (repartition, changelog) are created before the threads join, on both
brokers: created with every partition led, or the start fails saying which topic and why."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from streamrt.errors import ConfigError
from streamrt.runtime.graph.topology import Topology
from streamrt.runtime.instance.internal_topics import ensure_internal_topics
from tests.apache_kafka.support import BrokerEndpoint
from tests.kafka_helpers import create_topic


def _word_count() -> Topology:
    from streamrt.runtime import App

    app = App({"application.id": "it", "bootstrap.servers": "unused:9092"})
    (
        app.stream("lines", key_serde="str", value_serde="str")
        .flat_map(lambda _k, line: [(w, w) for w in line.split()], key_serde="str")
        .group_by_key(name="words")
        .count(store="counts")
    )
    return app.topology


async def _leaders(bootstrap: str, topics: list[str]) -> dict[str, list[int]]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        return {
            t["topic"]: sorted(p["leader"] for p in t["partitions"])
            for t in await admin.describe_topics(topics)
        }
    finally:
        await admin.close()


def test_internal_topics_are_created_with_every_partition_led(any_broker: BrokerEndpoint) -> None:
    create_topic(any_broker.bootstrap, "lines", 3)
    topology = _word_count()
    counts = asyncio.run(
        ensure_internal_topics(any_broker.bootstrap, "it", topology, topology.subtopologies("it"))
    )
    internal = ["it-counts-changelog", "it-words-repartition"]
    assert {t: counts[t] for t in internal} == dict.fromkeys(internal, 3)
    # Returned only once led: a metadata request right after sees a leader for each one.
    leaders = asyncio.run(_leaders(any_broker.bootstrap, internal))
    assert all(len(ls) == 3 and min(ls) >= 0 for ls in leaders.values()), leaders


async def _configs(bootstrap: str, topic: str) -> dict[str, str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        resource_of = ConfigResource(ConfigResourceType.TOPIC, topic)
        (response,) = await admin.describe_configs([resource_of])
        (resource,) = response.resources
        return {entry[0]: entry[1] for entry in resource[4]}
    finally:
        await admin.close()


def test_repartition_topics_keep_records_until_purged(any_broker: BrokerEndpoint) -> None:
    """Kafka Streams' repartition-topic configs (KIP-284): no time retention, so records with
    old timestamps are not deleted before the app reads them (a differential scenario with
    small timestamps lost them on the embedded broker); the app purges what it consumed."""
    create_topic(any_broker.bootstrap, "lines", 1)
    topology = _word_count()
    asyncio.run(
        ensure_internal_topics(any_broker.bootstrap, "it", topology, topology.subtopologies("it"))
    )
    configs = asyncio.run(_configs(any_broker.bootstrap, "it-words-repartition"))
    assert {k: configs[k] for k in ("retention.ms", "cleanup.policy", "segment.bytes")} == {
        "retention.ms": "-1",
        "cleanup.policy": "delete",
        "segment.bytes": "52428800",
    }


def test_a_topic_the_broker_refuses_fails_the_start_naming_it(broker) -> None:
    create_topic(broker.bootstrap, "lines", 1)
    topology = _word_count()
    with pytest.raises(ConfigError, match=r"could not create internal topic it-\S+: error 38"):
        asyncio.run(
            ensure_internal_topics(
                broker.bootstrap,
                "it",
                topology,
                topology.subtopologies("it"),
                replication_factor=3,  # one broker: INVALID_REPLICATION_FACTOR
            )
        )
