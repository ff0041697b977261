"""Delegation token APIs (KIP-48), answered as a Kafka broker without
``delegation.token.secret.key`` answers them: the feature is off.

Kafka first refuses token requests from connections that could not use a token anyway
(PLAINTEXT, or SSL without a client certificate): DELEGATION_TOKEN_REQUEST_NOT_ALLOWED. Any
other connection gets DELEGATION_TOKEN_AUTH_DISABLED. No token is ever issued.
"""

from __future__ import annotations

import datetime
from typing import Any

from streamrt.broker.core import ApiTable, BrokerCore, respond
from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.context import RequestContext

__all__ = ("register",)

_ANONYMOUS = "User:ANONYMOUS"
#: Kafka's -1 ("no timestamp") as kio's non-nullable datetime: 1 ms before the epoch.
_NO_TIMESTAMP = datetime.datetime.fromtimestamp(-0.001, tz=datetime.UTC)


def register(table: ApiTable, core: BrokerCore) -> None:
    table.register(ApiKey.CREATE_DELEGATION_TOKEN, 1, 3, create_delegation_token)
    table.register(ApiKey.RENEW_DELEGATION_TOKEN, 1, 2, renew_or_expire)
    table.register(ApiKey.EXPIRE_DELEGATION_TOKEN, 1, 2, renew_or_expire)
    table.register(ApiKey.DESCRIBE_DELEGATION_TOKEN, 1, 3, describe_delegation_token)


def _refusal(ctx: RequestContext) -> ErrorCode:
    """Kafka's ``allowTokenRequests``: SASL connections, or SSL with a client certificate."""
    sasl = ctx.auth is not None and bool(getattr(ctx.auth, "uses_sasl", False))
    if sasl or ctx.principal != _ANONYMOUS:
        return ErrorCode.delegation_token_auth_disabled
    return ErrorCode.delegation_token_request_not_allowed


def _principal(text: str) -> tuple[str, str]:
    kind, _, name = text.partition(":")
    return kind, name


async def create_delegation_token(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    requester = _principal(ctx.principal)
    owner_name = getattr(req, "owner_principal_name", None)
    owner = (req.owner_principal_type or "User", owner_name) if owner_name else requester
    return respond(
        ctx,
        error_code=_refusal(ctx),
        principal_type=owner[0],
        principal_name=owner[1],
        token_requester_principal_type=requester[0],
        token_requester_principal_name=requester[1],
        issue_timestamp=_NO_TIMESTAMP,
        expiry_timestamp=_NO_TIMESTAMP,
        max_timestamp=_NO_TIMESTAMP,
        token_id="",
        hmac=b"",
        throttle_time=0,
    )


async def renew_or_expire(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    return respond(ctx, error_code=_refusal(ctx), expiry_timestamp=_NO_TIMESTAMP, throttle_time=0)


async def describe_delegation_token(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    return respond(ctx, error_code=_refusal(ctx), tokens=[], throttle_time=0)
