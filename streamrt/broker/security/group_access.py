"""ACL checks for the group APIs, in front of the group coordinator (which stays unaware).

As in Kafka: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and OffsetCommit need READ on the
group (so removing members, a LeaveGroup, needs READ), OffsetCommit also READ on each topic,
OffsetFetch and DescribeGroups DESCRIBE on the group, DeleteGroups DELETE on it; ListGroups
shows every group with DESCRIBE on the cluster, else only the groups the caller may describe.
Requests naming several groups or topics are split: the authorized part goes to the
coordinator, the rest is answered with GROUP_/TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

from streamrt.broker.security import (
    DELETE,
    DESCRIBE,
    GROUP,
    READ,
    TOPIC,
    AclOperation,
    allowed,
    allowed_cluster,
)
from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.error_responses import error_response

__all__ = ("guarded",)

Handle = Callable[[Any, Any], Awaitable[Any]]
OFFSET_COMMIT, OFFSET_FETCH = ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH
JOIN, HEARTBEAT, LEAVE, SYNC = (
    ApiKey.JOIN_GROUP,
    ApiKey.HEARTBEAT,
    ApiKey.LEAVE_GROUP,
    ApiKey.SYNC_GROUP,
)
DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS = (
    ApiKey.DESCRIBE_GROUPS,
    ApiKey.LIST_GROUPS,
    ApiKey.DELETE_GROUPS,
)
_GAF, _TAF = ErrorCode.group_authorization_failed, ErrorCode.topic_authorization_failed


async def guarded(core: Any, ctx: Any, req: Any, handle: Handle) -> Any:
    key = ctx.api_key
    if key in (JOIN, HEARTBEAT, LEAVE, SYNC):
        if not allowed(core, ctx, READ, GROUP, req.group_id):
            return error_response(ctx, req, _GAF)
        return await handle(ctx, req)
    if key == OFFSET_COMMIT:
        if not allowed(core, ctx, READ, GROUP, req.group_id):
            return error_response(ctx, req, _GAF)
        return await _split(
            ctx,
            req,
            handle,
            "topics",
            "topics",
            lambda t: _ok(core, ctx, READ, TOPIC, t.name),
            _TAF,
        )
    if key == OFFSET_FETCH:
        if ctx.api_version < 8:
            if not allowed(core, ctx, DESCRIBE, GROUP, req.group_id):
                return error_response(ctx, req, _GAF)
            return await handle(ctx, req)
        return await _split(
            ctx,
            req,
            handle,
            "groups",
            "groups",
            lambda g: _ok(core, ctx, DESCRIBE, GROUP, g.group_id),
            _GAF,
        )
    if key == DESCRIBE_GROUPS:
        check = lambda g: _ok(core, ctx, DESCRIBE, GROUP, g)  # noqa: E731
        return await _split(ctx, req, handle, "groups", "groups", check, _GAF)
    if key == DELETE_GROUPS:
        check = lambda g: _ok(core, ctx, DELETE, GROUP, g)  # noqa: E731
        return await _split(ctx, req, handle, "groups_names", "results", check, _GAF)
    if key == ApiKey.OFFSET_DELETE:  # Kafka: DELETE on the group (topic READ is not checked)
        if not allowed(core, ctx, DELETE, GROUP, req.group_id):
            return error_response(ctx, req, _GAF)
        return await handle(ctx, req)
    if key == LIST_GROUPS:
        resp = await handle(ctx, req)
        if allowed_cluster(core, ctx, DESCRIBE):
            return resp
        visible = tuple(g for g in resp.groups if allowed(core, ctx, DESCRIBE, GROUP, g.group_id))
        return dataclasses.replace(resp, groups=visible)
    return await handle(ctx, req)


def _ok(core: Any, ctx: Any, op: AclOperation, rtype: Any, name: str) -> bool:
    return allowed(core, ctx, op, rtype, name)


async def _split(
    ctx: Any,
    req: Any,
    handle: Handle,
    req_field: str,
    resp_field: str,
    check: Callable[[Any], bool],
    code: ErrorCode,
) -> Any:
    items = getattr(req, req_field)
    ok = tuple(i for i in items if check(i))
    denied = tuple(i for i in items if not check(i))
    if not denied:
        return await handle(ctx, req)
    refused = error_response(ctx, dataclasses.replace(req, **{req_field: denied}), code)
    if not ok:
        return refused
    resp = await handle(ctx, dataclasses.replace(req, **{req_field: ok}))
    merged = tuple(getattr(resp, resp_field)) + tuple(getattr(refused, resp_field))
    return dataclasses.replace(resp, **{resp_field: merged})
