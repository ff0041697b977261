"""On a 3-broker cluster the runtime creates its changelog and repartition topics with the
brokers' ``default.replication.factor`` (3), as Kafka Streams' ``replication.factor=-1`` does;
an explicit ``replication.factor`` wins. One replica would lose state with one broker's disk."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from confluent_kafka.admin import AdminClient

from streamrt.runtime import App
from streamrt.runtime.graph.topology import changelog_topic
from streamrt.runtime.instance.internal_topics import ensure_internal_topics
from tests.apache_kafka.support import create_topic

pytestmark = [pytest.mark.kafka]


def _replicas(bootstrap: str, topic: str) -> set[int]:
    """Replica counts of ``topic``'s partitions, once a broker's metadata lists them: a node
    that an earlier test restarted may answer before it has caught up (no partitions yet)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + 30
    while True:
        meta = admin.list_topics(topic, timeout=30)
        found = {len(p.replicas) for p in meta.topics[topic].partitions.values()}
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


@pytest.mark.parametrize(("configured", "expected"), [(-1, 3), (2, 2)])
def test_internal_topics_get_the_brokers_default_replication_factor(
    apache_kafka_cluster: object, configured: int, expected: int
) -> None:
    bootstrap = apache_kafka_cluster.bootstrap  # type: ignore[attr-defined]
    app_id = f"rf-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, f"{app_id}-in", 2)
    app = App({"application.id": app_id, "bootstrap.servers": bootstrap})
    app.stream(f"{app_id}-in", key_serde="str", value_serde="str").group_by(
        lambda _k, v: v, key_serde="str", name="by-value"
    ).count(store="counts")
    subs = app.topology.subtopologies(app_id)
    asyncio.run(
        ensure_internal_topics(bootstrap, app_id, app.topology, subs, replication_factor=configured)
    )
    assert _replicas(bootstrap, changelog_topic(app_id, "counts")) == {expected}
    (repartition,) = app.topology.repartition_topics(app_id)
    assert _replicas(bootstrap, repartition) == {expected}
