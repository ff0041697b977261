"""What every API handler may use: config, logs, coordinator, this node's address.

Handlers are ``async def handler(core, ctx, request) -> response | None`` functions registered in
an :class:`ApiTable`; ``None`` means "send no response" (Produce with acks=0). The table is the
one source of both ApiVersions' answer and the server's routing, so a version is advertised if
and only if a handler serves it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from streamrt.broker.config import BrokerConfig
from streamrt.broker.fetch_waiters import FetchWaiters
from streamrt.clock import Clock, SystemClock
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import build, codec_for
from streamrt.wire.context import RequestContext

if TYPE_CHECKING:
    from streamrt.broker.group.service import GroupCoordinatorService
    from streamrt.broker.log import LogManager
    from streamrt.broker.security.manager import BrokerSecurity
    from streamrt.broker.txn.service import TransactionCoordinatorService

__all__ = ("ApiEntry", "ApiTable", "BrokerCore", "Handler", "respond")

Handler = Callable[["BrokerCore", RequestContext, Any], Awaitable[Any]]


def respond(ctx: RequestContext, **fields: Any) -> Any:
    """The response entity of the request's API and version, from a superset of fields."""
    return build(codec_for(ctx.api_key, ctx.api_version).response_cls, **fields)


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
    # fetches parked until an append to a partition they wait on (see fetch_waiters)
    data_arrived: FetchWaiters = dataclasses.field(default_factory=FetchWaiters)
    security: BrokerSecurity | None = None
    # listener name -> advertised (host, port); clients are told the listener they came in on
    endpoints: dict[str, tuple[str, int]] = dataclasses.field(default_factory=dict)

    @property
    def node_id(self) -> int:
        return int(self.config["node.id"])

    def endpoint(self, ctx: RequestContext) -> tuple[str, int]:
        """The advertised address of the listener this request arrived on."""
        return self.endpoints.get(ctx.listener, (self.host, self.port))


@dataclasses.dataclass(frozen=True, slots=True)
class ApiEntry:
    api_key: ApiKey
    min_version: int
    max_version: int
    handler: Handler


class ApiTable:
    """api_key → (versions, handler): the one source for ApiVersions and dispatch.

    Each handler family (a module of :mod:`streamrt.broker.handlers`) registers its APIs here;
    registering one key twice is a programming error and raises.
    """

    def __init__(self) -> None:
        self._entries: dict[ApiKey, ApiEntry] = {}

    def register(
        self, api_key: ApiKey, min_version: int, max_version: int, handler: Handler
    ) -> None:
        key = ApiKey(api_key)
        if key in self._entries:
            raise ValueError(f"{key.name} is registered twice")
        if not 0 <= min_version <= max_version:
            raise ValueError(f"{key.name}: bad version range {min_version}-{max_version}")
        self._entries[key] = ApiEntry(key, min_version, max_version, handler)

    def get(self, api_key: int) -> ApiEntry | None:
        try:
            return self._entries.get(ApiKey(api_key))
        except ValueError:  # a number Kafka does not define
            return None

    def entries(self) -> list[ApiEntry]:
        return [self._entries[k] for k in sorted(self._entries)]

    def ranges(self) -> list[tuple[int, int, int]]:
        return [(int(e.api_key), e.min_version, e.max_version) for e in self.entries()]
