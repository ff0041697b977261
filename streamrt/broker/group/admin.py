"""DescribeGroups, ListGroups and DeleteGroups over the coordinator's groups."""

from __future__ import annotations

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

__all__ = ("delete_groups", "describe_group", "describe_groups", "list_groups")

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
