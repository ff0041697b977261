"""StreamsGroupHeartbeat as the state machine sees it, and its checks.

The handler converts kio's request once (``from_request`` for the topology); these types carry
no wire detail. ``validate`` is Kafka 4.3's ``throwIfStreamsGroupHeartbeatRequestIsInvalid``
and ``throwIfInvalidTopology``, with Kafka's messages, minus its refusal of InstanceId: static
members are served here (KAFKA-20169, Kafka 4.4's design).
"""

from __future__ import annotations

import dataclasses

from streamrt.broker.coordination.result import CoordinatorRecord
from streamrt.broker.streams_group.group import Status
from streamrt.broker.streams_group.member import STATIC_LEAVE_EPOCH, Tasks
from streamrt.broker.streams_group.topology import StreamsTopology
from streamrt.errors import ErrorCode, KafkaError

__all__ = ("EndpointPartitions", "StreamsHeartbeatAnswer", "StreamsHeartbeatRequest", "validate")


@dataclasses.dataclass(frozen=True, slots=True)
class StreamsHeartbeatRequest:
    """Fields left ``None`` (and a rebalance timeout of -1) did not change since the last one."""

    group_id: str
    member_id: str
    member_epoch: int
    endpoint_information_epoch: int = 0
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topology: StreamsTopology | None = None
    #: owned tasks: None if unchanged since the last heartbeat
    owned: Tasks | None = None
    process_id: str | None = None
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] | None = None
    shutdown_application: bool = False
    client_id: str = ""
    client_host: str = ""
    #: set when a role list was null and another not (Kafka refuses that)
    tasks_partially_null: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class EndpointPartitions:
    """One member's endpoint and the source/changelog partitions its tasks materialize."""

    host: str
    port: int
    active: dict[str, frozenset[int]]
    standby: dict[str, frozenset[int]]


@dataclasses.dataclass(frozen=True, slots=True)
class StreamsHeartbeatAnswer:
    error: ErrorCode
    message: str | None = None
    member_id: str = ""
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    acceptable_recovery_lag: int = 0
    task_offset_interval_ms: int = 0
    status: tuple[Status, ...] = ()
    #: sent on a join or when the member's tasks changed
    tasks: Tasks | None = None
    endpoint_information_epoch: int = 0
    partitions_by_user_endpoint: tuple[EndpointPartitions, ...] | None = None
    #: internal topics the broker must create: name -> (partitions, replication, configs)
    topics_to_create: dict[str, tuple[int, int, dict[str, str]]] = dataclasses.field(
        default_factory=dict
    )
    #: what the heartbeat changed, for ``__consumer_offsets`` (appended before the answer)
    records: tuple[CoordinatorRecord, ...] = ()


def _bad(message: str) -> KafkaError:
    return KafkaError(ErrorCode.invalid_request, message)


def validate(req: StreamsHeartbeatRequest) -> None:
    """INVALID_REQUEST or STREAMS_INVALID_TOPOLOGY with Kafka's messages."""
    if not req.member_id.strip():
        raise _bad("MemberId can't be empty.")
    if not req.group_id.strip():
        raise _bad("GroupId can't be empty.")
    if req.instance_id is not None and not req.instance_id.strip():
        raise _bad("InstanceId can't be empty.")
    if req.rack_id is not None and not req.rack_id.strip():
        raise _bad("RackId can't be empty.")
    if req.member_epoch == 0:
        _validate_join(req)
    elif req.member_epoch == STATIC_LEAVE_EPOCH:
        if req.instance_id is None:
            raise _bad("InstanceId can't be null.")
    elif req.member_epoch < STATIC_LEAVE_EPOCH:
        raise _bad(f"MemberEpoch is {req.member_epoch}, but must be greater than or equal to -2.")
    if req.tasks_partially_null:
        raise _bad("If one task-type is non-null, all must be non-null.")
    if req.member_epoch != 0 and req.topology is not None:
        raise _bad("Topology can only be provided when (re-)joining.")
    if req.owned is not None and req.owned.warmup:
        raise _bad("WarmupTasks are not supported yet.")


def _validate_join(req: StreamsHeartbeatRequest) -> None:
    if req.rebalance_timeout_ms == -1:
        raise _bad("RebalanceTimeoutMs must be provided in first request.")
    if req.owned is not None:
        for role, tasks in (
            ("ActiveTasks", req.owned.active),
            ("StandbyTasks", req.owned.standby),
            ("WarmupTasks", req.owned.warmup),
        ):
            if tasks:
                raise _bad(f"{role} must be empty when (re-)joining.")
    if req.topology is None:
        raise _bad("Topology must be non-null when (re-)joining.")
    for sub in req.topology.subtopologies:
        if sub.source_topic_regex:
            raise _bad("Regular expressions for source topics are not supported yet.")
        for info in sub.state_changelog_topics:
            if info.partitions != 0:
                raise KafkaError(
                    ErrorCode.streams_invalid_topology,
                    f"Changelog topic {info.name} must have an undefined partition count, "
                    f"but it is set to {info.partitions}.",
                )
