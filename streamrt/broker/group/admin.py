"""DescribeGroups, ListGroups, DeleteGroups and OffsetDelete over the coordinator's groups."""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from streamrt.broker.group.group import ClassicGroup
from streamrt.broker.group.offsets import OffsetMetadataManager
from streamrt.broker.group.records import CoordinatorRecord, group_tombstone, offset_tombstone
from streamrt.broker.group.state import GroupState
from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import build
from streamrt.wire.context import RequestContext
from streamrt.wire.group_responses import response_cls

__all__ = (
    "delete_groups",
    "describe_group",
    "describe_groups",
    "list_groups",
    "offset_delete",
    "offset_tombstones",
)

#: Kafka's "authorized operations not requested" sentinel (Integer.MIN_VALUE).
_OPERATIONS_NOT_REQUESTED = -(2**31)


def describe_group(group: ClassicGroup | None, group_id: str) -> dict[str, Any]:
    """One DescribedGroup; unknown groups are reported as ``Dead`` with error 0.

    Metadata is shown only when Stable; the stored assignment always (Java coordinator).
    """
    if group is None or group.is_in(GroupState.DEAD):
        return {
            "error_code": ErrorCode.none,
            "group_id": group_id,
            "group_state": GroupState.DEAD.value,
            "protocol_type": "",
            "protocol_data": "",
            "members": [],
            "authorized_operations": _OPERATIONS_NOT_REQUESTED,
        }
    stable = group.is_in(GroupState.STABLE)
    return {
        "error_code": ErrorCode.none,
        "group_id": group_id,
        "group_state": group.state.value,
        "protocol_type": group.protocol_type or "",
        "protocol_data": (group.protocol_name or "") if stable else "",
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "member_metadata": m.metadata(group.protocol_name) if stable else b"",
                "member_assignment": m.assignment,
            }
            for m in group.members.values()
        ],
        "authorized_operations": _OPERATIONS_NOT_REQUESTED,
    }


def describe_groups(groups: Mapping[str, ClassicGroup], ctx: RequestContext, request: Any) -> Any:

    described = [describe_group(groups.get(gid), gid) for gid in request.groups]
    return build(
        response_cls(ApiKey.DESCRIBE_GROUPS, ctx.api_version), throttle_time=0, groups=described
    )


def list_groups(groups: Mapping[str, ClassicGroup], ctx: RequestContext, request: Any) -> Any:
    """States (v4+) and types (v5+) filters compare case-insensitively; all groups are classic."""

    states = {s.lower() for s in getattr(request, "states_filter", ())}
    types = {t.lower() for t in getattr(request, "types_filter", ())}
    listed = [
        {
            "group_id": gid,
            "protocol_type": g.protocol_type or "",
            "group_state": g.state.value,
            "group_type": "classic",
        }
        for gid, g in sorted(groups.items())
        if not g.is_in(GroupState.DEAD)
        and (not states or g.state.value.lower() in states)
        and (not types or "classic" in types)
    ]
    return build(
        response_cls(ApiKey.LIST_GROUPS, ctx.api_version),
        throttle_time=0,
        error_code=ErrorCode.none,
        groups=listed,
    )


def delete_groups(
    groups: Mapping[str, ClassicGroup],
    offsets: OffsetMetadataManager,
    ctx: RequestContext,
    request: Any,
) -> tuple[Any, tuple[CoordinatorRecord, ...]]:
    """Only Empty groups can go: their offsets and the group itself get tombstones."""

    results = []
    records: list[CoordinatorRecord] = []
    for gid in request.groups_names:
        group = groups.get(gid)
        if group is None or group.is_in(GroupState.DEAD):
            code = ErrorCode.group_id_not_found
        elif not group.is_in(GroupState.EMPTY):
            code = ErrorCode.non_empty_group
        else:
            code = ErrorCode.none
            for topic, partition in sorted(offsets.of_group(gid)):
                records.append(offset_tombstone(gid, topic, partition))
            records.append(group_tombstone(gid))
        results.append({"group_id": gid, "error_code": code})
    response = build(
        response_cls(ApiKey.DELETE_GROUPS, ctx.api_version), throttle_time=0, results=results
    )
    return response, tuple(records)


def _subscribed_topics(group: ClassicGroup) -> set[str]:
    """Topics the members of a non-empty ``consumer`` group subscribe to, read from their
    ConsumerProtocol subscriptions (every version starts: version, topic array)."""
    topics: set[str] = set()
    if group.protocol_type != "consumer":
        return topics
    for member in group.members.values():
        data = member.metadata(group.protocol_name)
        try:
            (count,) = struct.unpack_from(">i", data, 2)
            pos = 6
            for _ in range(max(count, 0)):
                (size,) = struct.unpack_from(">h", data, pos)
                topics.add(data[pos + 2 : pos + 2 + size].decode())
                pos += 2 + size
        except (struct.error, UnicodeDecodeError):
            continue  # not a ConsumerProtocol subscription: it subscribes to nothing we know
    return topics


def offset_delete(
    groups: Mapping[str, ClassicGroup],
    offsets: OffsetMetadataManager,
    ctx: RequestContext,
    request: Any,
) -> tuple[Any, tuple[CoordinatorRecord, ...]]:
    """Kafka's ``OffsetMetadataManager.deleteOffsets``: a non-empty group may lose only the
    offsets of topics it does not subscribe to; a non-empty group of another protocol type
    none (NON_EMPTY_GROUP). Deleted offsets get tombstones."""
    cls = response_cls(ApiKey.OFFSET_DELETE, ctx.api_version)
    group = groups.get(request.group_id)
    error = ErrorCode.none
    if group is None or group.is_in(GroupState.DEAD):
        error = ErrorCode.group_id_not_found
    elif not group.is_in(GroupState.EMPTY) and group.protocol_type != "consumer":
        error = ErrorCode.non_empty_group
    if error is not ErrorCode.none:
        return build(cls, error_code=error, throttle_time=0, topics=[]), ()
    assert group is not None
    subscribed = _subscribed_topics(group) if not group.is_in(GroupState.EMPTY) else set()
    return offset_tombstones(offsets, subscribed, ctx.api_version, request)


def offset_tombstones(
    offsets: OffsetMetadataManager, subscribed: set[str], version: int, request: Any
) -> tuple[Any, tuple[CoordinatorRecord, ...]]:
    """OffsetDelete's answer and records, whatever the kind of group: the offsets of a topic a
    member subscribes to stay (GROUP_SUBSCRIBED_TO_TOPIC); the others get tombstones."""
    committed = offsets.of_group(request.group_id)
    records: list[CoordinatorRecord] = []
    topics = []
    for t in request.topics:
        rows = []
        for p in t.partitions:
            code = ErrorCode.none
            if t.name in subscribed:
                code = ErrorCode.group_subscribed_to_topic
            elif (t.name, p.partition_index) in committed:
                records.append(offset_tombstone(request.group_id, t.name, p.partition_index))
            rows.append({"partition_index": p.partition_index, "error_code": code})
        topics.append({"name": t.name, "partitions": rows})
    cls = response_cls(ApiKey.OFFSET_DELETE, version)
    response = build(cls, error_code=ErrorCode.none, throttle_time=0, topics=topics)
    return response, tuple(records)
