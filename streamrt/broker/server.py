"""The asyncio Kafka-protocol listener: one task per connection, replies in request order.

Clients pipeline requests; Kafka answers them in order and so do we, by handling one request
per connection at a time (a parked JoinGroup or a long-polling Fetch holds only its own
connection). A malformed, truncated, oversized or unsupported frame closes that one
connection with a log line saying why; nothing a client sends can stop the broker.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import logging
import struct
import time
from typing import Any

from streamrt.broker.core import ApiTable, BrokerCore
from streamrt.broker.metrics import BrokerMetrics
from streamrt.broker.security.listeners import Listener
from streamrt.broker.security.sasl import ConnectionAuth
from streamrt.broker.unknown_tags import without_unknown_tags
from streamrt.errors import ErrorCode, KafkaError
from streamrt.logs import fields
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import Codec, build, codec_for, encode_response
from streamrt.wire.context import RequestContext
from streamrt.wire.error_responses import error_response
from streamrt.wire.frame_check import check_request_lengths

__all__ = ("KafkaServer",)

logger = logging.getLogger(__name__)
# Kafka's ``kafka.request.logger``: at DEBUG every request and its answer, one line each, to
# compare a client's conversation with this broker against Apache Kafka's.
request_logger = logging.getLogger("streamrt.broker.request")
_TRACE_CHARS = 2000

_PREFIX = struct.Struct(">hhi")  # api_key, api_version, correlation_id: same in header v1 and v2


class ProtocolViolation(Exception):
    """A client broke the protocol: close its connection."""


class KafkaServer:
    """Accepts connections and dispatches decoded requests through an :class:`ApiTable`."""

    def __init__(self, core: BrokerCore, table: ApiTable, metrics: BrokerMetrics) -> None:
        self.core = core
        self.table = table
        self.metrics = metrics
        self._servers: list[asyncio.base_events.Server] = []
        self._connections: set[asyncio.Task[None]] = set()
        config = core.config
        self._max_frame = int(config["socket.request.max.bytes"])
        self._max_unauthenticated = min(
            self._max_frame, int(config["sasl.server.max.receive.size"])
        )
        idle_ms = int(config["connections.max.idle.ms"])
        self._idle_s: float | None = idle_ms / 1000 if idle_ms >= 0 else None
        self._max_connections = int(config["max.connections"])
        self._max_per_ip = int(config["max.connections.per.ip"])
        self._per_ip: collections.Counter[str] = collections.Counter()

    async def start(self, host: str, port: int, listener: Listener | None = None) -> int:
        """Serve one listener (default PLAINTEXT) and return its port; once per listener."""
        listener = listener or Listener("PLAINTEXT", "PLAINTEXT", host, port)
        security = self.core.security
        tls = security.ssl_context(listener) if security is not None else None
        server = await asyncio.start_server(
            functools.partial(self._on_connect, listener=listener),
            host,
            port,
            backlog=512,
            ssl=tls,
            ssl_handshake_timeout=10 if tls is not None else None,
        )
        self._servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        # Cancel until every connection has ended: on Python 3.11 an ``asyncio.wait_for``
        # racing its own timeout can swallow a cancellation (fixed in 3.12), and a connection
        # that survived it kept serving its client from the stopped broker (its coordinator
        # expiring sessions) while a restarted one took over the port.
        pending = set(self._connections)
        while pending:
            for task in pending:
                task.cancel()
            _, pending = await asyncio.wait(pending, timeout=0.5)
        for server in self._servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 2)

    async def _on_connect(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        listener: Listener | None = None,
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        peer = writer.get_extra_info("peername") or ("?", 0)
        refusal = self._over_limit(str(peer[0]))
        if refusal is not None:
            logger.info("refusing connection: %s", refusal, extra=fields(peer=peer[0]))
            writer.close()
            return
        self._connections.add(task)
        self._per_ip[str(peer[0])] += 1
        client_host = f"/{peer[0]}"
        try:
            auth = _connection_auth(self.core, listener, writer)
            await self._serve(reader, writer, client_host, auth)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away
        except ProtocolViolation as exc:
            logger.warning("closing connection: %s", exc, extra=fields(peer=f"{peer[0]}:{peer[1]}"))
        except asyncio.CancelledError:
            pass
        except Exception:
            logger.exception("closing connection after an internal error", extra=fields(peer=peer))
        finally:
            self._connections.discard(task)
            self._per_ip[str(peer[0])] -= 1
            if self._per_ip[str(peer[0])] <= 0:
                del self._per_ip[str(peer[0])]
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        client_host: str,
        auth: ConnectionAuth,
    ) -> None:
        ahead: asyncio.Task[bytes] | None = None  # the next size prefix, read during a Fetch
        try:
            while True:
                prefix = await self._next_size(reader, ahead)
                ahead = None
                if prefix is None:  # idle: Kafka's selector expires it quietly (DEBUG)
                    logger.debug("closing a connection idle for connections.max.idle.ms")
                    return
                size = int.from_bytes(prefix, "big", signed=True)
                self._check_size(size, auth)
                frame = await reader.readexactly(size)
                if auth.expects_raw_token:  # SaslHandshake v0: bare SASL tokens, no header
                    token = await asyncio.to_thread(_raw_sasl_token, auth, frame)
                    chunks: list[bytes] | None = [token]
                elif _PREFIX.unpack_from(frame)[0] == ApiKey.FETCH:
                    chunks, ahead = await self._handle_fetch(frame, client_host, auth, reader)
                else:
                    chunks = await self._handle_frame(frame, client_host, auth)
                await self._reply(writer, chunks)
                if auth.closing:
                    return
        finally:
            if ahead is not None:
                ahead.cancel()

    async def _handle_fetch(
        self,
        frame: bytes,
        client_host: str,
        auth: ConnectionAuth,
        reader: asyncio.StreamReader,
    ) -> tuple[list[bytes] | None, asyncio.Task[bytes]]:
        """Handle a Fetch while reading the next size prefix, so that a client closing its
        connection cancels the parked fetch at once (its wait may be long) instead of leaving
        it, its memory and the socket held until the wait ends. Returns the answer and the
        read of the next prefix (done or not)."""
        handling = asyncio.ensure_future(self._handle_frame(frame, client_host, auth))
        ahead = asyncio.ensure_future(reader.readexactly(4))
        try:
            await asyncio.wait((handling, ahead), return_when=asyncio.FIRST_COMPLETED)
            closed = ahead.exception() if ahead.done() else None
            if closed is not None and not handling.done():
                handling.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await handling
                raise closed
            return await handling, ahead
        except BaseException:
            handling.cancel()
            ahead.cancel()
            if ahead.done() and not ahead.cancelled():
                ahead.exception()  # retrieved: the connection is closing anyway
            raise

    async def _reply(self, writer: asyncio.StreamWriter, chunks: list[bytes] | None) -> None:
        if chunks is not None:
            size_prefix = sum(map(len, chunks)).to_bytes(4, "big")
            writer.writelines([size_prefix, *chunks])
            await writer.drain()

    def _over_limit(self, ip: str) -> str | None:
        """Kafka's ``max.connections`` and ``max.connections.per.ip`` (checked on accept)."""
        if len(self._connections) >= self._max_connections:
            return f"{len(self._connections)} connections open (max.connections)"
        if self._per_ip[ip] >= self._max_per_ip:
            return f"{self._per_ip[ip]} connections open from {ip} (max.connections.per.ip)"
        return None

    async def _next_size(
        self, reader: asyncio.StreamReader, ahead: asyncio.Task[bytes] | None = None
    ) -> bytes | None:
        """The next frame's size prefix (from ``ahead`` if a Fetch started reading it), or None
        after connections.max.idle.ms without one."""
        try:
            return await asyncio.wait_for(ahead or reader.readexactly(4), self._idle_s)
        except TimeoutError:
            return None

    def _check_size(self, size: int, auth: ConnectionAuth) -> None:
        """A SASL connection not yet authenticated may send frames of at most
        ``sasl.server.max.receive.size`` (Kafka's SaslServerAuthenticator)."""
        min_size = 0 if auth.expects_raw_token else _PREFIX.size
        if auth.uses_sasl and not auth.authenticated:
            limit, name = self._max_unauthenticated, "sasl.server.max.receive.size"
        else:
            limit, name = self._max_frame, "socket.request.max.bytes"
        if size < min_size or size > limit:
            raise ProtocolViolation(f"frame size {size} outside [{min_size}, {limit}] ({name})")

    async def _handle_frame(
        self, frame: bytes, client_host: str, auth: ConnectionAuth | None = None
    ) -> list[bytes] | None:
        api_key, api_version, correlation_id = _PREFIX.unpack_from(frame)
        if auth is not None and not auth.permits(api_key):
            raise ProtocolViolation(auth.refusal(api_key))
        entry = self.table.get(api_key)
        if entry is None:
            raise ProtocolViolation(f"unsupported API key {api_key}")
        if not entry.min_version <= api_version <= entry.max_version:
            if api_key == ApiKey.API_VERSIONS:
                return self._api_versions_fallback(correlation_id)
            raise ProtocolViolation(
                f"unsupported version {api_version} of API {api_key} "
                f"(supported {entry.min_version}-{entry.max_version})"
            )
        codec = codec_for(api_key, api_version)
        header, request = _decode(codec, frame, api_key, api_version)
        ctx = RequestContext(
            api_key=api_key,
            api_version=api_version,
            correlation_id=correlation_id,
            client_id=header.client_id or "",
            client_host=client_host,
            listener=auth.listener if auth is not None else "PLAINTEXT",
            principal=auth.principal if auth is not None else "User:ANONYMOUS",
            auth=auth,
        )
        started = time.perf_counter()
        try:
            response = await entry.handler(self.core, ctx, request)
        except KafkaError as exc:
            response = error_response(ctx, request, exc.code, str(exc))
            if response is None:
                raise ProtocolViolation(f"{entry.api_key.name} failed: {exc}") from None
        except Exception as exc:
            # Kafka answers an unexpected failure with UNKNOWN_SERVER_ERROR and keeps serving.
            logger.exception("%s v%d failed", entry.api_key.name, api_version)
            response = error_response(ctx, request, ErrorCode.unknown_server_error, repr(exc))
            if response is None:
                raise ProtocolViolation(f"{entry.api_key.name} failed: {exc!r}") from None
        finally:
            self.metrics.observe_request(api_key, time.perf_counter() - started)
        if request_logger.isEnabledFor(logging.DEBUG):
            _trace(ctx, request, response, time.perf_counter() - started)
        if response is None:
            return None
        return encode_response(codec, correlation_id, response)

    def _api_versions_fallback(self, correlation_id: int) -> list[bytes]:
        """A too-new ApiVersions gets a v0 body with UNSUPPORTED_VERSION and our ranges."""
        codec = codec_for(ApiKey.API_VERSIONS, 0)
        keys = [
            {"api_key": k, "min_version": lo, "max_version": hi}
            for k, lo, hi in self.table.ranges()
        ]
        body = build(codec.response_cls, error_code=ErrorCode.unsupported_version, api_keys=keys)
        return encode_response(codec, correlation_id, body)


