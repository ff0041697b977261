"""A response carrying one error code, for any group API and version.

Used when the coordinator is not active, when a request is refused before the state machine
sees it, and when the append of an offset commit or group deletion fails.
"""

from __future__ import annotations

from typing import Any

from streamrt.broker.group.responses import (
    heartbeat_response,
    join_response,
    leave_response,
    response_cls,
    sync_response,
)
from streamrt.errors import ErrorCode
from streamrt.wire.codec import build

__all__ = ("error_response",)


def error_response(ctx: Any, request: Any, code: ErrorCode) -> Any:
    key, v = ctx.api_key, ctx.api_version
    cls = response_cls(key, v)
    if key in (8, 28):  # OffsetCommit, TxnOffsetCommit
        topics = [
            {
                "name": t.name,
                "partitions": [
                    {"partition_index": p.partition_index, "error_code": code} for p in t.partitions
                ],
            }
            for t in request.topics
        ]
        return build(cls, throttle_time=0, topics=topics)
    if key == 9:
        if v >= 8:
            groups = [
                {"group_id": g.group_id, "topics": [], "error_code": code} for g in request.groups
            ]
            return build(cls, throttle_time=0, groups=groups)
        return build(cls, throttle_time=0, topics=[], error_code=code)
    if key == 11:
        return join_response(v, code, request.member_id)
    if key == 12:
        return heartbeat_response(v, code)
    if key == 13:
        return leave_response(v, code)
    if key == 14:
        return sync_response(v, code)
    if key == 15:
        groups = [
            {
                "error_code": code,
                "group_id": gid,
                "group_state": "",
                "protocol_type": "",
                "protocol_data": "",
                "members": [],
                "authorized_operations": -(2**31),
            }
            for gid in request.groups
        ]
        return build(cls, throttle_time=0, groups=groups)
    if key == 16:
        return build(cls, throttle_time=0, error_code=code, groups=[])
    if key == 42:
        results = [{"group_id": gid, "error_code": code} for gid in request.groups_names]
        return build(cls, throttle_time=0, results=results)
    raise ValueError(f"api key {key} is not a group API")
