"""A request of one group protocol to a group id held by a group of another type (the type
checks of Kafka's ``GroupMetadataManager``): a classic JoinGroup to a streams group or an empty
consumer group, OffsetDelete to either. The service routes here so each coordinator keeps its own
groups and an id never names two groups at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from streamrt.broker.coordination.result import CoordinatorRecord, Result
from streamrt.broker.group import consumer_offsets
from streamrt.broker.group.coordinator import GroupCoordinator
from streamrt.broker.group.join_request import JoinRequest
from streamrt.errors import ErrorCode

__all__ = ("ModernOwner", "join_group", "offset_delete")


class ModernOwner(Protocol):
    """What these checks need of the consumer or streams coordinator."""

    @property
    def groups(self) -> Mapping[str, Any]: ...

    def has_members(self, group_id: str) -> bool: ...

    def drop_if_empty(self, group_id: str) -> tuple[CoordinatorRecord, ...]: ...

    def topics(self) -> Mapping[str, int]: ...


def join_group(
    classic: GroupCoordinator,
    consumer: ModernOwner,
    streams: ModernOwner,
    ctx: Any,
    request: Any,
    reply: object,
) -> Result:
    """A classic member may not join a streams group that has members:
    INCONSISTENT_GROUP_PROTOCOL (Kafka's ``classicGroupJoin`` answers so, with no member id;
    a consumer group with members takes it as a classic member: ``classic_in_consumer``). An
    empty consumer or streams group is replaced by the classic one (its tombstones first)."""
    if streams.has_members(request.group_id):
        join = JoinRequest.parse(ctx, request, reply)
        return Result(response=join.error(ErrorCode.inconsistent_group_protocol, ""))
    dropped = consumer.drop_if_empty(request.group_id) + streams.drop_if_empty(request.group_id)
    return Result(records=dropped).then(classic.join_group(ctx, request, reply))


def offset_delete(
    classic: GroupCoordinator, owners: Sequence[ModernOwner], ctx: Any, request: Any
) -> Result:
    """OffsetDelete by the coordinator of the group's type; a consumer or streams group keeps
    the offsets of the topics it reads (GROUP_SUBSCRIBED_TO_TOPIC), as Kafka's groups do."""
    for owner in owners:
        if request.group_id in owner.groups:
            response, records = consumer_offsets.delete(
                owner, classic.offsets, owner.topics(), ctx.api_version, request
            )
            return Result(response=response, records=records, replay=True)
    return classic.offset_delete(ctx, request)
