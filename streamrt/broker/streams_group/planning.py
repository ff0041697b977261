"""The coordinator's view of the topic checks and the task assignor.

``configure`` sizes a topology against the broker's topics (``configured_topology``) and
``assign`` runs Kafka's sticky task assignor (``task_assignor``); both are pure. This module
only converts between their types and the coordinator's, so the state machine depends on one
small interface.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from streamrt.broker.streams_group import task_assignor
from streamrt.broker.streams_group.configured_topology import (
    ConfiguredTopology,
    InvalidTopologyError,
    configure_topics,
)
from streamrt.broker.streams_group.group import Status
from streamrt.broker.streams_group.member import StreamsMember, Tasks
from streamrt.broker.streams_group.task_assignor import AssignmentMemberSpec, GroupSpec
from streamrt.broker.streams_group.topology import StreamsTopology, TopicInfo

__all__ = ("Configured", "assign", "configure")


@dataclasses.dataclass(frozen=True, slots=True)
class Configured:
    """A topology sized against the topics: tasks per subtopology when ready (else empty),
    the statuses to report, the internal topics to create, or an invalid-topology error."""

    tasks: Mapping[str, int] = dataclasses.field(default_factory=dict)
    stateful: frozenset[str] = frozenset()
    status: tuple[Status, ...] = ()
    to_create: Mapping[str, tuple[int, int, dict[str, str]]] = dataclasses.field(
        default_factory=dict
    )
    invalid: str | None = None
    #: the sized topology itself (the assignor's ``TopologyDescriber``)
    described: ConfiguredTopology | None = None

    @property
    def ready(self) -> bool:
        return self.invalid is None and not self.status and bool(self.tasks)


def _broker_default_replication(topology: StreamsTopology) -> StreamsTopology:
    """Kafka Streams 4.3.1 sends replication factor -1 for internal topics (its
    ``replication.factor`` default: the broker's); Kafka's wire doc says 0. Both mean the
    broker default, so -1 is read as 0 before the checks, which refuse negative values."""

    def fix(infos: tuple[TopicInfo, ...]) -> tuple[TopicInfo, ...]:
        return tuple(
            dataclasses.replace(i, replication_factor=0) if i.replication_factor < 0 else i
            for i in infos
        )

    subs = tuple(
        dataclasses.replace(
            s,
            state_changelog_topics=fix(s.state_changelog_topics),
            repartition_source_topics=fix(s.repartition_source_topics),
        )
        for s in topology.subtopologies
    )
    return dataclasses.replace(topology, subtopologies=subs)


def configure(topology: StreamsTopology, topics: Mapping[str, int]) -> Configured:
    """Size ``topology`` against ``topics`` (name -> partition count)."""
    try:
        c = configure_topics(_broker_default_replication(topology), topics.get)
    except InvalidTopologyError as exc:
        return Configured(invalid=str(exc))
    status: tuple[Status, ...] = ()
    if c.status is not None:
        status = ((int(c.status), c.status_detail),)
    to_create = {
        t.name: (t.partitions, t.replication_factor, dict(t.configs)) for t in c.topics_to_create
    }
    return Configured(
        tasks=dict(c.subtopology_tasks) if c.ready else {},
        stateful=c.stateful_subtopologies,
        status=status,
        to_create=to_create,
        described=c,
    )


def assign(
    members: Mapping[str, StreamsMember],
    targets: Mapping[str, Tasks],
    configured: Configured,
    standby_replicas: int,
) -> dict[str, Tasks]:
    """Every member's new target (Kafka's ``TargetAssignmentBuilder``): the sticky assignor
    starts from each member's current target, so tasks stay where they were meant to be."""
    if configured.described is None:
        return {}
    specs = {}
    for member_id, m in members.items():
        target = targets.get(member_id) or Tasks()
        specs[member_id] = AssignmentMemberSpec(
            instance_id=m.instance_id,
            rack_id=m.rack_id,
            process_id=m.process_id,
            active_tasks=target.active,
            standby_tasks=target.standby,
            warmup_tasks=target.warmup,
            client_tags=dict(m.client_tags),
        )
    result = task_assignor.assign(GroupSpec(specs, standby_replicas), configured.described)
    return {
        member_id: Tasks.of(a.active, a.standby, a.warmup)
        for member_id, a in result.members.items()
    }
