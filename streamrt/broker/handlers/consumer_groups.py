"""ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848, API keys 68 and 69).

Decode, authorize (READ on the group for a heartbeat, DESCRIBE for a describe, as Kafka's
``KafkaApis``), translate topic ids to names and back, and hand the request to the
consumer-group coordinator (``streamrt.broker.consumer_group``) through the group service.
With ``group.coordinator.rebalance.protocols`` lacking ``consumer`` both APIs stay advertised
and answer UNSUPPORTED_VERSION in the body, as Kafka's ``isConsumerGroupProtocolEnabled``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from streamrt.broker.consumer_group.assignors import Assignment
from streamrt.broker.consumer_group.group import ConsumerGroup
from streamrt.broker.consumer_group.requests import HeartbeatRequest
from streamrt.broker.core import ApiTable, BrokerCore, respond
from streamrt.broker.security import DESCRIBE, GROUP, READ, allowed, authorized_operations
from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import ms
from streamrt.wire.context import RequestContext

__all__ = ("register",)

_DISABLED = "The consumer group rebalance protocol (KIP-848) is not enabled on this broker"
_NOT_REQUESTED = -(2**31)
#: ConsumerGroupDescribe v1's MemberType: 1 a consumer-protocol member, 0 a classic one (a
#: member of a migrating group)
_CONSUMER_MEMBER = 1
_CLASSIC_MEMBER = 0


def register(table: ApiTable, core: BrokerCore) -> None:
    table.register(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1, consumer_group_heartbeat)
    table.register(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1, consumer_group_describe)


def _enabled(core: BrokerCore) -> bool:
    return core.coordinator is not None and core.coordinator.consumer.config.enabled


def _heartbeat_error(ctx: RequestContext, code: ErrorCode, message: str | None) -> Any:
    return respond(
        ctx,
        throttle_time=0,
        error_code=code,
        error_message=message,
        member_id=None,
        member_epoch=-1,
        heartbeat_interval=0,
        assignment=None,
    )


async def consumer_group_heartbeat(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    if not _enabled(core) or core.coordinator is None:
        return _heartbeat_error(ctx, ErrorCode.unsupported_version, _DISABLED)
    if not allowed(core, ctx, READ, GROUP, req.group_id):
        return _heartbeat_error(ctx, ErrorCode.group_authorization_failed, None)
    topics = core.logs.topics()
    names = {info.topic_id: name for name, info in topics.items()}
    owned = None
    if req.topic_partitions is not None:  # partitions of deleted topics are simply dropped
        owned = {
            names[tp.topic_id]: frozenset(int(p) for p in tp.partitions)
            for tp in req.topic_partitions
            if tp.topic_id in names
        }
    regex = getattr(req, "subscribed_topic_regex", None)
    request = HeartbeatRequest(
        group_id=req.group_id,
        member_id=req.member_id,
        member_epoch=int(req.member_epoch),
        instance_id=req.instance_id,
        rack_id=req.rack_id,
        rebalance_timeout_ms=ms(req.rebalance_timeout),
        subscribed_topic_names=(
            None if req.subscribed_topic_names is None else tuple(req.subscribed_topic_names)
        ),
        subscribed_topic_regex=regex,
        server_assignor=req.server_assignor,
        owned=owned,
        client_id=ctx.client_id or "",
        client_host=ctx.client_host,
        version=ctx.api_version,
    )
    answer = await core.coordinator.consumer_heartbeat(request)
    ids = {name: info.topic_id for name, info in topics.items()}
    assignment = None
    if answer.assignment is not None:
        assignment = {"topic_partitions": _partitions(answer.assignment, ids, with_names=False)}
    return respond(
        ctx,
        throttle_time=0,
        error_code=answer.error,
        error_message=answer.message,
        member_id=answer.member_id,
        member_epoch=answer.member_epoch,
        heartbeat_interval=answer.heartbeat_interval_ms,
        assignment=assignment,
    )


def _partitions(
    assignment: Assignment, ids: Mapping[str, uuid.UUID], *, with_names: bool
) -> list[dict[str, Any]]:
    out = []
    for name, parts in sorted(assignment.items()):
        if parts and name in ids:
            entry: dict[str, Any] = {"topic_id": ids[name], "partitions": sorted(parts)}
            if with_names:
                entry["topic_name"] = name
            out.append(entry)
    return out


async def consumer_group_describe(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    if not _enabled(core) or core.coordinator is None:
        groups = [
            _described_error(gid, ErrorCode.unsupported_version, _DISABLED) for gid in req.group_ids
        ]
        return respond(ctx, throttle_time=0, groups=groups)
    ids = {name: info.topic_id for name, info in core.logs.topics().items()}
    known = core.coordinator.consumer.groups
    groups = []
    for gid in req.group_ids:
        group = known.get(gid)
        if not allowed(core, ctx, DESCRIBE, GROUP, gid):
            groups.append(_described_error(gid, ErrorCode.group_authorization_failed, None))
        elif group is None:
            message = f"Group {gid} not found."
            if gid in core.coordinator.coordinator.groups:
                message = f"Group {gid} is not a consumer group."
            groups.append(_described_error(gid, ErrorCode.group_id_not_found, message))
        else:
            ops = authorized_operations(
                core, ctx, GROUP, gid, bool(req.include_authorized_operations)
            )
            groups.append(_described(group, ids, ops))
    return respond(ctx, throttle_time=0, groups=groups)


def _described_error(group_id: str, code: ErrorCode, message: str | None) -> dict[str, Any]:
    return {
        "error_code": code,
        "error_message": message,
        "group_id": group_id,
        "group_state": "",
        "group_epoch": -1,
        "assignment_epoch": -1,
        "assignor_name": "",
        "members": [],
        "authorized_operations": _NOT_REQUESTED,
    }


def _described(group: ConsumerGroup, ids: Mapping[str, uuid.UUID], ops: int) -> dict[str, Any]:
    members = [
        {
            "member_id": m.member_id,
            "instance_id": m.instance_id,
            "rack_id": m.rack_id,
            "member_epoch": m.member_epoch,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "subscribed_topic_names": list(m.subscribed_topic_names),
            "subscribed_topic_regex": m.subscribed_topic_regex,
            "assignment": {"topic_partitions": _partitions(m.assigned, ids, with_names=True)},
            "target_assignment": {
                "topic_partitions": _partitions(
                    group.target.get(m.member_id, {}), ids, with_names=True
                )
            },
            "member_type": _CONSUMER_MEMBER if m.classic is None else _CLASSIC_MEMBER,
        }
        for m in group.members.values()
    ]
    return {
        "error_code": ErrorCode.none,
        "error_message": None,
        "group_id": group.group_id,
        "group_state": group.state.value,
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "assignor_name": group.assignor_name,
        "members": members,
        "authorized_operations": ops,
    }
