"""Per-connection authentication state and the SASL/PLAIN server (pure: no sockets).

A connection on a SASL listener starts unauthenticated: only ApiVersions and SaslHandshake
are accepted, then SaslAuthenticate (KIP-152 framing, handshake v1) or raw length-prefixed
tokens (handshake v0, Kafka < 1.0 clients) until the mechanism completes. Anything else, a
failed exchange or an unsupported mechanism closes the connection after the error response,
as Kafka's SaslServerAuthenticator does.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable

from streamrt.security.scram import MECHANISMS, ScramCredential, ScramError, ScramServer

__all__ = ("ANONYMOUS", "ConnectionAuth", "PlainServer", "SaslFailure")

ANONYMOUS = "User:ANONYMOUS"
API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36


class SaslFailure(Exception):
    """Authentication failed; ``str(exc)`` is the message sent to the client."""


class PlainServer:
    """RFC 4616 PLAIN: one message ``authzid NUL authcid NUL password``."""

    mechanism = "PLAIN"

    def __init__(self, check: Callable[[str, str], bool]) -> None:
        self._check = check
        self.complete = False
        self.authorization_id: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslFailure("Authentication failed: unexpected message after completion")
        parts = token.decode("utf-8", errors="replace").split("\0")
        if len(parts) != 3:
            raise SaslFailure("Invalid SASL/PLAIN response: expected 3 tokens")
        authzid, username, password = parts
        if not username:
            raise SaslFailure("Authentication failed: username not specified")
        if not password:
            raise SaslFailure("Authentication failed: password not specified")
        if not self._check(username, password):
            raise SaslFailure("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslFailure(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        self.complete = True
        self.authorization_id = username
        return b""


class _Scram:
    def __init__(self, server: ScramServer) -> None:
        self._server = server
        self.mechanism = server.mechanism.name

    @property
    def complete(self) -> bool:
        return self._server.complete

    @property
    def authorization_id(self) -> str | None:
        return self._server.authorization_id

    def evaluate(self, token: bytes) -> bytes:
        try:
            return self._server.evaluate(token)
        except ScramError as exc:
            raise SaslFailure(str(exc)) from None


class ConnectionAuth:
    """Who is on this connection and how far its SASL exchange got.

    ``mechanisms`` empty means the listener needs no SASL (PLAINTEXT, SSL): the connection is
    authenticated from the start as ``principal`` (ANONYMOUS, or the client certificate's DN).
    """

    def __init__(
        self,
        listener: str,
        *,
        principal: str = ANONYMOUS,
        mechanisms: tuple[str, ...] = (),
        plain_check: Callable[[str, str], bool] | None = None,
        scram_lookup: Callable[[str, str], ScramCredential | None] | None = None,
    ) -> None:
        self.listener = listener
        self.principal = principal
        self.mechanisms = mechanisms
        self._plain_check = plain_check
        self._scram_lookup = scram_lookup
        self.state = "handshake" if mechanisms else "open"
        self.legacy_tokens = False
        self.closing = False  # close after the current response is written
        self._server: PlainServer | _Scram | None = None

    @property
    def uses_sasl(self) -> bool:
        return bool(self.mechanisms)

    @property
    def authenticated(self) -> bool:
        return self.state in ("open", "authenticated")

    @property
    def expects_raw_token(self) -> bool:
        return self.state == "authenticate" and self.legacy_tokens

    def permits(self, api_key: int) -> bool:
        if self.authenticated:
            return True
        if self.state == "handshake":
            return api_key in (API_VERSIONS, SASL_HANDSHAKE)
        return self.state == "authenticate" and api_key == SASL_AUTHENTICATE

    def refusal(self, api_key: int) -> str:
        return (
            f"unexpected request (API {api_key}) before SASL authentication completed "
            f"on listener {self.listener}"
        )

    def handshake(self, mechanism: str, version: int) -> bool:
        """Choose the mechanism; False (and close) if this listener does not enable it."""
        if mechanism not in self.mechanisms:
            self.closing = True
            return False
        if mechanism == "PLAIN":
            assert self._plain_check is not None
            self._server = PlainServer(self._plain_check)
        else:
            lookup = self._scram_lookup
            assert lookup is not None
            self._server = _Scram(
                ScramServer(MECHANISMS[mechanism], lambda user: lookup(user, mechanism))
            )
        self.legacy_tokens = version == 0
        self.state = "authenticate"
        return True

    def authenticate(self, token: bytes) -> bytes:
        """One step of the exchange; raises SaslFailure (and marks the connection closing)."""
        if self._server is None or self.state != "authenticate":
            self.closing = True
            raise SaslFailure("SaslAuthenticate before a successful SaslHandshake")
        try:
            reply = self._server.evaluate(token)
        except SaslFailure:
            self.state = "failed"
            self.closing = True
            self._server = None
            raise
        if self._server.complete:
            self.principal = f"User:{self._server.authorization_id}"
            self.state = "authenticated"
            self._server = None
        return reply


def constant_time_equal(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())
