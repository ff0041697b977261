"""The configs of the application's internal topics, as Kafka Streams gives them.

Shared by the runtime's own topic creation (``instance.internal_topics``, classic protocol)
and the topology a streams-group member sends to the broker, which creates them
(``engine.rebalance.streams_topology``, ``group.protocol=streams``).
"""

from __future__ import annotations

from collections.abc import Mapping

from streamrt.runtime.graph.topology import Topology

__all__ = ("REPARTITION_TOPIC_CONFIG", "changelog_config")

#: Kafka Streams' ``RepartitionTopicConfig`` defaults (KIP-284): records stay until the app has
#: consumed and purged them (DeleteRecords after each commit), never removed by time. With the
#: broker's default ``retention.ms`` (7 days), records that carry old timestamps (a replay, a
#: backfill, a test's small timestamps) were deleted by retention before they were read.
REPARTITION_TOPIC_CONFIG: Mapping[str, str] = {
    "cleanup.policy": "delete",
    "segment.bytes": "52428800",
    "retention.ms": "-1",
}


def changelog_config(topology: Topology, store: str, additional_ms: int) -> dict[str, str]:
    """Key-value changelogs are compacted; window and session changelogs are also deleted
    after the store's retention plus ``windowstore.changelog.additional.retention.ms``."""
    segments = topology.stores[store].segments
    if segments is None:
        return {"cleanup.policy": "compact"}
    retention = min(segments.retention_ms + additional_ms, 2**63 - 1)
    return {"cleanup.policy": "compact,delete", "retention.ms": str(retention)}
