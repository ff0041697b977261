"""A tiny asyncio Kafka-protocol server answering canned kio responses.

It decodes requests with the broker-side codec (:func:`streamrt.wire.codec.codec_for`), so a
test checks the admin client's real frames, and it isolates the client from the broker's
group logic. Handlers map an API key to ``handler(version, request) -> response | None``
(``None``: never answer, to test timeouts).
"""

from __future__ import annotations

import asyncio
import dataclasses
import struct
import threading
from collections.abc import Callable
from typing import Any

from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import build, codec_for, encode_response

Handler = Callable[[int, Any], Any]

_API_VERSIONS = ApiKey.API_VERSIONS


@dataclasses.dataclass
class Seen:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    request: Any


class FakeBroker:
    """Serve ``handlers`` and advertise ``versions`` ({api_key: (min, max)}) on 127.0.0.1."""

    def __init__(
        self,
        versions: dict[int, tuple[int, int]],
        handlers: dict[int, Handler] | None = None,
        *,
        batch: int = 1,
    ) -> None:
        self.versions = {_API_VERSIONS: (0, 3), 3: (1, 12), 10: (0, 3), **versions}
        self.handlers = {3: self._metadata, 10: self._find_coordinator, **(handlers or {})}
        self.seen: list[Seen] = []
        self.batch = batch  # answer only once this many requests are queued (pipelining)
        self.port = 0
        self._server: asyncio.Server | None = None
        self.correlation_override: int | None = None  # answer with this id (protocol error)
        self._writers: set[asyncio.StreamWriter] = set()

    async def __aenter__(self) -> FakeBroker:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        await self._server.wait_closed()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def requests(self, api_key: int) -> list[Seen]:
        return [s for s in self.seen if s.api_key == api_key]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        queued: list[bytes] = []
        self._writers.add(writer)
        try:
            while True:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                frame = self._answer(await reader.readexactly(size))
                if frame is not None:
                    queued.append(frame)
                if len(queued) >= self.batch:
                    writer.writelines(queued)
                    queued.clear()
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    def _answer(self, payload: bytes) -> bytes | None:
        api_key, version, correlation_id = struct.unpack_from(">hhi", payload, 0)
        low, high = self.versions.get(api_key, (0, -1))
        if api_key == _API_VERSIONS and not low <= version <= high:
            # Kafka answers an unknown ApiVersions version with a v0 body and error 35.
            self.seen.append(Seen(api_key, version, correlation_id, None, None))
            return self._frame(_API_VERSIONS, correlation_id, self._api_versions(0, None, error=35))
        codec = codec_for(api_key, version)
        header, offset = codec.read_header(payload, 0)
        request, _ = codec.read_body(payload, offset)
        self.seen.append(Seen(api_key, version, correlation_id, header.client_id, request))
        if api_key == _API_VERSIONS:
            response = self._api_versions(version, request)
        else:
            response = self.handlers[api_key](version, request)
        if response is None:
            return None
        if self.correlation_override is not None:
            correlation_id = self.correlation_override
        if isinstance(response, bytes):  # a raw payload after the correlation id (hostile)
            body = struct.pack(">i", correlation_id) + response
            return struct.pack(">i", len(body)) + body
        return self._frame(api_key, correlation_id, response, version)

    def _frame(self, api_key: int, correlation_id: int, response: Any, version: int = 0) -> bytes:
        body = b"".join(encode_response(codec_for(api_key, version), correlation_id, response))
        return struct.pack(">i", len(body)) + body

    def _api_versions(self, version: int, _request: Any, error: int = 0) -> Any:
        return build(
            codec_for(_API_VERSIONS, version).response_cls,
            error_code=error,
            throttle_time=0,
            api_keys=[
                {"api_key": k, "min_version": lo, "max_version": hi}
                for k, (lo, hi) in sorted(self.versions.items())
            ],
        )

    def _metadata(self, version: int, request: Any) -> Any:
        return build(
            codec_for(3, version).response_cls,
            throttle_time=0,
            brokers=[{"node_id": 1, "host": "127.0.0.1", "port": self.port, "rack": None}],
            cluster_id="fake",
            controller_id=1,
            topics=[],
        )

    def _find_coordinator(self, version: int, request: Any) -> Any:
        return build(
            codec_for(10, version).response_cls,
            throttle_time=0,
            error_code=0,
            error_message=None,
            node_id=1,
            host="127.0.0.1",
            port=self.port,
        )


def respond(api_key: int, version: int, **fields: Any) -> Any:
    """A response entity for (api_key, version) from a superset of fields."""
    return build(codec_for(api_key, version).response_cls, **fields)


class FakeBrokerThread:
    """A :class:`FakeBroker` on its own loop in a thread, for sync code such as the CLI."""

    def __init__(self, broker: FakeBroker) -> None:
        self.broker = broker
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def __enter__(self) -> FakeBroker:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.broker.__aenter__(), self._loop).result(10)
        return self.broker

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.broker.__aexit__(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
