"""The streams-group coordinator as a pure state machine (the streams part of Kafka's
``GroupMetadataManager``): StreamsGroupHeartbeat, static members, session and rebalance
timeouts, the member checks of OffsetCommit/OffsetFetch, StreamsGroupDescribe's view.

No sockets, no asyncio, no wall clock: timeouts come from the injected ``Timer`` (whose ops
return a ``Result`` like the other coordinators'), the topics from an injected ``topics()``
(name -> partition count), topic sizing and task assignment from ``planning``. Every step that
changes a group returns its ``__consumer_offsets`` records; ``replay`` rebuilds groups at load.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from typing import TypeVar

from streamrt.broker.modern_group.coordinator import (
    MemberHeartbeat,
    ModernGroupCoordinator,
    Records,
    Timer,
)
from streamrt.broker.streams_group import persist, planning, steps
from streamrt.broker.streams_group.endpoints import partitions_by_endpoint
from streamrt.broker.streams_group.group import Status, StreamsGroup
from streamrt.broker.streams_group.member import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    MemberState,
    StreamsMember,
    Tasks,
)
from streamrt.broker.streams_group.members import apply_fields, check_epoch, check_tasks
from streamrt.broker.streams_group.reconcile import reconcile
from streamrt.broker.streams_group.requests import (
    StreamsHeartbeatAnswer,
    StreamsHeartbeatRequest,
    validate,
)
from streamrt.broker.streams_group_config import StreamsGroupConfig
from streamrt.errors import ErrorCode, KafkaError

__all__ = ("SHUTDOWN_APPLICATION", "STALE_TOPOLOGY", "StreamsGroupCoordinator")

logger = logging.getLogger(__name__)
Topics = Callable[[], Mapping[str, int]]
_T = TypeVar("_T")

#: StreamsGroupHeartbeatResponse status codes (KIP-1071)
STALE_TOPOLOGY = 0
SHUTDOWN_APPLICATION = 4


class StreamsGroupCoordinator(ModernGroupCoordinator[StreamsGroup, StreamsMember]):
    kind = "streams"
    config: StreamsGroupConfig

    def __init__(
        self,
        config: StreamsGroupConfig,
        timer: Timer,
        topics: Topics,
    ) -> None:
        self.config = config
        self.timer = timer
        self.topics = topics
        self.groups: dict[str, StreamsGroup] = {}

    # -- persistence -----------------------------------------------------------------------------

    def _tracked(self, group_id: str, op: Callable[[], _T]) -> tuple[_T, Records]:
        """Run ``op`` and return the records of what it changed in the group."""
        before = persist.image(self.groups.get(group_id))
        out = op()
        after = persist.image(self.groups.get(group_id))
        return out, persist.records_between(group_id, before, after)

    def snapshot(self, group_id: str) -> StreamsGroup | None:
        """A copy of the group to :meth:`restore`: all of it, not only what is persisted (the
        shutdown request, the endpoint epoch, the sizing and the counters live in memory)."""
        group = self.groups.get(group_id)
        return None if group is None else group.copy()

    def restore(self, group_id: str, before: StreamsGroup | None) -> None:
        """Undo a step whose records could not be appended (a storage error)."""
        self.groups.pop(group_id, None)
        if before is not None:
            self.groups[group_id] = before
            self.rearm_timers(group_id)

    def replay(self, key: bytes, value: bytes | None) -> bool:
        """Apply one ``__consumer_offsets`` record if it is a streams-group one (True)."""
        return persist.replay(self.groups, key, value)

    def on_loaded(self) -> None:
        """After load: every member's session timer starts afresh (and the rebalance timer of
        one still revoking), as Kafka's ``onLoaded``; topics are sized again, and taken as they
        are now (a change while the broker was down bumps the epoch at the next change)."""
        topics = self.topics()
        for group in self.groups.values():
            try:
                steps.configure(group, topics)
            except KafkaError as exc:  # kept as loaded; the next heartbeat reports it
                logger.warning("streams group %s: %s", group.group_id, exc)
            group.metadata = group.metadata_of(topics)  # the hash is not reversible: as now
            self._start_timers(group)

    # -- StreamsGroupHeartbeat -----------------------------------------------------------------

    def heartbeat(
        self, req: StreamsHeartbeatRequest, other_group: bool = False
    ) -> StreamsHeartbeatAnswer:
        """One heartbeat; errors come back in the answer (the group is left unchanged), the
        records of a change with it. ``other_group``: the id is taken by a group of another
        type (classic or consumer)."""
        current = self.groups.get(req.group_id)
        before = None if current is None else current.copy()
        try:
            validate(req)
            if other_group and before is None:
                raise KafkaError(
                    ErrorCode.group_id_not_found, f"Group {req.group_id} is not a streams group."
                )
            if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                answer, records = self._tracked(req.group_id, lambda: self._leave(req))
            else:
                answer, records = self._tracked(req.group_id, lambda: self._heartbeat(req))
            return dataclasses.replace(answer, records=records)
        except KafkaError as exc:
            self.groups.pop(req.group_id, None)  # errors leave the group as it was
            if before is not None:
                self.groups[req.group_id] = before
                self.rearm_timers(req.group_id)  # a member the refused step fenced
            return StreamsHeartbeatAnswer(
                exc.code, str(exc.args[0]) if exc.args else None, req.member_id
            )

    def _group(self, group_id: str, create: bool) -> StreamsGroup:
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if not create:
            raise KafkaError(ErrorCode.group_id_not_found, f"Streams group {group_id} not found.")
        group = StreamsGroup(group_id)
        self.groups[group_id] = group
        return group

    def _heartbeat(self, req: StreamsHeartbeatRequest) -> StreamsHeartbeatAnswer:
        joining = req.member_epoch == 0
        group = self._group(req.group_id, joining)
        replaced: StreamsMember | None = None
        if req.instance_id is not None:
            member, replaced = self._static_member(group, req, req.member_id)
        else:
            member = self._dynamic_member(group, req, req.member_id)
        updated = apply_fields(member, req)
        bump = self._member_changed(group, member, updated, replaced, joining)
        # every check that can refuse the heartbeat runs before a replaced member goes
        bump = steps.update_topology(group, req) or bump
        topics = self.topics()
        configured = steps.configure(group, topics)
        if configured.ready:
            check_tasks(req.owned, configured.tasks)
        if replaced is not None:
            self._take_over(group, replaced, updated.member_id)
        group.put(updated)
        status: list[Status] = []
        bump = steps.metadata_changed(group, configured, topics, self._standbys(group)) or bump
        if bump:
            group.group_epoch += 1
        if group.group_epoch > group.assignment_epoch:
            steps.compute_target(group, configured)
        final = reconcile(
            updated,
            group.assignment_epoch,
            group.target.get(updated.member_id) or _EMPTY,
            group.owners(),
            req.owned,
        )
        group.put(final)
        self._after_reconcile(group, updated, final)
        if req.shutdown_application:
            group.shutdown_requested_by = final.member_id
        return self._answer(group, req, member, final, configured, status)

    def _member_changed(
        self,
        group: StreamsGroup,
        old: StreamsMember,
        new: StreamsMember,
        replaced: StreamsMember | None,
        joining: bool,
    ) -> bool:
        """Kafka's ``hasStreamsMemberMetadataChanged``. A static member taking its own place
        over bumps only if what the assignor reads changed (process, rack, tags, topology)."""
        if joining and replaced is None and new.member_id not in group.members:
            return True
        if replaced is not None or new.instance_id is not None:
            return _assignor_view(old) != _assignor_view(new)
        return new != old

    def _answer(
        self,
        group: StreamsGroup,
        req: StreamsHeartbeatRequest,
        before: StreamsMember,
        final: StreamsMember,
        configured: planning.Configured,
        status: list[Status],
    ) -> StreamsHeartbeatAnswer:
        send = req.member_epoch == 0 or not before.assigned.same(final.assigned)
        if send and final.user_endpoint is not None:
            group.endpoint_information_epoch += 1
        by_endpoint = None
        if group.endpoint_information_epoch != req.endpoint_information_epoch:
            others = [m for m in group.members.values() if m.member_id != final.member_id]
            by_endpoint = partitions_by_endpoint([*others, final], group.topology, self.topics())
        topology = group.topology
        if topology is not None and final.topology_epoch < topology.epoch:
            status.append(
                (
                    STALE_TOPOLOGY,
                    f"The member's topology epoch {final.topology_epoch} is behind the "
                    f"group's topology epoch {topology.epoch}.",
                )
            )
        status.extend(configured.status)
        if group.shutdown_requested_by is not None:
            status.append(
                (
                    SHUTDOWN_APPLICATION,
                    f"Streams group member {group.shutdown_requested_by} encountered a fatal "
                    "error and requested a shutdown for the entire application.",
                )
            )
        return StreamsHeartbeatAnswer(
            ErrorCode.none,
            None,
            final.member_id,
            final.member_epoch,
            self.config.heartbeat_interval_ms,
            self.config.acceptable_recovery_lag,
            self.config.task_offset_interval_ms,
            tuple(status),
            final.assigned if send else None,
            group.endpoint_information_epoch,
            by_endpoint,
            dict(configured.to_create) if configured.status else {},
        )

    def _new_member(self, member_id: str) -> StreamsMember:
        return StreamsMember(member_id=member_id)

    def _rejoins(self, member: StreamsMember, req: MemberHeartbeat) -> bool:
        """Epoch 0 from a member already at 0 (its topology not ready yet) is no rejoin."""
        return req.member_epoch == 0 and member.member_epoch != 0

    def _check_epoch(self, member: StreamsMember, req: StreamsHeartbeatRequest) -> None:
        check_epoch(member, req)

    def _standbys(self, group: StreamsGroup) -> int:
        """The broker's count for every group (group-level configs are not served)."""
        return self.config.num_standby_replicas

    # -- leaving and fencing -------------------------------------------------------------------

    def _leave(self, req: StreamsHeartbeatRequest) -> StreamsHeartbeatAnswer:
        group = self._group(req.group_id, False)
        self._leave_member(group, req.member_id, req.instance_id, req.member_epoch)
        return StreamsHeartbeatAnswer(ErrorCode.none, None, req.member_id, req.member_epoch)

    def _revoking(self, member: StreamsMember) -> bool:
        return member.state is MemberState.UNREVOKED_TASKS

    def _offset_member_check(
        self, group: StreamsGroup, member: StreamsMember, fetch: bool
    ) -> ErrorCode | None:
        """STREAMS_TOPOLOGY_FENCED for a commit by a member still on an older topology than
        the group's (Kafka's ``StreamsGroup.validateOffsetCommit``)."""
        topology = group.topology
        if not fetch and topology is not None and member.topology_epoch < topology.epoch:
            return ErrorCode.streams_topology_fenced
        return None

    def _keeps_assignment_epochs(self, member: StreamsMember) -> bool:
        return True  # KAFKA-19779: every streams member's active tasks carry them

    def _assignment_epoch(
        self, group: StreamsGroup, member: StreamsMember, topic: str, partition: int
    ) -> int | None:
        """The committed partition's task is (the subtopology reading ``topic``, its
        partition); None if no subtopology reads it or the member does not run it active."""
        for sub in () if group.topology is None else group.topology.subtopologies:
            inputs = set(sub.source_topics) | {t.name for t in sub.repartition_source_topics}
            if topic in inputs:
                return member.assignment_epoch(sub.subtopology_id, partition)
        return None


_EMPTY = Tasks()


def _assignor_view(m: StreamsMember) -> tuple[object, ...]:
    return (m.process_id, m.rack_id, m.client_tags, m.topology_epoch)
