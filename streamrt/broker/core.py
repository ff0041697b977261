"""What every API handler may use: config, logs, coordinator, this node's address.

Handlers are ``async def handler(core, ctx, request) -> response | None`` functions registered in
an :class:`ApiTable`; ``None`` means "send no response" (Produce with acks=0).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from streamrt.broker.config import BrokerConfig
from streamrt.clock import Clock, SystemClock
from streamrt.wire.codec import build, codec_for
from streamrt.wire.context import RequestContext

if TYPE_CHECKING:
    from streamrt.broker.group.service import GroupCoordinatorService
    from streamrt.broker.log import LogManager
    from streamrt.broker.txn.service import TransactionCoordinatorService

__all__ = ("ApiTable", "BrokerCore", "Handler", "respond")

Handler = Callable[["BrokerCore", RequestContext, Any], Awaitable[Any]]


def respond(ctx: RequestContext, **fields: Any) -> Any:
    """The response entity of the request's API and version, from a superset of fields."""
    return build(codec_for(ctx.api_key, ctx.api_version).response_cls, **fields)


class DataArrived:
    """Wakes long-polling fetches when any partition gets new data (one broker-wide signal)."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def notify(self) -> None:
        self._event.set()
        self._event = asyncio.Event()

    async def wait(self, timeout_s: float) -> None:
        event = self._event
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), timeout_s)


@dataclasses.dataclass
class BrokerCore:
    """The broker's shared state, handed to every handler."""

    config: BrokerConfig
    logs: LogManager
    host: str
    port: int
    cluster_id: str
    clock: Clock = dataclasses.field(default_factory=SystemClock)
    coordinator: GroupCoordinatorService | None = None
    txn: TransactionCoordinatorService | None = None
    data_arrived: DataArrived = dataclasses.field(default_factory=DataArrived)

    @property
    def node_id(self) -> int:
        return int(self.config["node.id"])


@dataclasses.dataclass(frozen=True)
class ApiEntry:
    min_version: int
    max_version: int
    handler: Handler


class ApiTable:
    """api_key → (versions, handler); the one source for ApiVersions and dispatch."""

    def __init__(self) -> None:
        self._entries: dict[int, ApiEntry] = {}

    def register(self, api_key: int, min_version: int, max_version: int, handler: Handler) -> None:
        self._entries[api_key] = ApiEntry(min_version, max_version, handler)

    def get(self, api_key: int) -> ApiEntry | None:
        return self._entries.get(api_key)

    def ranges(self) -> list[tuple[int, int, int]]:
        return [(k, e.min_version, e.max_version) for k, e in sorted(self._entries.items())]
