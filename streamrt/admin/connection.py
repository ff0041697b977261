"""One asyncio connection to a Kafka-protocol broker, speaking kio entities.

The admin client needs APIs no Python client exposes (batch LeaveGroup v3+), so it frames
requests itself: a 4-byte size, then RequestHeader v1 (or v2 for flexible versions), then the
body. Requests are pipelined; Kafka answers them in order on a connection, so responses are
matched to a FIFO of pending requests and a correlation-id mismatch poisons the connection.
On open, ApiVersions (v3, falling back to v0) learns the broker's version ranges so each call
can pick the highest version both sides understand.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import itertools
import logging
import ssl
import struct
from collections.abc import Callable
from typing import Any

from streamrt.admin.security import AdminSecurity, authenticate
from streamrt.errors import ErrorCode, StreamrtError
from streamrt.logs import fields
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.client_codec import (
    ClientCodec,
    UnsupportedVersionError,
    api_name,
    client_codec,
    pick_version,
)
from streamrt.wire.codec import build

__all__ = (
    "API_VERSIONS_KEY",
    "AdminConnectionError",
    "AdminTimeoutError",
    "BrokerConnection",
    "UnsupportedVersionError",
    "client_codec",
    "pick_version",
)

logger = logging.getLogger(__name__)

API_VERSIONS_KEY = ApiKey.API_VERSIONS
_API_VERSIONS_PREFERRED = 3  # the version Java clients of Kafka 2.4+ send first
_SIZE = struct.Struct(">i")
_CORRELATION_ID = struct.Struct(">i")
_MAX_FRAME_BYTES = 100 * 1024 * 1024


class AdminConnectionError(StreamrtError):
    """The broker is unreachable, closed the connection, or broke the protocol."""


class AdminTimeoutError(AdminConnectionError, TimeoutError):
    """A broker did not answer within the request timeout (the connection is then closed)."""


@dataclasses.dataclass(slots=True)
class _Pending:
    correlation_id: int
    api_key: int
    decode: Callable[[bytes], Any]
    future: asyncio.Future[Any]


class BrokerConnection:
    """A pipelined request/response connection to one broker.

    Responsibilities: framing, correlation ids, in-order matching, request timeouts, and the
    broker's API version ranges (:attr:`broker_versions`). Owns its reader task: ``close()``
    cancels and awaits it, and fails every pending request.
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        address: str,
        client_id: str,
        request_timeout: float,
    ) -> None:
        self.address = address
        self.client_id = client_id
        self.request_timeout = request_timeout
        self.broker_versions: dict[int, tuple[int, int]] = {}
        self._reader = reader
        self._writer = writer
        self._pending: collections.deque[_Pending] = collections.deque()
        self._correlation_ids = itertools.count(1)
        self._closed: BaseException | None = None
        self._read_task = asyncio.create_task(self._read_loop(), name=f"admin-conn-{address}")

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        *,
        client_id: str = "streamrt-admin",
        request_timeout: float = 30.0,
        security: AdminSecurity | None = None,
    ) -> BrokerConnection:
        """Connect (over TLS if ``security`` has a context), negotiate API versions, then
        authenticate with SASL if configured; raise :class:`AdminConnectionError` on failure."""
        address = f"{host}:{port}"
        security = security or AdminSecurity()
        tls = security.ssl_context
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(
                    host, port, ssl=tls, server_hostname=host if tls is not None else None
                ),
                request_timeout,
            )
        except ssl.SSLError as exc:
            raise AdminConnectionError(f"TLS handshake with {address} failed: {exc}") from exc
        except (OSError, TimeoutError) as exc:
            reason = str(exc) or "timed out"
            raise AdminConnectionError(f"cannot connect to {address}: {reason}") from exc
        conn = cls(
            reader, writer, address=address, client_id=client_id, request_timeout=request_timeout
        )
        try:
            await conn._negotiate_api_versions()
            if security.sasl is not None:
                await authenticate(conn, security.sasl)
        except BaseException:
            await conn.close()
            raise
        return conn

    @property
    def closed(self) -> bool:
        return self._closed is not None

    def version_for(self, api_key: int, *, min_version: int = 0, max_version: int = 32767) -> int:
        return pick_version(
            self.broker_versions, api_key, min_version=min_version, max_version=max_version
        )

    async def call(
        self,
        api_key: int,
        *,
        min_version: int = 0,
        max_version: int = 32767,
        response_timeout: float | None = None,
        **request_fields: Any,
    ) -> Any:
        """Send one request at the best common version, built from a superset of fields.

        Returns the kio response entity; its ``__version__`` tells which version was used.
        ``response_timeout`` (seconds) is ours; a ``timeout`` field belongs to the request.
        """
        version = self.version_for(api_key, min_version=min_version, max_version=max_version)
        codec = client_codec(api_key, version)
        request = build(codec.request_cls, **request_fields)
        return await self.send(codec, request, codec.decode_response, timeout=response_timeout)

    async def send(
        self,
        codec: ClientCodec,
        request: Any,
        decode: Callable[[bytes], Any],
        *,
        timeout: float | None = None,
    ) -> Any:
        """Write one frame and await its response, parsed by ``decode(payload)``."""
        if self._closed is not None:
            raise AdminConnectionError(f"connection to {self.address} is closed") from self._closed
        correlation_id = next(self._correlation_ids)
        frame = codec.encode_request(correlation_id, self.client_id, request)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        # Append and write in one synchronous step so the FIFO matches the byte order.
        self._pending.append(_Pending(correlation_id, codec.api_key, decode, future))
        self._writer.write(frame)
        limit = self.request_timeout if timeout is None else timeout
        try:
            await self._writer.drain()
            return await asyncio.wait_for(asyncio.shield(future), limit)
        except TimeoutError:
            exc = AdminTimeoutError(
                f"{api_name(codec.api_key)} v{codec.version} to {self.address}: "
                f"no response within {limit:g} s"
            )
            # Kafka clients disconnect on a request timeout; later responses would be stale.
            await self._shutdown(exc)
            raise exc from None
        except (ConnectionError, OSError) as exc:
            error = AdminConnectionError(f"connection to {self.address} failed: {exc}")
            await self._shutdown(error)
            raise error from exc

    async def close(self) -> None:
        await self._shutdown(AdminConnectionError(f"connection to {self.address} closed"))

    async def _shutdown(self, cause: BaseException) -> None:
        if self._closed is None:
            self._closed = cause
        self._fail_pending(self._closed)
        self._read_task.cancel()
        # gather re-raises only our own cancellation, not the reader's end.
        await asyncio.gather(self._read_task, return_exceptions=True)
        self._writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self._writer.wait_closed()

    def _fail_pending(self, cause: BaseException) -> None:
        while self._pending:
            pending = self._pending.popleft()
            if not pending.future.done():
                pending.future.set_exception(
                    AdminConnectionError(f"{api_name(pending.api_key)} to {self.address}: {cause}")
                )
                pending.future.exception()  # a caller that timed out will never retrieve it

    async def _read_loop(self) -> None:
        try:
            while True:
                size = _SIZE.unpack(await self._reader.readexactly(4))[0]
                if not 4 <= size <= _MAX_FRAME_BYTES:
                    raise AdminConnectionError(f"bad frame size {size} from {self.address}")
                payload = await self._reader.readexactly(size)
                self._dispatch(payload)
        except asyncio.CancelledError:
            raise
        except asyncio.IncompleteReadError:
            self._closed = self._closed or AdminConnectionError(
                f"{self.address} closed the connection"
            )
        except (ConnectionError, OSError) as exc:
            self._closed = self._closed or AdminConnectionError(
                f"connection to {self.address} failed: {exc}"
            )
        except AdminConnectionError as exc:
            self._closed = self._closed or exc
        self._fail_pending(self._closed or AdminConnectionError("closed"))

    def _dispatch(self, payload: bytes) -> None:
        correlation_id = _CORRELATION_ID.unpack_from(payload, 0)[0]
        if not self._pending or self._pending[0].correlation_id != correlation_id:
            expected = self._pending[0].correlation_id if self._pending else None
            raise AdminConnectionError(
                f"{self.address} answered correlation id {correlation_id}, expected {expected}"
            )
        pending = self._pending.popleft()
        if pending.future.done():  # the caller gave up; the frame is consumed all the same
            return
        try:
            pending.future.set_result(pending.decode(payload))
        except Exception as exc:
            pending.future.set_exception(
                AdminConnectionError(
                    f"cannot decode the {api_name(pending.api_key)} response from "
                    f"{self.address}: {exc!r}"
                )
            )

    async def _negotiate_api_versions(self) -> None:
        codec = client_codec(API_VERSIONS_KEY, _API_VERSIONS_PREFERRED)
        request = build(
            codec.request_cls,
            client_software_name="streamrt-admin",
            client_software_version=_client_version(),
        )
        response = await self.send(codec, request, _decode_api_versions(codec))
        if response.error_code == ErrorCode.unsupported_version:
            # A broker that does not know our ApiVersions version answers with a v0 body.
            logger.debug(
                "ApiVersions v3 unsupported, retrying v0", extra=fields(broker=self.address)
            )
            codec = client_codec(API_VERSIONS_KEY, 0)
            response = await self.send(codec, build(codec.request_cls), _decode_api_versions(codec))
        if response.error_code != ErrorCode.none:
            code = ErrorCode(response.error_code).name.upper()
            raise AdminConnectionError(f"ApiVersions to {self.address} failed: {code}")
        self.broker_versions = {
            int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys
        }


def _decode_api_versions(codec: ClientCodec) -> Callable[[bytes], Any]:
    """Parse an ApiVersions response, or its v0 form when the broker rejected our version."""
    v0 = client_codec(API_VERSIONS_KEY, 0)

    def decode(payload: bytes) -> Any:
        try:
            response = codec.decode_response(payload)
        except Exception:  # a v0 body does not parse as v3 (kio raises various errors)
            response = None
        if response is not None and response.error_code != ErrorCode.unsupported_version:
            return response
        return v0.decode_response(payload)

    return decode


def _client_version() -> str:
    try:
        from importlib.metadata import version

        return version("streamrt")
    except Exception:
        return "0"
