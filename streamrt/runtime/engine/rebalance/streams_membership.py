"""A stream thread as a KIP-1071 streams-group member (``group.protocol=streams``).

The same face as :class:`~streamrt.runtime.engine.rebalance.own_membership.StreamrtMembership`
(the classic member), so the thread, its committer and its :class:`MemberListener` run
unchanged: the broker's tasks become partitions (each active task reads partition ``p`` of
its subtopology's source topics) and the thread's :class:`AssignmentInfo` (its tasks, its
standbys, and the group's endpoints for interactive queries). Revoked tasks are committed and
closed by the listener before the member reports them released.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from streamrt.admin.connection import AdminConnectionError
from streamrt.errors import ErrorCode, KafkaError
from streamrt.logs import fields
from streamrt.membership.config import CommitFailedError, FencedInstanceError
from streamrt.membership.requests import COORDINATOR_MOVED
from streamrt.membership.streams_member import (
    ApplicationShutdownError,
    StreamsGroupMember,
    StreamsTaskListener,
)
from streamrt.membership.streams_protocol import (
    EndpointPartitions,
    StreamsIdentity,
    StreamsTasks,
    TaskIds,
)
from streamrt.runtime.engine.assignment.assignor import AssignmentInfo, ClusterThread
from streamrt.runtime.engine.clients.rdkafka_txn import GroupMetadata
from streamrt.runtime.engine.commit.commit import CommitDeferredError, TaskMigratedError
from streamrt.runtime.engine.env import ThreadEnv
from streamrt.runtime.engine.rebalance.group_member import GroupMember
from streamrt.runtime.engine.rebalance.own_membership import member_config
from streamrt.runtime.engine.rebalance.streams_topology import process_id, streams_topology
from streamrt.topic_partition import TopicPartition

__all__ = ("StreamsMembership",)

logger = logging.getLogger(__name__)

_MIGRATED = (ErrorCode.unknown_member_id, ErrorCode.fenced_member_epoch)


class StreamsMembership(StreamsTaskListener):
    """One thread's streams-group member, seen as partitions by the thread's listener."""

    def __init__(
        self, env: ThreadEnv, client_id: str, instance_id: str | None, group: GroupMember
    ) -> None:
        self.env = env
        self.group = group  # holds the AssignmentInfo the thread reads
        self.topology = streams_topology(env)
        cfg = env.config
        self.member = StreamsGroupMember(
            member_config(env, client_id, instance_id),
            self.topology,
            StreamsIdentity(
                process_id(cfg.app_state_dir), _endpoint(cfg.application_server), cfg.client_tags
            ),
            self,
        )
        self._listener: Any = None  # the thread's MemberListener, from start()
        self._partitions: frozenset[TopicPartition] = frozenset()
        self._start: asyncio.Task[None] | None = None
        self._shutdown: str | None = None
        self.rebalancing = False  # commits go at the member epoch at any time
        self.cooperative = True  # only the tasks that move stop

    # -- identity ------------------------------------------------------------------------------

    @property
    def member_id(self) -> str | None:
        return self.member.member_id if self.member.member_epoch > 0 else None

    @property
    def generation(self) -> int:
        return self.member.member_epoch

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions of the active tasks the member owns."""
        return self._partitions

    def group_metadata(self) -> GroupMetadata:
        """A TxnOffsetCommit's identity: the member epoch is the generation (KIP-848/1071)."""
        return GroupMetadata(
            self.member.member_epoch, self.member.member_id, self.member.config.group_instance_id
        )

    # -- lifecycle -----------------------------------------------------------------------------

    async def find_coordinator(self) -> None:
        """Connect to the coordinator; a broker without streams groups is a clear error."""
        await self.member.find_coordinator()

    async def partition_counts(self, subtopologies: Iterable[Any]) -> dict[str, int]:
        """No leader computes an assignment here: no changelog ends to list."""
        return {}

    def start(self, listener: Any) -> None:
        self._listener = listener
        self._start = asyncio.create_task(self.member.start(), name="streamrt-streams-member")

    def raise_if_failed(self) -> None:
        if self._shutdown is not None:
            raise ApplicationShutdownError(f"SHUTDOWN_APPLICATION: {self._shutdown}")
        if self.member.error is not None:
            raise self.member.error

    def request_rejoin(self, reason: str) -> None:
        """The broker decides when tasks move: nothing to ask for (the classic probing
        rebalance has no counterpart here)."""
        logger.debug("rejoin not needed under streams groups", extra=fields(reason=reason))

    async def retire(self) -> None:
        """Stopped for good: leave (-1), or -2 for a static member, whose tasks the broker
        keeps for its return within the session timeout."""
        if self._start is not None:
            self._start.cancel()
            await asyncio.gather(self._start, return_exceptions=True)
        with contextlib.suppress(Exception):
            await self.member.close()

    # -- offsets (GroupOffsets) ----------------------------------------------------------------

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit at the member epoch. STALE_MEMBER_EPOCH while the partitions are still ours
        (the epoch moved on under a heartbeat): sent again with the next commit. A lost
        membership: :class:`TaskMigratedError`."""
        try:
            await self.member.commit({tuple(tp): o for tp, o in offsets.items()})  # type: ignore[misc]
        except CommitFailedError as exc:
            if exc.code == ErrorCode.fenced_instance_id:
                raise FencedInstanceError(self.member.config.group_instance_id, str(exc)) from exc
            if exc.code in _MIGRATED or not set(offsets) <= self._partitions:
                raise TaskMigratedError(f"offset commit refused: {exc}") from exc
            logger.info("offset commit refused, retried later", extra=fields(error=str(exc)))
            raise CommitDeferredError(str(exc)) from exc
        except (AdminConnectionError, TimeoutError) as exc:
            logger.info("offset commit failed, retried later", extra=fields(error=str(exc)))
            raise CommitDeferredError(str(exc)) from exc
        except KafkaError as exc:
            if exc.code not in COORDINATOR_MOVED:
                raise
            raise CommitDeferredError(str(exc)) from exc

    async def committed(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        found = await self.member.committed(list(partitions))
        return {TopicPartition(*tp): offset for tp, offset in found.items()}

    async def check_generation(self) -> None:
        """A fenced member (its loop rejoins at epoch 0) must not commit: migrated."""
        if self.member.member_epoch <= 0 and self._partitions:
            raise TaskMigratedError("the streams group fenced this member")

    async def check_membership(self) -> None:
        self.raise_if_failed()

    async def lose_all(self) -> None:
        """After :class:`TaskMigratedError`: heartbeat now; the broker's answer (UNKNOWN_MEMBER_ID
        or FENCED_MEMBER_EPOCH) makes the member's loop lose the tasks (closed dirty) and
        rejoin at epoch 0, a round trip later rather than a heartbeat interval."""
        self.member.wake()

    # -- the member's callbacks (StreamsTaskListener) -------------------------------------------

    async def on_tasks_revoked(self, revoked: TaskIds) -> None:
        gone = self._partitions_of(revoked)
        self._partitions = self._partitions - gone
        await self._listener.on_partitions_revoked({tuple(tp) for tp in gone})

    async def on_tasks_assigned(self, tasks: StreamsTasks) -> None:
        """Failed (e.g. committed offsets not readable yet): as before, so a retry sees the
        same partitions as new."""
        wanted = self._partitions_of(tasks.active)
        before, info = self._partitions, self.group.assignment_info
        self._partitions = wanted
        self.group.assignment_info = self._info(tasks, self.member.endpoints)
        try:
            await self._listener.on_partitions_assigned({tuple(tp) for tp in wanted - before})
        except BaseException:
            self._partitions, self.group.assignment_info = before, info
            raise

    async def on_tasks_lost(self, lost: StreamsTasks) -> None:
        gone, self._partitions = self._partitions, frozenset()
        await self._listener.on_partitions_lost({tuple(tp) for tp in gone})

    def on_endpoints(self, endpoints: tuple[EndpointPartitions, ...]) -> None:
        info = self.group.assignment_info
        if info is not None:
            self.group.assignment_info = self._info(self.member.owned, endpoints)

    def on_shutdown_requested(self, detail: str) -> None:
        self._shutdown = detail
        self.group.emit("shutdown_application_requested", detail=detail)

    # -- tasks as partitions -------------------------------------------------------------------

    def _partitions_of(self, tasks: TaskIds) -> frozenset[TopicPartition]:
        return frozenset(
            TopicPartition(topic, p)
            for sub, parts in tasks.items()
            for topic in self.topology.source_topics(sub)
            for p in parts
        )

    def _info(
        self, tasks: StreamsTasks, endpoints: tuple[EndpointPartitions, ...]
    ) -> AssignmentInfo:
        return AssignmentInfo(
            tasks=tasks.active_names,
            cluster=self._cluster(tasks, endpoints),
            stores={str(s.id): s.stores for s in self.env.subtopologies},
            standby_tasks=tasks.standby_names,
        )

    def _cluster(
        self, tasks: StreamsTasks, endpoints: tuple[EndpointPartitions, ...]
    ) -> tuple[ClusterThread, ...]:
        """Every endpoint of the group with the tasks behind its partitions; without
        ``application.server`` (no endpoints), this thread alone."""
        own = self.env.config.application_server
        if not endpoints:
            parts = tuple(sorted(self._partitions_of(tasks.active)))
            name = self.member.config.group_instance_id or self.member.member_id
            return (
                ClusterThread(
                    self.env.instance_id, name, own, tasks.active_names, parts, tasks.standby_names
                ),
            )
        out = []
        for e in endpoints:
            server = f"{e.host}:{e.port}"
            instance = self.env.instance_id if server == own else server
            out.append(
                ClusterThread(
                    instance,
                    server,
                    server,
                    self._task_names(e.active),
                    tuple(TopicPartition(*tp) for tp in e.active),
                    self._task_names(e.standby),
                )
            )
        return tuple(out)

    def _task_names(self, partitions: Iterable[tuple[str, int]]) -> tuple[str, ...]:
        subs = {t: str(s.id) for s in self.env.subtopologies for t in s.source_topics}
        return tuple(sorted({f"{subs[t]}_{p}" for t, p in partitions if t in subs}))


def _endpoint(server: str | None) -> tuple[str, int] | None:
    if not server:
        return None
    host, port = server.rsplit(":", 1)
    return host, int(port)
