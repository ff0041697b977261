"""``StreamsGroupMember``: one member of a KIP-1071 streams group, as Kafka Streams'
``StreamsMembershipManager`` and ``StreamsGroupHeartbeatRequestManager`` keep one.

The broker holds the topology and assigns tasks; the member joins at epoch 0 with the
topology, its process id, endpoint and client tags, then heartbeats at the interval the broker
returns. A heartbeat answer may carry new target tasks: the member first commits and closes
the active tasks it must give up (its listener does), then opens the new ones, and reports
what it owns in the next heartbeat, sent at once: the broker hands a task to another member
only once its previous owner reported it released. FENCED_MEMBER_EPOCH and UNKNOWN_MEMBER_ID
lose every task and rejoin at epoch 0. Leaving sends epoch -1, or -2 for a static member
(``group.instance.id``), whose tasks the broker keeps for its return within the session.
One asyncio task runs the loop, so the member's state changes only there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from streamrt.admin.connection import AdminConnectionError, BrokerConnection
from streamrt.errors import ErrorCode, KafkaError
from streamrt.logs import fields
from streamrt.membership.config import FencedInstanceError, MemberConfig, MembershipError
from streamrt.membership.loop import MemberLoop
from streamrt.membership.offsets import GroupOffsetRequests
from streamrt.membership.protocol import TopicPartition
from streamrt.membership.requests import COORDINATOR_MOVED, CoordinatorClient
from streamrt.membership.streams_protocol import (
    SHUTDOWN_APPLICATION,
    STATUS_NAMES,
    EndpointPartitions,
    StreamsIdentity,
    StreamsTasks,
    StreamsTopology,
    TaskIds,
)
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import ms

__all__ = (
    "ApplicationShutdownError",
    "StreamsGroupMember",
    "StreamsTaskListener",
    "UnsupportedStreamsGroupError",
)

logger = logging.getLogger(__name__)

_LEAVE_EPOCH = -1
_STATIC_LEAVE_EPOCH = -2
_LOST = (ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id)
#: a listener's failures to take new tasks that a retry may cure (broker briefly away)
_RETRIABLE = (AdminConnectionError, TimeoutError, KafkaError)
#: how long a static member waits before asking again while its previous incarnation's
#: session still holds the instance id (UNRELEASED_INSTANCE_ID)
_UNRELEASED_RETRY_S = 1.0
NEEDED_BROKER = "Apache Kafka 4.2 or later (streams groups GA; 4.1 with unstable APIs)"
STATIC_BROKER = "Apache Kafka 4.4 (KAFKA-20169)"


class UnsupportedStreamsGroupError(MembershipError):
    """The broker cannot take this member: no streams groups, or no static streams members."""


class ApplicationShutdownError(MembershipError):
    """A member of the group asked for the application's shutdown (SHUTDOWN_APPLICATION)."""


class StreamsTaskListener:
    """What the member tells its owner; every method may be overridden (async)."""

    async def on_tasks_revoked(self, revoked: TaskIds) -> None:
        """Active tasks to give up: commit and close them before this returns."""

    async def on_tasks_assigned(self, tasks: StreamsTasks) -> None:
        """The member's tasks now (after any revocation): open what is new."""

    async def on_tasks_lost(self, lost: StreamsTasks) -> None:
        """The membership is gone: these tasks may already be someone else's (close dirty)."""

    def on_endpoints(self, endpoints: tuple[EndpointPartitions, ...]) -> None:
        """Every endpoint of the group and its partitions (interactive-query routing)."""

    def on_shutdown_requested(self, detail: str) -> None:
        """A member of the group asked the whole application to shut down."""


