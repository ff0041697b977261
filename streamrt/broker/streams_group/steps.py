"""The group-wide steps of a heartbeat: take the topology, size it against the topics, see
whether the group epoch must move, compute the target (Kafka's ``maybeUpdateTopology``,
``InternalTopicManager.configureTopics`` use and ``updateStreamsTargetAssignment``)."""

from __future__ import annotations

from collections.abc import Mapping

from streamrt.broker.streams_group import planning
from streamrt.broker.streams_group.group import StreamsGroup
from streamrt.broker.streams_group.requests import StreamsHeartbeatRequest
from streamrt.errors import ErrorCode, KafkaError

__all__ = ("compute_target", "configure", "metadata_changed", "update_topology")


def update_topology(group: StreamsGroup, req: StreamsHeartbeatRequest) -> bool:
    """Kafka's ``maybeUpdateTopology``: the first topology is the group's (a bump); an
    older epoch is stale (a status); a different one is refused."""
    requested = req.topology
    if requested is None:
        if group.topology is None:
            raise KafkaError(ErrorCode.invalid_request, "The group has no topology.")
        return False
    current = group.topology
    if current is None:
        group.topology = requested
        return True
    if requested.epoch < current.epoch or requested == current:
        return False
    if requested.epoch > current.epoch:
        raise KafkaError(
            ErrorCode.streams_invalid_topology_epoch,
            f"The member's topology epoch {requested.epoch} is ahead of the group's "
            f"topology epoch {current.epoch}; topology updates are not supported yet.",
        )
    raise KafkaError(ErrorCode.invalid_request, "Topology updates are not supported yet.")


def configure(group: StreamsGroup, topics: Mapping[str, int]) -> planning.Configured:
    """Size the group's topology against the topics (STREAMS_INVALID_TOPOLOGY if it
    cannot be)."""
    if group.topology is None:
        return planning.Configured()
    configured = planning.configure(group.topology, topics)
    if configured.invalid is not None:
        raise KafkaError(ErrorCode.streams_invalid_topology, configured.invalid)
    group.topology_status = configured.status
    group.tasks_per_subtopology = dict(configured.tasks) if configured.ready else {}
    return configured


def metadata_changed(
    group: StreamsGroup, configured: planning.Configured, topics: Mapping[str, int], standbys: int
) -> bool:
    """The topology's topics changed size, it became ready, or the standby count moved."""
    changed = False
    metadata = group.metadata_of(topics)
    if metadata != group.metadata:
        group.metadata = metadata
        changed = True
    validated = -1 if group.topology is None or not configured.ready else group.topology.epoch
    if validated != group.validated_topology_epoch:
        group.validated_topology_epoch = validated
        changed = True
    if standbys != group.standby_replicas_used:
        group.standby_replicas_used = standbys
        changed = True
    return changed


def compute_target(group: StreamsGroup, configured: planning.Configured) -> None:
    """A new target at the group epoch (Kafka's streams ``TargetAssignmentBuilder``); a
    topology that is not ready gives every member no tasks."""
    if configured.ready:
        group.target = planning.assign(
            group.members, group.target, configured, group.standby_replicas_used
        )
    else:
        group.target = {}
    group.assignment_epoch = group.group_epoch
    group.assignments_computed += 1
