"""Join and sync phases, member liveness, and the group record: the engine under the handlers.

Mirrors the private half of Kafka's ``GroupMetadataManager`` for classic groups
(``prepareRebalance``, ``completeClassicGroupJoin``, ``tryCompleteInitialRebalanceElseSchedule``,
``expireClassicGroupMemberHeartbeat``, ``expirePendingSync``, ``propagateAssignment``). Handlers
and timer ops call into it; replies and records go to the shared :class:`Outbox`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping

from streamrt.broker.config import BrokerConfig
from streamrt.broker.coordination.result import Result
from streamrt.broker.group.group import ClassicGroup, Member
from streamrt.broker.group.outbox import Outbox
from streamrt.broker.group.records import (
    CoordinatorRecord,
    GroupMetadataValue,
    MemberMetadata,
    group_metadata_record,
)
from streamrt.broker.group.state import GroupState
from streamrt.broker.group.timer import Timer, heartbeat_key, join_key, sync_key
from streamrt.clock import Clock
from streamrt.errors import ErrorCode
from streamrt.logs import fields

__all__ = ("GroupConfig", "RebalanceEngine")

logger = logging.getLogger(__name__)

_STABLE_OR_COMPLETING = (GroupState.STABLE, GroupState.COMPLETING_REBALANCE)


@dataclasses.dataclass(frozen=True, slots=True)
class GroupConfig:
    """The broker configs the coordinator reads, in milliseconds."""

    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3000
    max_size: int = 2**31 - 1
    offsets_retention_ms: int = 10080 * 60_000
    offsets_retention_check_interval_ms: int = 600_000
    #: Kafka's fixed ``CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS``.
    new_member_join_timeout_ms: int = 300_000
    #: Kafka's ``offset.metadata.max.bytes`` default.
    offset_metadata_max_bytes: int = 4096

    @classmethod
    def from_broker(cls, config: BrokerConfig) -> GroupConfig:
        return cls(
            min_session_timeout_ms=config["group.min.session.timeout.ms"],
            max_session_timeout_ms=config["group.max.session.timeout.ms"],
            initial_rebalance_delay_ms=config["group.initial.rebalance.delay.ms"],
            max_size=config["group.max.size"],
            offsets_retention_ms=config["offsets.retention.minutes"] * 60_000,
            offsets_retention_check_interval_ms=config["offsets.retention.check.interval.ms"],
        )


class RebalanceEngine:
    """Runs rebalances of the groups in ``groups``; ``step`` wraps a timer op into a Result."""

    def __init__(
        self,
        groups: Mapping[str, ClassicGroup],
        config: GroupConfig,
        clock: Clock,
        timer: Timer,
        out: Outbox,
    ) -> None:
        self.groups = groups
        self.config = config
        self.clock = clock
        self.timer = timer
        self.out = out
        #: group id -> completed join phases, exported as a metric.
        self.rebalances_total: dict[str, int] = {}

    def step(self, op: Callable[[], None]) -> Callable[[], Result]:
        def run() -> Result:
            op()
            return self.out.drain()

        return run

    # -- records ----------------------------------------------------------------------------

    def group_record(
        self, group: ClassicGroup, assignment: Mapping[str, bytes]
    ) -> CoordinatorRecord:
        """Kafka's ``newGroupMetadataRecord``; member subscriptions are for the chosen protocol."""
        members = tuple(
            MemberMetadata(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms,
                subscription=m.metadata(group.protocol_name),
                assignment=assignment.get(m.member_id, b""),
            )
            for m in group.members.values()
        )
        value = GroupMetadataValue(
            protocol_type=group.protocol_type or "",
            generation=group.generation_id,
            protocol=group.protocol_name,
            leader=group.leader_id,
            current_state_timestamp=(
                -1 if group.current_state_timestamp is None else group.current_state_timestamp
            ),
            members=members,
        )
        return group_metadata_record(group.group_id, value)

    # -- liveness ---------------------------------------------------------------------------

    def reschedule_heartbeat(self, group: ClassicGroup, member: Member, delay_ms: int = -1) -> None:
        """Restart the member's session timer (``delay_ms`` defaults to its session timeout)."""
        delay = member.session_timeout_ms if delay_ms < 0 else delay_ms
        gid, mid = group.group_id, member.member_id
        self.timer.schedule(
            heartbeat_key(gid, mid), delay, self.step(lambda: self.expire_heartbeat(gid, mid))
        )

    def schedule_pending_member(self, group: ClassicGroup, member_id: str, delay_ms: int) -> None:
        gid = group.group_id
        self.timer.schedule(
            heartbeat_key(gid, member_id),
            delay_ms,
            self.step(lambda: self.expire_heartbeat(gid, member_id)),
        )

    def expire_heartbeat(self, group_id: str, member_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return
        if group.is_pending(member_id):
            logger.info("pending member expired", extra=fields(group=group_id, member=member_id))
            group.remove(member_id)
            if group.is_in(GroupState.PREPARING_REBALANCE) and group.has_all_members_joined():
                self.complete_join(group)
            return
        member = group.members.get(member_id)
        if member is None:
            return
        satisfied = not member.is_new and (
            member.awaiting_join is not None or member.awaiting_sync is not None
        )
        if not satisfied:
            logger.info("member session expired", extra=fields(group=group_id, member=member_id))
            self.remove_member_and_update(group, member)

    def remove_member_and_update(self, group: ClassicGroup, member: Member) -> None:
        """Kafka's ``removeMemberAndUpdateClassicGroup``."""
        self.out.complete_join(member, ErrorCode.unknown_member_id, "")
        group.remove(member.member_id)
        if group.is_in(*_STABLE_OR_COMPLETING):
            self.maybe_prepare_rebalance_or_complete_join(group)
        elif group.is_in(GroupState.PREPARING_REBALANCE) and group.has_all_members_joined():
            self.complete_join(group)

    def remove_current_member(self, group: ClassicGroup, member_id: str) -> None:
        """LeaveGroup removal: cancel the session timer, answer a parked JoinGroup with 25."""
        member = group.members[member_id]
        self.timer.cancel(heartbeat_key(group.group_id, member_id))
        self.out.complete_join(member, ErrorCode.unknown_member_id, "")
        group.remove(member_id)

    # -- join phase -------------------------------------------------------------------------

    def maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup) -> None:
        if group.can_rebalance():
            self.prepare_rebalance(group)
        else:
            self.maybe_complete_join_phase(group)

    def maybe_complete_join_phase(self, group: ClassicGroup) -> None:
        """Outside the initial-delay window, complete once everyone is awaiting join."""
        if (
            group.is_in(GroupState.PREPARING_REBALANCE)
            and group.has_all_members_joined()
            and group.previous_state is not GroupState.EMPTY
        ):
            self.complete_join(group)

    def prepare_rebalance(self, group: ClassicGroup) -> None:
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            self.reset_and_propagate_assignment_with_error(group, ErrorCode.rebalance_in_progress)
        self.timer.cancel(sync_key(group.group_id))
        group.pending_sync_members.clear()
        initial = group.is_in(GroupState.EMPTY)
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._schedule_initial_window(group.group_id, delay, remaining)
        group.transition_to(GroupState.PREPARING_REBALANCE, self.clock.now_ms())
        logger.info(
            "preparing to rebalance",
            extra=fields(group=group.group_id, generation=group.generation_id),
        )
        if initial:
            return
        if group.has_all_members_joined():
            self.complete_join(group)
        else:
            self._schedule_join(group)

    def _schedule_join(self, group: ClassicGroup) -> None:
        gid = group.group_id
        self.timer.schedule(
            join_key(gid),
            group.rebalance_timeout_ms(),
            self.step(lambda: self.complete_join_by_id(gid)),
        )

    def _schedule_initial_window(self, group_id: str, delay: int, remaining: int) -> None:
        self.timer.schedule(
            join_key(group_id),
            delay,
            self.step(lambda: self.try_complete_initial_rebalance(group_id, delay, remaining)),
        )

    def try_complete_initial_rebalance(self, group_id: str, delay: int, remaining: int) -> None:
        """Extend the initial window while new members keep arriving (``InitialDelayedJoin``)."""
        group = self.groups.get(group_id)
        if group is None or not group.is_in(GroupState.PREPARING_REBALANCE):
            return
        if group.new_member_added and remaining != 0:
            group.new_member_added = False
            new_delay = min(self.config.initial_rebalance_delay_ms, remaining)
            self._schedule_initial_window(group_id, new_delay, max(remaining - delay, 0))
        else:
            self.complete_join(group)

    def complete_join_by_id(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is not None and group.is_in(GroupState.PREPARING_REBALANCE):
            self.complete_join(group)

    def complete_join(self, group: ClassicGroup) -> None:
        """Kafka's ``completeClassicGroupJoin``: static members that did not rejoin stay."""
        gid = group.group_id
        self.timer.cancel(join_key(gid))
        for member in list(group.members.values()):
            if member.awaiting_join is None and not member.is_static:
                group.remove(member.member_id)
                self.timer.cancel(heartbeat_key(gid, member.member_id))
        if group.is_in(GroupState.DEAD):
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            logger.warning("no member rejoined; extending the join phase", extra=fields(group=gid))
            self._schedule_join(group)
            return
        group.init_next_generation(self.clock.now_ms())
        self.rebalances_total[gid] = self.rebalances_total.get(gid, 0) + 1
        logger.info(
            "join phase completed",
            extra=fields(group=gid, generation=group.generation_id, members=len(group.members)),
        )
        if group.is_in(GroupState.EMPTY):
            self.out.record(self.group_record(group, {}))
            return
        all_members = self.member_list(group)
        for member in group.members.values():
            self.out.complete_join(
                member,
                ErrorCode.none,
                member.member_id,
                generation_id=group.generation_id,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                leader=group.leader_id,
                members=all_members if group.is_leader(member.member_id) else (),
            )
            self.reschedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        generation = group.generation_id
        self.timer.schedule(
            sync_key(gid),
            group.rebalance_timeout_ms(),
            self.step(lambda: self.expire_pending_sync(gid, generation)),
        )

    @staticmethod
    def member_list(group: ClassicGroup) -> tuple[tuple[str, str | None, bytes], ...]:
        """The leader's member list: every member, with metadata of the selected protocol."""
        return tuple(
            (m.member_id, m.group_instance_id, m.metadata(group.protocol_name))
            for m in group.members.values()
        )

    # -- sync phase -------------------------------------------------------------------------

    def expire_pending_sync(self, group_id: str, generation: int) -> None:
        group = self.groups.get(group_id)
        if group is None or group.generation_id != generation:
            return
        if not group.is_in(*_STABLE_OR_COMPLETING) or not group.pending_sync_members:
            return
        laggards = sorted(group.pending_sync_members)
        logger.info("members never synced", extra=fields(group=group_id, members=laggards))
        for member_id in laggards:
            group.remove(member_id)
            self.timer.cancel(heartbeat_key(group_id, member_id))
        self.prepare_rebalance(group)

    def remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            self.timer.cancel(sync_key(group.group_id))

    def propagate_assignment(self, group: ClassicGroup, error: ErrorCode) -> None:
        """Answer every parked SyncGroup and restart the session of each member answered."""
        ok = error is ErrorCode.none
        for member in group.members.values():
            answered = self.out.complete_sync(
                member,
                error,
                protocol_type=group.protocol_type if ok else None,
                protocol_name=group.protocol_name if ok else None,
                assignment=member.assignment,
            )
            if answered:
                self.reschedule_heartbeat(group, member)

    def reset_and_propagate_assignment_with_error(
        self, group: ClassicGroup, error: ErrorCode
    ) -> None:
        for member in group.members.values():
            member.assignment = b""
        self.propagate_assignment(group, error)

    def set_and_propagate_assignment(
        self, group: ClassicGroup, assignment: Mapping[str, bytes]
    ) -> None:
        for member in group.members.values():
            member.assignment = assignment.get(member.member_id, b"")
        self.propagate_assignment(group, ErrorCode.none)
