"""kio response entities for the group APIs, one builder per API for every supported version.

Version differences (nullable protocol names from JoinGroup v7, member batches from LeaveGroup
v3, batched groups from OffsetFetch v8) are handled here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import build, codec_for

__all__ = (
    "heartbeat_response",
    "join_response",
    "leave_response",
    "sync_response",
)


def response_cls(api_key: ApiKey, version: int) -> type:
    return codec_for(api_key, version).response_cls


def join_response(
    version: int,
    error: ErrorCode,
    member_id: str,
    *,
    generation_id: int = -1,
    protocol_type: str | None = None,
    protocol_name: str | None = None,
    leader: str | None = "",
    skip_assignment: bool = False,
    members: Sequence[tuple[str, str | None, bytes]] = (),
) -> Any:
    """Below v7 protocol_name is not nullable: null is sent as ``""``."""
    if version < 7 and protocol_name is None:
        protocol_name = ""
    return build(
        response_cls(ApiKey.JOIN_GROUP, version),
        throttle_time=0,
        error_code=error,
        generation_id=generation_id,
        protocol_type=protocol_type,
        protocol_name=protocol_name,
        leader=leader or "",
        skip_assignment=skip_assignment,
        member_id=member_id,
        members=[
            {"member_id": mid, "group_instance_id": iid, "metadata": meta}
            for mid, iid, meta in members
        ],
    )


def sync_response(
    version: int,
    error: ErrorCode,
    *,
    protocol_type: str | None = None,
    protocol_name: str | None = None,
    assignment: bytes = b"",
) -> Any:
    return build(
        response_cls(ApiKey.SYNC_GROUP, version),
        throttle_time=0,
        error_code=error,
        protocol_type=protocol_type,
        protocol_name=protocol_name,
        assignment=assignment,
    )


def heartbeat_response(version: int, error: ErrorCode) -> Any:
    return build(response_cls(ApiKey.HEARTBEAT, version), throttle_time=0, error_code=error)


def leave_response(
    version: int,
    error: ErrorCode,
    members: Sequence[tuple[str, str | None, ErrorCode]] = (),
) -> Any:
    """v0-2 have one member and a top-level error only: the member's error when no top-level."""
    if version < 3 and error is ErrorCode.none and members:
        error = members[0][2]
    return build(  # v0-2: build drops the members field they lack
        response_cls(ApiKey.LEAVE_GROUP, version),
        throttle_time=0,
        error_code=error,
        members=[
            {"member_id": mid, "group_instance_id": iid, "error_code": code}
            for mid, iid, code in members
        ],
    )