def _decode(codec: Codec, frame: bytes, api_key: int, api_version: int) -> tuple[Any, Any]:
    """(header, request); a frame with tagged fields the schema does not know is read without
    them, as Kafka ignores them (kio refuses them with a KeyError)."""
    try:
        return _read(codec, frame)
    except KeyError as exc:
        if "tagged field" not in str(exc):
            raise _malformed(api_key, api_version, exc) from None
        try:
            return _read(codec, without_unknown_tags(frame, codec.request_cls))
        except Exception as again:
            raise _malformed(api_key, api_version, again) from None
    except Exception as exc:  # kio raises several types for bad bytes
        raise _malformed(api_key, api_version, exc) from None


def _read(codec: Codec, frame: bytes) -> tuple[Any, Any]:
    # kio sizes arrays from the count on the wire: a lying count would abort the process.
    check_request_lengths(frame, codec.request_cls)
    header, offset = codec.read_header(frame, 0)
    request, _ = codec.read_body(frame, offset)
    return header, request


def _malformed(api_key: int, api_version: int, exc: Exception) -> ProtocolViolation:
    return ProtocolViolation(
        f"malformed request (API {api_key} v{api_version}): {type(exc).__name__}: {exc}"
    )


def _trace(ctx: RequestContext, request: object, response: object, seconds: float) -> None:
    """One DEBUG line per answered request: what, who, how long it was held, the request and
    the answer (each cut at ``_TRACE_CHARS``)."""
    request_logger.debug(
        "%s v%d from %s (%s) in %.0f ms: %.*s -> %.*s",
        ApiKey(ctx.api_key).name,
        ctx.api_version,
        ctx.client_id,
        ctx.client_host,
        seconds * 1000,
        _TRACE_CHARS,
        request,
        _TRACE_CHARS,
        response,
    )


def _connection_auth(
    core: BrokerCore, listener: Listener | None, writer: asyncio.StreamWriter
) -> ConnectionAuth:
    """The connection's authentication state: open on PLAINTEXT/SSL, SASL pending otherwise."""
    if core.security is None or listener is None:
        return ConnectionAuth(listener.name if listener is not None else "PLAINTEXT")
    return core.security.connection(listener, writer.get_extra_info("ssl_object"))


def _raw_sasl_token(auth: ConnectionAuth, token: bytes) -> bytes:
    from streamrt.broker.security.sasl import SaslFailure

    try:
        return auth.authenticate(token)
    except SaslFailure as exc:
        raise ProtocolViolation(f"SASL authentication failed: {exc}") from None
