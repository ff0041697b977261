"""The part of the consumer-group and streams-group coordinators that is the same logic
(Kafka keeps it in ``ModernGroup`` and the shared paths of ``GroupMetadataManager``):
session and rebalance timers and their expiry, the heartbeat's member steps (who the
heartbeat's member is, dynamic or static, a static member's heir, the timers after its
reconciliation), leaving, removal by LeaveGroup, the member checks of OffsetCommit/OffsetFetch,
the group queries. Each protocol's coordinator subclasses it and keeps what differs (the
heartbeat's flow, the member's fields and epoch check, assignment, records). Still a pure
state machine: time only through the injected ``Timer``.
"""

from __future__ import annotations

import abc
import dataclasses
import logging
from collections.abc import Callable, Collection, Sequence
from typing import Any, Generic, Protocol, TypeVar

from streamrt.broker.coordination.result import CoordinatorRecord, Result
from streamrt.broker.modern_group.commit_epochs import PartitionCheck, older_epoch_check
from streamrt.broker.modern_group.member import (
    STATIC_LEAVE_EPOCH,
    ModernGroup,
    ModernMember,
    check_size,
    fenced_instance,
    leaving_member,
    removed_member,
    unknown_instance,
    unknown_member,
    unreleased_instance,
)
from streamrt.errors import ErrorCode, KafkaError

__all__ = ("MemberHeartbeat", "ModernGroupConfig", "ModernGroupCoordinator", "Records", "Timer")

logger = logging.getLogger(__name__)
Records = tuple[CoordinatorRecord, ...]
G = TypeVar("G", bound=ModernGroup[Any])
M = TypeVar("M", bound=ModernMember)
_T = TypeVar("_T")


class Timer(Protocol):
    """The coordinator core's timer (``coordination.timer``); an op returns the ``Result``
    whose records the runtime appends."""

    def schedule(self, key: str, delay_ms: int, op: Callable[[], Result]) -> None: ...

    def cancel(self, key: str) -> None: ...

    def is_scheduled(self, key: str) -> bool: ...


class ModernGroupConfig(Protocol):
    """What the shared steps read of a protocol's group config."""

    @property
    def session_timeout_ms(self) -> int: ...

    @property
    def max_size(self) -> int: ...


class MemberHeartbeat(Protocol):
    """What the shared member steps read of a heartbeat (both protocols' requests)."""

    @property
    def member_epoch(self) -> int: ...

    @property
    def instance_id(self) -> str | None: ...


