"""Where to send an admin request: bootstrap, brokers, controller, group coordinators.

Kafka routes group APIs to the group's coordinator, topic creation/deletion to the controller
(Kafka < 2.8 requires it; KRaft brokers forward) and ListOffsets to partition leaders. This
module owns the connections, learns the cluster from Metadata and retries the errors that only
mean "ask again / ask elsewhere", so :mod:`streamrt.admin.client` reads as the operations.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from streamrt.admin.connection import AdminConnectionError, BrokerConnection
from streamrt.admin.security import AdminSecurity
from streamrt.errors import ErrorCode, KafkaError, StreamrtError
from streamrt.logs import fields
from streamrt.wire.api_keys import ApiKey

__all__ = (
    "RETRIABLE",
    "Cluster",
    "NoBrokerAvailableError",
    "check",
    "parse_bootstrap",
)

logger = logging.getLogger(__name__)

_METADATA_MAX = 12  # v13 only adds a top-level error code; v12 is what Kafka 3.x serves
_FIND_COORDINATOR_MAX = 6
_KEY_TYPE_GROUP, _KEY_TYPE_TRANSACTION = 0, 1

T = TypeVar("T")

# Errors that mean the request should be retried, possibly after re-locating the target.
RETRIABLE = frozenset(
    {
        ErrorCode.coordinator_load_in_progress,
        ErrorCode.coordinator_not_available,
        ErrorCode.not_coordinator,
        ErrorCode.not_controller,
        ErrorCode.leader_not_available,
        ErrorCode.not_leader_or_follower,
    }
)


class NoBrokerAvailableError(AdminConnectionError):
    """No bootstrap or known broker accepted a connection (not retried: fail fast)."""


def check(code: Any, what: str, message: str | None = None) -> None:
    """Raise :class:`KafkaError` unless ``code`` is NONE."""
    error = ErrorCode(int(code))
    if error != ErrorCode.none:
        detail = f": {message}" if message else ""
        raise KafkaError(error, f"{what}: {error.name.upper()}{detail}")


def parse_bootstrap(bootstrap_servers: str) -> list[tuple[str, int]]:
    """``"host:port,host2:port2"`` → addresses; ``[::1]:9092`` style IPv6 is accepted."""
    out: list[tuple[str, int]] = []
    for item in bootstrap_servers.split(","):
        item = item.strip()
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        host = host.strip("[]")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise StreamrtError(f"bootstrap server {item!r} is not host:port")
        out.append((host, int(port)))
    if not out:
        raise StreamrtError("bootstrap_servers is empty")
    return out


class Cluster:
    """Connections by broker address, the broker list, the controller and coordinators.

    Owns every connection it opens; ``close()`` closes them all.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        client_id: str,
        request_timeout: float,
        api_timeout: float,
        retry_backoff: float,
        security: AdminSecurity | None = None,
    ) -> None:
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.security = security or AdminSecurity()
        self.client_id = client_id
        self.request_timeout = request_timeout
        self.api_timeout = api_timeout
        self.retry_backoff = retry_backoff
        self.brokers: dict[int, tuple[str, int]] = {}
        self.controller_id = -1
        self.cluster_id: str | None = None
        self._connections: dict[tuple[str, int], BrokerConnection] = {}
        self._coordinators: dict[str, int] = {}

    async def close(self) -> None:
        connections, self._connections = list(self._connections.values()), {}
        await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)

    async def connect(self, address: tuple[str, int]) -> BrokerConnection:
        conn = self._connections.get(address)
        if conn is not None and not conn.closed:
            return conn
        conn = await BrokerConnection.open(
            address[0],
            address[1],
            client_id=self.client_id,
            request_timeout=self.request_timeout,
            security=self.security,
        )
        current = self._connections.get(address)
        if current is not None and not current.closed:
            # another caller connected meanwhile: keep one; the other, dropped open, would
            # leave its read task pending until the garbage collector destroyed it
            await conn.close()
            return current
        self._connections[address] = conn
        return conn

    async def any_broker(self) -> BrokerConnection:
        """An open connection, preferring one we already have, else the first reachable."""
        for conn in self._connections.values():
            if not conn.closed:
                return conn
        candidates = list(self.bootstrap) + [a for a in self.brokers.values()]
        errors: list[str] = []
        for address in candidates:
            try:
                return await self.connect(address)
            except AdminConnectionError as exc:
                errors.append(str(exc))
        raise NoBrokerAvailableError("no broker reachable: " + "; ".join(errors))

    async def node(self, node_id: int) -> BrokerConnection:
        if node_id not in self.brokers:
            await self.refresh_metadata()
        if node_id not in self.brokers:
            raise AdminConnectionError(f"broker {node_id} is not in the cluster metadata")
        return await self.connect(self.brokers[node_id])

    async def metadata(self, topics: list[str] | None) -> Any:
        """A Metadata response for ``topics`` (``None``: all topics; ``[]``: brokers only)."""
        conn = await self.any_broker()
        response = await conn.call(
            ApiKey.METADATA,
            min_version=1,
            max_version=_METADATA_MAX,
            topics=None if topics is None else [{"name": t, "topic_id": None} for t in topics],
            allow_auto_topic_creation=False,
            include_cluster_authorized_operations=False,
            include_topic_authorized_operations=False,
        )
        self.brokers = {int(b.node_id): (str(b.host), int(b.port)) for b in response.brokers}
        self.controller_id = int(response.controller_id)
        self.cluster_id = response.cluster_id
        return response

    async def refresh_metadata(self) -> None:
        await self.metadata([])

    async def controller(self) -> BrokerConnection:
        await self.refresh_metadata()
        if self.controller_id < 0:  # unknown: a broker will forward or answer NOT_CONTROLLER
            return await self.any_broker()
        return await self.node(self.controller_id)

    async def coordinator(self, group_id: str) -> BrokerConnection:
        """The group coordinator's connection (FindCoordinator, cached per group).

        A coordinator that cannot be reached is forgotten before the error is raised, so the
        caller's retry asks FindCoordinator again: its broker may be gone and the group moved to
        another (a Kafka client marks its coordinator unknown on a disconnect). Without this a
        member retried the dead node until its API timeout and its stream thread died.
        """
        node_id = self._coordinators.get(group_id)
        if node_id is None:
            node_id = await self._find_coordinator(group_id)
            self._coordinators[group_id] = node_id
        try:
            return await self.node(node_id)
        except AdminConnectionError:
            self.forget_coordinator(group_id)
            raise

    def known_coordinator(self, group_id: str) -> int:
        """The cached coordinator's node id, or -1."""
        return self._coordinators.get(group_id, -1)

    def forget_coordinator(self, group_id: str) -> None:
        self._coordinators.pop(group_id, None)

    async def transaction_coordinator(self, transactional_id: str) -> BrokerConnection:
        """The transaction coordinator's connection for ``transactional_id`` (not cached:
        asked once per use, as a producer's start asks it)."""
        return await self.node(await self._find_coordinator(transactional_id, transaction=True))

    async def _find_coordinator(self, key: str, *, transaction: bool = False) -> int:
        conn = await self.any_broker()
        response = await conn.call(
            ApiKey.FIND_COORDINATOR,
            min_version=1 if transaction else 0,
            max_version=_FIND_COORDINATOR_MAX,
            key=key,
            key_type=_KEY_TYPE_TRANSACTION if transaction else _KEY_TYPE_GROUP,
            coordinator_keys=[key],
        )
        if response.__version__ >= 4:  # batched: one entry per key
            (entry,) = [c for c in response.coordinators if c.key == key]
        else:
            entry = response
        message = getattr(entry, "error_message", None)
        kind = "transactional id" if transaction else "group"
        check(entry.error_code, f"FindCoordinator for {kind} {key!r}", message)
        node_id = int(entry.node_id)
        self.brokers[node_id] = (str(entry.host), int(entry.port))
        return node_id

    async def retrying(self, what: str, attempt: Callable[[], Awaitable[T]]) -> T:
        """Run ``attempt`` until it succeeds, fails for good, or the API timeout passes.

        Retries :data:`RETRIABLE` Kafka errors and lost connections, with a fixed backoff;
        an attempt is expected to re-locate its target (e.g. after ``forget_coordinator``).
        """
        deadline = time.monotonic() + self.api_timeout
        while True:
            try:
                return await attempt()
            except (KafkaError, AdminConnectionError) as exc:
                if isinstance(exc, KafkaError) and exc.code not in RETRIABLE:
                    raise
                if isinstance(exc, NoBrokerAvailableError):
                    raise
                if time.monotonic() + self.retry_backoff >= deadline:
                    raise
                logger.debug("retrying", extra=fields(what=what, error=str(exc)))
                await asyncio.sleep(self.retry_backoff)
