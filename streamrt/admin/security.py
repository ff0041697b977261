"""TLS and SASL (PLAIN, SCRAM-SHA-256/512) for the admin client's own connections.

The admin client frames Kafka requests itself (see :mod:`streamrt.admin.connection`), so it
also authenticates itself: TLS comes from :meth:`ClientConfig.ssl_context`; SASL runs after
ApiVersions as SaslHandshake v1 then SaslAuthenticate rounds (KIP-152), with the SCRAM client
of :mod:`streamrt.security.scram`. Settings are Kafka client properties (``--command-config``).
"""

from __future__ import annotations

import dataclasses
import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from streamrt.client_config import ClientConfig, SaslCredentials
from streamrt.errors import ErrorCode, StreamrtError
from streamrt.security.scram import ScramClient, ScramError, mechanism

__all__ = ("AdminSecurity", "AuthenticationError", "authenticate")

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36


class BrokerConnection(Protocol):
    """The part of :class:`streamrt.admin.connection.BrokerConnection` SASL needs."""

    address: str

    async def call(
        self, api_key: int, *, min_version: int = ..., max_version: int = ..., **request_fields: Any
    ) -> Any: ...


class AuthenticationError(StreamrtError):
    """The broker refused the SASL login (wrong mechanism or credentials)."""


@dataclasses.dataclass(frozen=True)
class AdminSecurity:
    """How to secure each admin connection: a TLS context and/or SASL credentials."""

    ssl_context: ssl.SSLContext | None = None
    sasl: SaslCredentials | None = None

    @classmethod
    def from_config(
        cls, config: ClientConfig | Mapping[str, Any] | Path | str | None
    ) -> AdminSecurity:
        """From Kafka client properties (the ``admin.`` prefix wins over bare names), a
        properties file path, or None (plaintext)."""
        if config is None:
            return cls()
        if isinstance(config, (Path, str)):
            config = ClientConfig.from_file(config)
        elif not isinstance(config, ClientConfig):
            config = ClientConfig.from_properties(config)
        return cls(config.ssl_context("admin"), config.sasl_credentials("admin"))


async def authenticate(conn: BrokerConnection, creds: SaslCredentials) -> None:
    """SaslHandshake v1 + SaslAuthenticate on a fresh connection, before any other request."""
    handshake = await conn.call(
        SASL_HANDSHAKE, min_version=1, max_version=1, mechanism=creds.mechanism
    )
    code = ErrorCode(int(handshake.error_code))
    if code != ErrorCode.none:
        offered = ", ".join(handshake.mechanisms) or "none"
        raise AuthenticationError(
            f"{conn.address}: SASL mechanism {creds.mechanism} refused ({code.name.upper()}); "
            f"the listener offers {offered}"
        )
    if creds.mechanism == "PLAIN":
        await _round(conn, b"\0" + creds.username.encode() + b"\0" + creds.password.encode())
        return
    if not creds.mechanism.startswith("SCRAM-"):
        raise AuthenticationError(f"SASL mechanism {creds.mechanism} is not supported here")
    client = ScramClient(mechanism(creds.mechanism), creds.username, creds.password)
    try:
        server_first = await _round(conn, client.first())
        server_final = await _round(conn, client.final(server_first))
        client.verify(server_final)
    except ScramError as exc:
        raise AuthenticationError(f"{conn.address}: {exc}") from exc


async def _round(conn: BrokerConnection, token: bytes) -> bytes:
    response = await conn.call(SASL_AUTHENTICATE, max_version=2, auth_bytes=token)
    code = ErrorCode(int(response.error_code))
    if code != ErrorCode.none:
        detail = response.error_message or code.name.upper()
        raise AuthenticationError(f"{conn.address}: SASL authentication failed: {detail}")
    return bytes(response.auth_bytes)
