"""A JoinGroup request normalised across versions (v0 has no rebalance timeout, v5+ has
static membership), with the parked reply handle the coordinator answers later."""

from __future__ import annotations

import dataclasses
from typing import Any

from streamrt.broker.group.group import Parked
from streamrt.errors import ErrorCode
from streamrt.wire.codec import ms
from streamrt.wire.context import RequestContext
from streamrt.wire.group_responses import join_response

__all__ = ("JoinRequest",)


@dataclasses.dataclass(frozen=True, slots=True)
class JoinRequest:
    """A JoinGroup request, normalised across versions."""

    version: int
    group_id: str
    member_id: str
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    client_id: str
    client_host: str
    parked: Parked

    @classmethod
    def parse(cls, ctx: RequestContext, request: Any, handle: object) -> JoinRequest:
        session = ms(request.session_timeout)
        rebalance = getattr(request, "rebalance_timeout", None)
        return cls(
            version=ctx.api_version,
            group_id=request.group_id,
            member_id=request.member_id,
            group_instance_id=getattr(request, "group_instance_id", None),
            session_timeout_ms=session,
            rebalance_timeout_ms=session if rebalance is None else ms(rebalance),
            protocol_type=request.protocol_type,
            protocols=tuple((p.name, p.metadata) for p in request.protocols),
            client_id=ctx.client_id,
            client_host=ctx.client_host,
            parked=Parked(handle, ctx.api_version),
        )

    def error(self, code: ErrorCode, member_id: str | None = None) -> Any:
        return join_response(self.version, code, self.member_id if member_id is None else member_id)
