"""Time limits for slow clients: the headers within ``rest.header.timeout.ms``.

uvicorn has no header timeout: its keep-alive timer runs only between requests and is
cancelled by the first byte of the next one, so a client that sends ``GET /v1/ta`` and
nothing more holds its connection (and a file descriptor of the process that runs the
stream threads) forever; 100 of them stayed open indefinitely. This protocol is uvicorn's
h11 one plus a timer: armed when a connection opens and when the first bytes of a next
request arrive, disarmed once h11 has parsed the request's headers; when it fires while the
headers are still incomplete, the connection is closed. The body's limit
(``rest.body.timeout.ms``) is applied where the body is read (:mod:`streamrt.rest.limits`).
"""

from __future__ import annotations

import asyncio
import logging

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from streamrt.logs import fields

__all__ = ("HeaderTimeoutProtocol", "with_header_timeout")

logger = logging.getLogger(__name__)


class HeaderTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol that closes a connection whose request headers are late."""

    header_timeout_s: float = 10.0
    header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE:  # still reading a request's headers
            if self.header_timer is None:
                self._arm()
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self.header_timer = asyncio.get_running_loop().call_later(
            self.header_timeout_s, self._on_header_timeout
        )

    def _disarm(self) -> None:
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None

    def _on_header_timeout(self) -> None:
        self.header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            logger.info(
                "closing a connection whose request headers did not arrive in time",
                extra=fields(client=str(self.client), timeout_s=self.header_timeout_s),
            )
            self.transport.close()


def with_header_timeout(seconds: float) -> type[HeaderTimeoutProtocol]:
    """The protocol class to pass as ``uvicorn.Config(http=...)``."""
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout_s": seconds})
