"""Co-partitioning: the inputs of a join must have equal partition counts (checked at start).

A join's task ``<sub>_p`` reads partition ``p`` of both inputs; with different counts some keys
would meet their partner in no task. Kafka Streams checks this at each rebalance; here the app
checks it at start-up, before any thread joins the group, with an error naming every topic and
its count. Repartition topics without an explicit count take their reading sub-topology's user
topic count, so a repartition the DSL inserted never breaks co-partitioning by itself.
"""

from __future__ import annotations

from collections.abc import Mapping

from streamrt.errors import ConfigError
from streamrt.runtime.graph.topology import SourceNode, SubTopology, Topology

__all__ = ("CopartitionError", "repartition_counts", "validate_copartitioning")


class CopartitionError(ConfigError):
    """Join inputs have different partition counts."""


def repartition_counts(
    topology: Topology,
    application_id: str,
    subtopologies: list[SubTopology],
    external: Mapping[str, int],
) -> dict[str, int]:
    """Each repartition topic's partition count: ``repartition(n)``'s n, else the largest
    user-topic count of the sub-topology that reads it, else the largest of all user topics."""
    width = max(external.values(), default=1)
    counts: dict[str, int] = {}
    for sub in subtopologies:
        users = [external[t] for t in sub.source_topics if t in external]
        for name in sub.nodes:
            node = topology.nodes[name]
            if isinstance(node, SourceNode) and node.internal:
                topic = topology.topic_of(node, application_id)
                counts[topic] = node.partitions or (max(users) if users else width)
    return counts


def validate_copartitioning(
    topology: Topology, application_id: str, counts: Mapping[str, int]
) -> None:
    """Raise :class:`CopartitionError` naming the topics of a join with unequal counts."""
    for group in topology.copartition_groups:
        topics = sorted(
            {
                topology.topic_of(node, application_id)
                for node in (topology.nodes[n] for n in group)
                if isinstance(node, SourceNode)
            }
        )
        known = {t: counts[t] for t in topics if t in counts}
        if len(set(known.values())) > 1:
            listing = ", ".join(f"{t} ({n} partitions)" for t, n in known.items())
            raise CopartitionError(
                f"Topics not co-partitioned: [{listing}]; a join needs the same partition count "
                "on both inputs: recreate one topic, or repartition(n) one side"
            )
