"""RequestGuard: a UTF-8 path, the token before the body, a cap on the body (issue 29).

FastAPI reads a request's whole body before it runs the route's dependencies, so a client
without the token could make an instance buffer 47 MiB before it answered 401. This ASGI
middleware runs first: a path whose %-escapes are not UTF-8 is answered 400 (the server would
read each bad byte as U+FFFD, so ``/keys/%FF`` would query another key); a mutating call (a
(method, path) the API protects) is answered 401/403 from its headers alone, before a byte of
the body is read (uvicorn does not even send ``100 Continue``); any body over
``rest.max.request.bytes`` is answered 413, from ``Content-Length`` when the client sent one,
else as soon as the bytes read pass the cap. A body within the cap is read here and handed to
the app as it arrived. A body not complete within ``rest.body.timeout.ms`` of its first read is
answered 408 and the connection closed: a client sending a byte now and then would otherwise
hold its connection forever (the headers' own limit is in :mod:`streamrt.rest.slow_clients`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection
from urllib.parse import unquote_to_bytes

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from streamrt.rest.auth import bearer_token, token_error
from streamrt.rest.errors import ApiError, error_response
from streamrt.rest.settings import RestSettings

__all__ = ("RequestGuard",)


class RequestGuard:
    """``protected``: the (METHOD, path) pairs that need the bearer token."""

    def __init__(
        self, app: ASGIApp, *, settings: RestSettings, protected: Collection[tuple[str, str]]
    ) -> None:
        self.app = app
        self.settings = settings
        self.protected = frozenset(protected)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        error = self._refusal(scope, Headers(scope=scope))
        if error is None:
            messages, error = await self._read_body(receive)
            if error is None:
                await self.app(scope, _replay(messages, receive), send)
                return
        response = error_response(error)
        if error.status == 408:  # the rest of the body may still come: do not read it
            response.headers["connection"] = "close"
        await response(scope, receive, send)

    def _refusal(self, scope: Scope, headers: Headers) -> ApiError | None:
        """Refuse from the headers alone: a path that is not UTF-8, no token for a protected
        call, a declared size."""
        if not _utf8_path(scope):
            return ApiError(400, "BAD_PATH", "the URL path's %-escapes are not UTF-8")
        if (scope["method"], scope["path"]) in self.protected:
            error = token_error(self.settings, bearer_token(headers.get("authorization")))
            if error is not None:
                return error
        length = headers.get("content-length", "")
        if length.isascii() and length.isdigit() and int(length) > self.settings.max_request_bytes:
            return self._too_large()
        return None

    def _too_large(self) -> ApiError:
        limit = self.settings.max_request_bytes
        return ApiError(413, "BODY_TOO_LARGE", f"request bodies are limited to {limit} bytes")

    async def _read_body(self, receive: Receive) -> tuple[list[Message], ApiError | None]:
        """The body's messages, read up to the cap (a disconnect ends it early)."""
        messages: list[Message] = []
        size = 0
        timeout_s = self.settings.body_timeout_ms / 1000
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                return messages, ApiError(
                    408, "BODY_TIMEOUT", f"the request body did not arrive within {timeout_s:g} s"
                )
            messages.append(message)
            if message["type"] != "http.request":
                return messages, None
            size += len(message.get("body", b""))
            if size > self.settings.max_request_bytes:
                return messages, self._too_large()
            if not message.get("more_body", False):
                return messages, None


def _utf8_path(scope: Scope) -> bool:
    """Whether the raw path percent-decodes to UTF-8. The server decodes it with U+FFFD for
    each bad byte, so ``/keys/%FF`` would read the stored key ``"\ufffd"``: another key."""
    raw = scope.get("raw_path")
    if not isinstance(raw, bytes):
        return True
    try:
        unquote_to_bytes(raw).decode()
    except UnicodeDecodeError:
        return False
    return True


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """A ``receive`` that hands out the messages already read, then the connection's own."""
    pending = list(messages)

    async def replay() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replay
