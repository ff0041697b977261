"""ACL checks for the group APIs, in front of the group coordinator (which stays unaware).

As in Kafka: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and OffsetCommit need READ on the
group (so removing members, a LeaveGroup, needs READ), OffsetCommit also READ on each topic,
OffsetFetch and DescribeGroups DESCRIBE on the group (DescribeGroups' KIP-430 authorized
operations are filled in here when asked), DeleteGroups DELETE on it; ListGroups
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
    authorized_operations,
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
    """Answer a refused request here; hand the (possibly narrowed) rest to ``handle``."""
    check = _CHECKS.get(ctx.api_key)
    if check is None:
        return await handle(ctx, req)
    return await check(core, ctx, req, handle)


Check = Callable[[Any, Any, Any, Handle], Awaitable[Any]]


def _whole_group(op: AclOperation) -> Check:
    """One group named by ``group_id``; ``op`` on it or GROUP_AUTHORIZATION_FAILED."""

    async def check(core: Any, ctx: Any, req: Any, handle: Handle) -> Any:
        if not allowed(core, ctx, op, GROUP, req.group_id):
            return error_response(ctx, req, _GAF)
        return await handle(ctx, req)

    return check


async def _offset_commit(core: Any, ctx: Any, req: Any, handle: Handle) -> Any:
    if not allowed(core, ctx, READ, GROUP, req.group_id):
        return error_response(ctx, req, _GAF)
    check = lambda t: _ok(core, ctx, READ, TOPIC, t.name)  # noqa: E731
    return await _split(ctx, req, handle, "topics", "topics", check, _TAF)


async def _offset_fetch(core: Any, ctx: Any, req: Any, handle: Handle) -> Any:
    """DESCRIBE on the group; then, as Kafka, a topic the caller may not DESCRIBE is left out
    of an all-topics answer and answers TOPIC_AUTHORIZATION_FAILED when named."""
    if ctx.api_version < 8:
        resp = await _whole_group(DESCRIBE)(core, ctx, req, handle)
        # v0/v1 have no top-level error code (a refused group answers per partition)
        if getattr(resp, "error_code", ErrorCode.none) != ErrorCode.none:
            return resp
        topics = _visible_topics(core, ctx, resp.topics, named=req.topics is not None)
        return dataclasses.replace(resp, topics=topics)
    check = lambda g: _ok(core, ctx, DESCRIBE, GROUP, g.group_id)  # noqa: E731
    resp = await _split(ctx, req, handle, "groups", "groups", check, _GAF)
    named = {g.group_id: g.topics is not None for g in req.groups}
    groups = tuple(
        dataclasses.replace(
            g, topics=_visible_topics(core, ctx, g.topics, named=named.get(g.group_id, False))
        )
        for g in resp.groups
    )
    return dataclasses.replace(resp, groups=groups)


def _visible_topics(core: Any, ctx: Any, topics: Any, *, named: bool) -> tuple[Any, ...]:
    out = []
    for t in topics:
        if allowed(core, ctx, DESCRIBE, TOPIC, t.name):
            out.append(t)
        elif named:
            parts = tuple(_unauthorized_partition(p) for p in t.partitions)
            out.append(dataclasses.replace(t, partitions=parts))
    return tuple(out)


def _unauthorized_partition(p: Any) -> Any:
    """Kafka's ``OffsetFetchResponse.UNAUTHORIZED_PARTITION``."""
    changes: dict[str, Any] = {"committed_offset": -1, "metadata": "", "error_code": _TAF}
    if hasattr(p, "committed_leader_epoch"):
        changes["committed_leader_epoch"] = -1
    return dataclasses.replace(p, **changes)


async def _describe_groups(core: Any, ctx: Any, req: Any, handle: Handle) -> Any:
    """DESCRIBE on each group; KIP-430's authorized operations filled in when asked."""
    check = lambda g: _ok(core, ctx, DESCRIBE, GROUP, g)  # noqa: E731
    resp = await _split(ctx, req, handle, "groups", "groups", check, _GAF)
    if not getattr(req, "include_authorized_operations", False):
        return resp
    groups = tuple(
        g
        if g.error_code == _GAF
        else dataclasses.replace(
            g, authorized_operations=authorized_operations(core, ctx, GROUP, g.group_id)
        )
        for g in resp.groups
    )
    return dataclasses.replace(resp, groups=groups)


async def _delete_groups(core: Any, ctx: Any, req: Any, handle: Handle) -> Any:
    check = lambda g: _ok(core, ctx, DELETE, GROUP, g)  # noqa: E731
    return await _split(ctx, req, handle, "groups_names", "results", check, _GAF)


async def _list_groups(core: Any, ctx: Any, req: Any, handle: Handle) -> Any:
    resp = await handle(ctx, req)
    if allowed_cluster(core, ctx, DESCRIBE):
        return resp
    visible = tuple(g for g in resp.groups if allowed(core, ctx, DESCRIBE, GROUP, g.group_id))
    return dataclasses.replace(resp, groups=visible)


_CHECKS: dict[int, Check] = {
    JOIN: _whole_group(READ),
    HEARTBEAT: _whole_group(READ),
    LEAVE: _whole_group(READ),
    SYNC: _whole_group(READ),
    OFFSET_COMMIT: _offset_commit,
    OFFSET_FETCH: _offset_fetch,
    DESCRIBE_GROUPS: _describe_groups,
    DELETE_GROUPS: _delete_groups,
    # Kafka: DELETE on the group (topic READ is not checked)
    ApiKey.OFFSET_DELETE: _whole_group(DELETE),
    LIST_GROUPS: _list_groups,
}


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
