"""The bearer token of mutating calls, checked the same way before and after the body is read.

:class:`~streamrt.rest.limits.RequestGuard` checks it from the raw header before a byte of the
body is read; the route dependency checks it again (and puts the scheme in the OpenAPI
document), so a route is protected even when mounted without the guard.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Annotated

from fastapi import Depends
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param

from streamrt.rest.errors import ApiError
from streamrt.rest.settings import RestSettings

__all__ = ("bearer_token", "require_token", "token_error")

# module level: the dependency's annotation is resolved from this module's globals
_BEARER = HTTPBearer(auto_error=False)


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, as HTTPBearer reads it."""
    scheme, token = get_authorization_scheme_param(authorization)
    if not authorization or scheme.lower() != "bearer" or not token:
        return None
    return token


def token_error(settings: RestSettings, token: str | None) -> ApiError | None:
    """Why a mutating call with ``token`` is refused, or None when it may go on."""
    if settings.auth_token is None:
        return ApiError(
            403,
            "MUTATIONS_DISABLED",
            "no rest.auth.token (or STREAMRT_REST_TOKEN) is configured on this instance, "
            "so mutating calls are refused",
        )
    if token is None:
        return ApiError(401, "UNAUTHENTICATED", "send Authorization: Bearer <token>")
    if not hmac.compare_digest(token.encode(), settings.auth_token.encode()):
        return ApiError(403, "FORBIDDEN", "the bearer token is wrong")
    return None


def require_token(settings: RestSettings) -> Callable[..., None]:
    """A route dependency refusing calls without the instance's token."""

    def dependency(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)],
    ) -> None:
        error = token_error(settings, None if credentials is None else credentials.credentials)
        if error is not None:
            raise error

    return dependency