class StreamsGroupMember(MemberLoop):
    """``member = StreamsGroupMember(config, topology, identity, listener)``, then
    ``await member.start()``: returns once the first assignment is in."""

    def __init__(
        self,
        config: MemberConfig,
        topology: StreamsTopology,
        identity: StreamsIdentity,
        listener: StreamsTaskListener | None = None,
    ) -> None:
        super().__init__(config)
        self.topology = topology
        self.identity = identity
        self.listener = listener or StreamsTaskListener()
        # commits never wait behind a heartbeat on the coordinator connection
        self.offsets_client = CoordinatorClient(config)
        self._offsets = GroupOffsetRequests(self.offsets_client, config.group_id, member_epoch=True)
        self.member_id = str(uuid.uuid4())  # client-generated, as Kafka's (KIP-1082)
        self.member_epoch = 0
        self.owned = StreamsTasks()
        self.endpoints: tuple[EndpointPartitions, ...] = ()
        self._interval_ms = config.heartbeat_interval_ms
        self._endpoint_epoch = 0
        self._report = True  # owned tasks changed since the last heartbeat
        self._retry: StreamsTasks | None = None  # a target the listener could not take yet
        self._statuses: tuple[tuple[int, str], ...] = ()
        self._shutdown = False

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the heartbeat loop and wait for the first assignment (or the loop's failure)."""
        await self._start_loop(f"streams-member-{self.member_id}")

    def request_shutdown(self) -> None:
        """Ask every member of the application to shut down (SHUTDOWN_APPLICATION)."""
        self._shutdown = True
        self._wake.set()

    def wake(self) -> None:
        """Heartbeat now (e.g. the owner wants its reported tasks to go out at once)."""
        self._wake.set()

    async def close(self) -> None:
        """Stop the loop and leave: epoch -1, or -2 for a static member (its tasks wait for
        its return within the session timeout). The owner closed its tasks already."""
        await self._stop_loop()
        try:
            if self.member_epoch > 0 and self.error is None:
                epoch = _STATIC_LEAVE_EPOCH if self.config.static else _LEAVE_EPOCH
                with contextlib.suppress(KafkaError, AdminConnectionError, TimeoutError):
                    await self._send(self._leave_fields(epoch))
        finally:
            await self.client.close()
            await self.offsets_client.close()

    async def find_coordinator(self) -> None:
        """Connect to the group coordinator and check that it offers streams groups."""
        _check_offered(await self.client.cluster.coordinator(self.config.group_id))

    # -- the loop ----------------------------------------------------------------------------

    async def _step(self) -> None:
        if self._retry is not None:
            await self._reconcile(self._retry)
        await self._heartbeat()
        retrying = self._retry is not None
        await self._sleep((self.config.retry_backoff_ms if retrying else self._interval_ms) / 1000)

    async def _lose(self, why: str) -> None:
        lost, self.owned = self.owned, StreamsTasks()
        self.member_epoch = 0
        self._report = True
        if lost.active or lost.standby or lost.warmup:
            logger.warning("tasks lost", extra=fields(why=why, tasks=list(lost.active_names)))
            await self.listener.on_tasks_lost(lost)

    # -- one heartbeat ---------------------------------------------------------------------

    def _leave_fields(self, epoch: int) -> dict[str, Any]:
        return {**self._fields(joining=False), "member_epoch": epoch}

    def _fields(self, *, joining: bool) -> dict[str, Any]:
        c = self.config
        out: dict[str, Any] = {
            "group_id": c.group_id,
            "member_id": self.member_id,
            "member_epoch": self.member_epoch,
            "endpoint_information_epoch": self._endpoint_epoch,
            "instance_id": c.group_instance_id,
            "rack_id": c.client_rack if joining else None,
            "rebalance_timeout": c.rebalance_timeout_ms if joining else -1,
            "topology": self.topology.wire() if joining else None,
            "process_id": None,
            "user_endpoint": None,
            "client_tags": None,
            "active_tasks": None,
            "standby_tasks": None,
            "warmup_tasks": None,
            "task_offsets": None,
            "task_end_offsets": None,
            "shutdown_application": self._shutdown,
        }
        if joining:
            out.update(self.identity.wire())
        if joining or self._report:
            out.update(self.owned.wire())
            out["warmup_tasks"] = []  # Kafka 4.3 refuses reported warm-ups: held as standbys
        return out

    async def _send(self, request: Mapping[str, Any]) -> Any:
        conn = await self.client.cluster.coordinator(self.config.group_id)
        _check_offered(conn)
        return await conn.call(ApiKey.STREAMS_GROUP_HEARTBEAT, max_version=0, **request)

    async def _heartbeat(self) -> None:
        joining = self.member_epoch == 0
        reported = joining or self._report
        response = await self._send(self._fields(joining=joining))
        code = ErrorCode(int(response.error_code))
        if code != ErrorCode.none:
            await self._on_error(code, response.error_message)
            return
        if reported:
            self._report = False
        self.member_epoch = int(response.member_epoch)
        if ms(response.heartbeat_interval) > 0:
            self._interval_ms = ms(response.heartbeat_interval)
        self._on_statuses(response.status or ())
        if response.partitions_by_user_endpoint is not None:
            self._endpoint_epoch = int(response.endpoint_information_epoch)
            self.endpoints = EndpointPartitions.from_response(response.partitions_by_user_endpoint)
            self.listener.on_endpoints(self.endpoints)
        if response.active_tasks is not None:
            await self._reconcile(StreamsTasks.from_response(response))
        elif joining:
            await self._reconcile(StreamsTasks())

    async def _reconcile(self, target: StreamsTasks) -> None:
        """Give up what the target drops (committed and closed by the listener), then take
        the target; the next heartbeat, sent at once, reports what is owned now. Taking it
        may fail for a while (e.g. committed offsets not readable): retried, while the
        heartbeats report only what is owned."""
        self._retry = None
        if target.same(self.owned) and self._first_assignment.is_set():
            return
        revoked = {
            sub: parts - target.active.get(sub, frozenset())
            for sub, parts in self.owned.active.items()
            if parts - target.active.get(sub, frozenset())
        }
        if revoked:
            await self.listener.on_tasks_revoked(revoked)
            kept = {s: p - revoked.get(s, frozenset()) for s, p in self.owned.active.items()}
            self.owned = StreamsTasks(
                {s: p for s, p in kept.items() if p}, self.owned.standby, self.owned.warmup
            )
            self._report = True
        _log_tasks(self.member_epoch, target, revoked)
        try:
            await self.listener.on_tasks_assigned(target)
        except _RETRIABLE as exc:
            logger.warning("tasks not taken yet, retrying", extra=fields(error=repr(exc)))
            self._retry = target
            return
        self.owned = target
        self.rebalances += 1
        self._report = True
        self._wake.set()
        self._first_assignment.set()

    def _on_statuses(self, statuses: Iterable[Any]) -> None:
        """Log each new status as Kafka Streams does (errors for what stops processing)."""
        now = tuple((int(s.status_code), str(s.status_detail)) for s in statuses)
        if now == self._statuses:
            return
        self._statuses = now
        for code, detail in now:
            name = STATUS_NAMES.get(code, f"status {code}")
            if code == SHUTDOWN_APPLICATION:
                logger.error("%s: %s", name, detail, extra=fields(status=name))
                self.listener.on_shutdown_requested(detail)
            elif name in ("MISSING_SOURCE_TOPICS", "INCORRECTLY_PARTITIONED_TOPICS"):
                logger.error("%s: %s", name, detail, extra=fields(status=name))
            else:
                logger.warning("%s: %s", name, detail, extra=fields(status=name))

    async def _on_error(self, code: ErrorCode, message: str | None) -> None:
        what = f"StreamsGroupHeartbeat {self.config.group_id}: {code.name.upper()}"
        detail = f"{what}: {message}" if message else what
        if code in _LOST:
            await self._lose(code.name.upper())  # and rejoin at epoch 0 at once
            self._wake.set()
        elif code in COORDINATOR_MOVED:
            raise KafkaError(code, detail)
        elif code == ErrorCode.unreleased_instance_id:
            logger.warning("waiting for the previous incarnation", extra=fields(error=detail))
            await asyncio.sleep(_UNRELEASED_RETRY_S)
        elif code == ErrorCode.fenced_instance_id:
            raise FencedInstanceError(self.config.group_instance_id, what)
        elif code == ErrorCode.unsupported_version:
            raise UnsupportedStreamsGroupError(
                f"{detail}; group.protocol=streams needs {NEEDED_BROKER} with streams groups "
                "enabled, or set group.protocol=classic"
            )
        elif code == ErrorCode.invalid_request and self.config.static and _static_refused(message):
            raise UnsupportedStreamsGroupError(
                f"{detail}; this broker does not take static members (group.instance.id="
                f"{self.config.group_instance_id!r}) in streams groups: they arrive with "
                f"{STATIC_BROKER}. Unset group.instance.id, or use group.protocol=classic"
            )
        else:
            raise MembershipError(detail)

    # -- offsets -----------------------------------------------------------------------------

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """OffsetCommit at the current member epoch (v9+); refused: :class:`CommitFailedError`."""
        await self._offsets.commit(self.member_epoch, self.member_id, offsets)

    async def committed(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return await self._offsets.committed(partitions)


def _check_offered(conn: BrokerConnection) -> None:
    """A broker older than streams groups does not list API 88 in its ApiVersions."""
    if ApiKey.STREAMS_GROUP_HEARTBEAT not in conn.broker_versions:
        raise UnsupportedStreamsGroupError(
            "group.protocol=streams: the broker does not offer StreamsGroupHeartbeat "
            f"(API key 88); streams groups (KIP-1071) need {NEEDED_BROKER}, or set "
            "group.protocol=classic"
        )


def _log_tasks(epoch: int, target: StreamsTasks, revoked: TaskIds) -> None:
    logger.info(
        "streams group tasks",
        extra=fields(
            epoch=epoch,
            active=list(target.active_names),
            standby=list(target.standby_names),
            revoked=[f"{s}_{p}" for s, ps in sorted(revoked.items()) for p in sorted(ps)],
        ),
    )


def _static_refused(message: str | None) -> bool:
    return message is not None and "static" in message.lower()
