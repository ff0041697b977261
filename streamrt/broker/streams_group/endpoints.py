"""PartitionsByUserEndpoint for interactive queries (Kafka's ``EndpointToPartitionsManager``).

Each member with a user endpoint is listed with the partitions of the source and repartition
source topics its active and standby tasks read: task ``p`` of a subtopology reads partition
``p`` of each of them (when the topic has that many partitions).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from streamrt.broker.streams_group.member import StreamsMember
from streamrt.broker.streams_group.requests import EndpointPartitions
from streamrt.broker.streams_group.topology import StreamsTopology, TaskIds

__all__ = ("partitions_by_endpoint",)


def _partitions(
    tasks: TaskIds, topology: StreamsTopology, topics: Mapping[str, int]
) -> dict[str, frozenset[int]]:
    out: dict[str, set[int]] = {}
    for sub_id, ps in tasks.items():
        sub = topology.subtopology(sub_id)
        if sub is None:
            continue
        names = [*sub.source_topics, *(t.name for t in sub.repartition_source_topics)]
        for name in names:
            count = topics.get(name, 0)
            out.setdefault(name, set()).update(p for p in ps if p < count)
    return {t: frozenset(ps) for t, ps in sorted(out.items()) if ps}


def partitions_by_endpoint(
    members: Iterable[StreamsMember],
    topology: StreamsTopology | None,
    topics: Mapping[str, int],
) -> tuple[EndpointPartitions, ...]:
    """Every member with an endpoint, in member order."""
    if topology is None:
        return ()
    out = []
    for m in members:
        if m.user_endpoint is None:
            continue
        host, port = m.user_endpoint
        out.append(
            EndpointPartitions(
                host,
                port,
                _partitions(m.assigned.active, topology, topics),
                _partitions(m.assigned.standby, topology, topics),
            )
        )
    return tuple(out)