class ModernGroupCoordinator(abc.ABC, Generic[G, M]):
    """Shared steps over ``groups`` of members ``M``; ``kind`` ("consumer", "streams") names
    the timers and the logs, so the two protocols' keys never meet in the one timer."""

    kind: str
    config: ModernGroupConfig
    timer: Timer
    groups: dict[str, G]

    @abc.abstractmethod
    def _tracked(self, group_id: str, op: Callable[[], _T]) -> tuple[_T, Records]:
        """Run ``op`` and return the records of what it changed in the group."""

    @abc.abstractmethod
    def _revoking(self, member: Any) -> bool:
        """The member still has to revoke what it was told to (its rebalance timer runs)."""

    @abc.abstractmethod
    def _new_member(self, member_id: str) -> M:
        """A member joining afresh (at epoch 0)."""

    @abc.abstractmethod
    def _check_epoch(self, member: M, req: Any) -> None:
        """FENCED_MEMBER_EPOCH unless the heartbeat's epoch is the member's (or its previous
        one, when what it owns fits its assignment: the answer may have been lost)."""

    def _fence_members(self, group: G, member_ids: Collection[str]) -> None:
        """Remove members; the group epoch bumps once, so the others get a new target."""
        for member_id in member_ids:
            group.remove(member_id)
            self._cancel_timers(group.group_id, member_id)
        group.group_epoch += 1

    def _fence(self, group: G, member_id: str) -> None:
        self._fence_members(group, (member_id,))

    # -- queries -------------------------------------------------------------------------------

    def has_members(self, group_id: str) -> bool:
        group = self.groups.get(group_id)
        return group is not None and bool(group.members)

    def drop_if_empty(self, group_id: str) -> Records:
        """Delete an empty group (a classic takeover, DeleteGroups, offsets expiry); returns
        its tombstones."""
        group = self.groups.get(group_id)
        if group is None or group.members:
            return ()
        _, records = self._tracked(group_id, lambda: self.groups.pop(group_id))
        return records

    def describe(self, group_id: str) -> G:
        group = self.groups.get(group_id)
        if group is None:
            raise KafkaError(ErrorCode.group_id_not_found, f"Group {group_id} not found.")
        return group

    # -- the heartbeat's member ---------------------------------------------------------------

    def _rejoins(self, member: M, req: MemberHeartbeat) -> bool:
        """A known member sending epoch 0 rejoins afresh: its old incarnation is fenced."""
        return req.member_epoch == 0

    def _dynamic_member(self, group: G, req: MemberHeartbeat, member_id: str) -> M:
        """The member a heartbeat without instance id names (Kafka's
        ``getOrMaybeSubscribeDynamic*GroupMember``)."""
        member: M | None = group.members.get(member_id)
        if member is None:
            if req.member_epoch != 0:
                raise unknown_member(member_id, group.group_id)
            check_size(group, self.config.max_size, self.kind)
            return self._new_member(member_id)
        if self._rejoins(member, req):
            # rejoining (after FENCED_MEMBER_EPOCH, or a lost join answer) under the same id:
            # the old incarnation goes, what it held is free, and it starts afresh
            self._fence_rejoining(group, member_id)
            return self._new_member(member_id)
        self._check_epoch(member, req)
        return member

    def _static_member(self, group: G, req: MemberHeartbeat, member_id: str) -> tuple[M, M | None]:
        """(the member, the previous member it replaces): Kafka's
        ``getOrMaybeSubscribeStaticConsumerGroupMember`` (KAFKA-20169's streams ones too)."""
        assert req.instance_id is not None
        existing: M | None = group.static_member(req.instance_id)
        if req.member_epoch == 0:
            if existing is None:
                if member_id not in group.members:
                    check_size(group, self.config.max_size, self.kind)
                known: M | None = group.members.get(member_id)
                return known or self._new_member(member_id), None
            if not self._released(existing):
                raise unreleased_instance(existing.member_id, req.instance_id)
            heir = dataclasses.replace(
                existing, member_id=member_id, member_epoch=0, previous_member_epoch=0
            )
            return heir, None if existing.member_id == member_id else existing
        if existing is None:
            raise unknown_instance(req.instance_id)
        if existing.member_id != member_id:
            raise fenced_instance(member_id, req.instance_id, existing.member_id)
        self._check_epoch(existing, req)
        return existing, None

    def _fence_rejoining(self, group: G, member_id: str) -> None:
        """Fence a member that rejoins at once under the same id (a protocol may skip what
        it does after a fence: a consumer group's downgrade)."""
        self._fence(group, member_id)

    def _released(self, existing: M) -> bool:
        """A static member's instance id may be taken over: it left at epoch -2 (a consumer
        group's classic members never do, and are replaced at once)."""
        return existing.member_epoch == STATIC_LEAVE_EPOCH

    def _no_target(self) -> Any:
        """What a static member's heir gets as its target if the member it replaces had none
        (None: nothing)."""
        return None

    def _take_over(self, group: G, replaced: M, heir_id: str) -> None:
        """A static member's heir takes its target over: no new group epoch."""
        target = group.target.get(replaced.member_id, self._no_target())
        group.remove(replaced.member_id)
        self._cancel_timers(group.group_id, replaced.member_id)
        if target is not None:
            group.target[heir_id] = target

    def _after_reconcile(self, group: G, updated: M, final: M) -> None:
        """The member's rebalance timer runs while it revokes (started when its step left it
        revoking, stopped when not), and its session starts again."""
        if final != updated:
            if self._revoking(final):
                self._schedule_rebalance_timeout(group.group_id, final)
            else:
                self.timer.cancel(self._rebalance_key(group.group_id, final.member_id))
        self._schedule_session_timeout(group.group_id, final.member_id)

    # -- leaving -------------------------------------------------------------------------------

    def _leave_member(
        self, group: G, member_id: str, instance_id: str | None, member_epoch: int
    ) -> None:
        """A leave heartbeat: at -2 a static member leaves for now (member and assignment
        stay until its session expires), else the member is fenced."""
        member = leaving_member(group, member_id, instance_id)
        if member_epoch == STATIC_LEAVE_EPOCH:
            group.put(dataclasses.replace(member, member_epoch=STATIC_LEAVE_EPOCH))
            self.timer.cancel(self._rebalance_key(group.group_id, member.member_id))
        else:
            self._fence(group, member.member_id)

    def remove_members(
        self, group_id: str, identities: Sequence[tuple[str, str | None]]
    ) -> tuple[list[ErrorCode], Records]:
        """A LeaveGroup (v3+: a batch; an admin's names static members by instance id alone)
        to this protocol's group, as Kafka's ``classicGroupLeaveToConsumerGroup``: one code per
        (member id, instance id), UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID for one that names
        no member; the others go together, static ones too (even at epoch -2, keeping their
        tasks for a return that will not come), with one group epoch bump, so the survivors
        get a new target at their next heartbeat instead of after the session timeout."""
        group = self.groups[group_id]

        def remove() -> list[ErrorCode]:
            codes: list[ErrorCode] = []
            gone: dict[str, None] = {}  # a member named twice goes once, as in Kafka
            for member_id, instance_id in identities:
                try:
                    member = removed_member(group, member_id, instance_id)
                except KafkaError as exc:
                    codes.append(exc.code)
                    continue
                logger.info(
                    "%s group %s: member %s (instance id %s) removed by LeaveGroup",
                    self.kind,
                    group_id,
                    member.member_id,
                    instance_id,
                )
                gone[member.member_id] = None
                codes.append(ErrorCode.none)
            if gone:
                self._fence_members(group, list(gone))
            return codes

        return self._tracked(group_id, remove)

    # -- timers --------------------------------------------------------------------------------

    def _session_key(self, group_id: str, member_id: str) -> str:
        return f"{self.kind}-session-{group_id}-{member_id}"

    def _rebalance_key(self, group_id: str, member_id: str) -> str:
        return f"{self.kind}-rebalance-{group_id}-{member_id}"

    def _cancel_timers(self, group_id: str, member_id: str) -> None:
        self.timer.cancel(self._session_key(group_id, member_id))
        self.timer.cancel(self._rebalance_key(group_id, member_id))

    def rearm_timers(self, group_id: str) -> None:
        """After an undo (a refused heartbeat, an append that failed): a member the undone step
        removed or replaced is back, but the step cancelled its timers. It gets them again, as
        at load (session, and rebalance if still revoking); a member whose timers still run
        keeps their deadlines, so a refused request never lengthens a session."""
        group = self.groups.get(group_id)
        for member in () if group is None else group.members.values():
            if not self.timer.is_scheduled(self._session_key(group_id, member.member_id)):
                self._schedule_session_timeout(group_id, member.member_id)
            rebalance = self._rebalance_key(group_id, member.member_id)
            if self._revoking(member) and not self.timer.is_scheduled(rebalance):
                self._schedule_rebalance_timeout(group_id, member)

    def _start_timers(self, group: G) -> None:
        """After load: every member's session timer starts afresh, and the rebalance timer of
        one still revoking (Kafka's ``onLoaded``)."""
        for member in group.members.values():
            self._schedule_session_timeout(group.group_id, member.member_id)
            if self._revoking(member):
                self._schedule_rebalance_timeout(group.group_id, member)

    def _member_session_timeout_ms(self, group_id: str, member_id: str) -> int:
        """One member's session timeout: the group's, unless a protocol keeps its own per
        member (a classic member of a consumer group brings it in its JoinGroup)."""
        return self.config.session_timeout_ms

    def _expiry(self, group_id: str, expire: Callable[[], None]) -> Callable[[], Result]:
        return lambda: Result(records=self._tracked(group_id, expire)[1])

    def _schedule_session_timeout(self, group_id: str, member_id: str) -> None:
        def expire() -> None:
            group = self.groups.get(group_id)
            if group is not None and member_id in group.members:
                logger.info(
                    "%s group %s: member %s session expired", self.kind, group_id, member_id
                )
                self._fence(group, member_id)

        self.timer.schedule(
            self._session_key(group_id, member_id),
            self._member_session_timeout_ms(group_id, member_id),
            self._expiry(group_id, expire),
        )

    def _schedule_rebalance_timeout(self, group_id: str, member: ModernMember) -> None:
        """A member that does not revoke within its rebalance timeout is fenced (if still at
        the epoch it was given the revocation at)."""
        member_id, epoch = member.member_id, member.member_epoch

        def expire() -> None:
            group = self.groups.get(group_id)
            current = None if group is None else group.members.get(member_id)
            if group is not None and current is not None and current.member_epoch == epoch:
                logger.info(
                    "%s group %s: member %s did not revoke in time", self.kind, group_id, member_id
                )
                self._fence(group, member_id)

        self.timer.schedule(
            self._rebalance_key(group_id, member_id),
            member.rebalance_timeout_ms,
            self._expiry(group_id, expire),
        )

    # -- offsets -------------------------------------------------------------------------------

    def validate_offset_request(
        self, group_id: str, member_id: str | None, member_epoch: int, *, fetch: bool = False
    ) -> ErrorCode | None:
        """Kafka's ``validateOffsetCommit``/``validateOffsetFetch``: None if allowed, else
        UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH, or what ``_offset_member_check`` adds."""
        group = self.groups[group_id]
        if fetch and member_epoch < 0 and member_id is None:
            return None
        if not fetch and member_epoch < 0 and not group.members:
            return None
        member = group.members.get(member_id or "")
        if member is None:
            return ErrorCode.unknown_member_id
        if member_epoch != member.member_epoch:
            return ErrorCode.stale_member_epoch
        return self._offset_member_check(group, member, fetch)

    def validate_offset_commit(
        self, group_id: str, member_id: str | None, member_epoch: int
    ) -> tuple[ErrorCode | None, PartitionCheck | None]:
        """(the commit's error, the check of each partition if any): KIP-1251's
        ``assignmentEpoch(partition) <= client epoch <= member epoch`` for a member whose
        protocol keeps assignment epochs, committing at an older epoch (1 or more) than its
        own; else the whole-request check of ``validate_offset_request``."""
        group = self.groups[group_id]
        member = group.members.get(member_id or "")
        older = member is not None and 0 < member_epoch < member.member_epoch
        if member is None or not older or not self._keeps_assignment_epochs(member):
            return self.validate_offset_request(group_id, member_id, member_epoch), None
        error = self._offset_member_check(group, member, False)
        if error is not None:
            return error, None
        return None, older_epoch_check(
            member_epoch, lambda topic, p: self._assignment_epoch(group, member, topic, p)
        )

    def _keeps_assignment_epochs(self, member: Any) -> bool:
        """The member's protocol tracks per-partition assignment epochs (none by default)."""
        return False

    def _assignment_epoch(self, group: G, member: Any, topic: str, partition: int) -> int | None:
        """The epoch at which ``member`` got the partition, None if it does not hold it."""
        return None

    def is_classic_member(self, group_id: str, member_id: str | None) -> bool:
        """A member that speaks the classic protocol to this group (a migrating consumer
        group has them; it commits with OffsetCommit below v9)."""
        return False

    def _offset_member_check(self, group: G, member: Any, fetch: bool) -> ErrorCode | None:
        """A protocol's own check of a known member at its epoch (none by default)."""
        return None
