"""The consumer-group coordinator as a pure state machine (the consumer part of Kafka's
``GroupMetadataManager``): ConsumerGroupHeartbeat, ConsumerGroupDescribe, session and
rebalance timeouts, and the member checks of OffsetCommit/OffsetFetch.

No sockets, no asyncio, no wall clock: time comes from the injected ``Clock``, timeouts from
the injected ``Timer`` (whose ops return a ``Result`` like the classic coordinator's), and the
topics from an injected ``topics()`` (name -> partition count). Every step that changes a
group returns its ``__consumer_offsets`` records (``persist``), and ``replay`` rebuilds the
groups from them at load, so members keep their ids, epochs and assignments across a restart.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from typing import TypeVar

from streamrt.broker.consumer_group.assignors import ASSIGNORS, Assignment, MemberSpec
from streamrt.broker.consumer_group.classic_members import ClassicMemberSteps, Downgrade
from streamrt.broker.consumer_group.group import ConsumerGroup, subscribed_topics
from streamrt.broker.consumer_group.member import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerMember,
    MemberState,
    new_member_id,
    same,
)
from streamrt.broker.consumer_group.persist import (
    GroupImage,
    image,
    rebuild,
    records_between,
    replay,
)
from streamrt.broker.consumer_group.reconcile import reconcile
from streamrt.broker.consumer_group.records import decode_consumer_key
from streamrt.broker.consumer_group.requests import HeartbeatAnswer, HeartbeatRequest, validate
from streamrt.broker.consumer_group_config import ConsumerGroupConfig
from streamrt.broker.modern_group.coordinator import Records, Timer
from streamrt.broker.modern_group.member import member_changes
from streamrt.clock import Clock
from streamrt.errors import ErrorCode, KafkaError

__all__ = ("ConsumerGroupCoordinator", "Timer")

Topics = Callable[[], Mapping[str, int]]
TopicIds = Callable[[], Mapping[str, uuid.UUID]]
_T = TypeVar("_T")


class ConsumerGroupCoordinator(ClassicMemberSteps):
    kind = "consumer"
    config: ConsumerGroupConfig

    def __init__(
        self,
        config: ConsumerGroupConfig,
        clock: Clock,
        timer: Timer,
        topics: Topics,
        topic_ids: TopicIds = dict,
        downgrade: Downgrade | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self.timer = timer
        self.topics = topics
        self.topic_ids = topic_ids  # name -> id: the records name topics by id, as Kafka's
        self.groups: dict[str, ConsumerGroup] = {}
        self.downgrade = downgrade
        self._downgraded = {}

    # -- persistence -----------------------------------------------------------------------------

    def _tracked(self, group_id: str, op: Callable[[], _T]) -> tuple[_T, Records]:
        """Run ``op`` and return the records of what it changed in the group."""
        before = image(self.groups.get(group_id))
        out = op()
        after = image(self.groups.get(group_id))
        records = records_between(group_id, before, after, self.topic_ids())
        return out, self._with_downgrade(group_id, records)

    def snapshot(self, group_id: str) -> GroupImage | None:
        return image(self.groups.get(group_id))

    def restore(self, group_id: str, before: GroupImage | None) -> None:
        """Undo a step whose records could not be appended (a storage error)."""
        now = self.groups.pop(group_id, None)
        self._downgraded.pop(group_id, None)
        if before is not None and before.members and self.downgrade is not None:
            self.downgrade.undo(group_id)  # a downgrade in the undone step is undone too
        if before is not None:
            self.groups[group_id] = rebuild(group_id, before, now)
            self.rearm_timers(group_id)

    def replay(self, key: bytes, value: bytes | None) -> bool:
        """Apply one ``__consumer_offsets`` record if it is a consumer-group one (True)."""
        parsed = decode_consumer_key(key)
        if parsed is None:
            return False
        names = {tid: name for name, tid in self.topic_ids().items()}
        replay(self.groups, parsed, value, names)
        return True

    def on_loaded(self) -> None:
        """After load: every member's session timer starts afresh (and the rebalance timer of
        one still revoking), as Kafka's ``onLoaded``; the subscribed topics' partition counts
        are taken as they are now (Kafka compares a hash of them: a change while the broker
        was down bumps the epoch there, here at the next change of the group)."""
        topics = self.topics()
        for group in self.groups.values():
            group.subscription_metadata = group.subscription(topics)
            group.assignor_name = self._preferred_assignor(group)
            self._start_timers(group)

    # -- ConsumerGroupHeartbeat ----------------------------------------------------------------

    def heartbeat(self, req: HeartbeatRequest, other_group: bool = False) -> HeartbeatAnswer:
        """One heartbeat; errors come back in the answer (the group is left unchanged), the
        records of a change with it. ``other_group``: the id is taken by a group of another
        type (a classic one with members, or a streams group)."""
        existed = req.group_id in self.groups
        try:
            validate(req, self.config.assignors)
            if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                answer, records = self._tracked(req.group_id, lambda: self._leave(req))
            else:
                answer, records = self._tracked(
                    req.group_id, lambda: self._heartbeat(req, other_group)
                )
            return dataclasses.replace(answer, records=records)
        except KafkaError as exc:
            group = self.groups.get(req.group_id)
            if not existed and group is not None and not group.members:
                del self.groups[req.group_id]  # created for a join that failed: never written
            return HeartbeatAnswer(exc.code, str(exc.args[0]) if exc.args else None)

    def _group(self, group_id: str, create: bool, other_group: bool) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if other_group:
            raise KafkaError(
                ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group."
            )
        if not create:
            # Kafka answers GROUP_ID_NOT_FOUND, which librdkafka treats as fatal (the consumer
            # stops); groups survive restarts now, so this is a deleted or expired group, and
            # the member is told to rejoin at epoch 0 instead
            raise KafkaError(
                ErrorCode.unknown_member_id,
                f"Consumer group {group_id} not found; rejoin with epoch 0.",
            )
        group = ConsumerGroup(group_id)
        self.groups[group_id] = group
        return group

    def _heartbeat(self, req: HeartbeatRequest, other_group: bool) -> HeartbeatAnswer:
        joining = req.member_epoch == 0
        group = self._group(req.group_id, joining, other_group)
        member_id = req.member_id or new_member_id()
        replaced: ConsumerMember | None = None
        if req.instance_id is not None:
            member, replaced = self._static_member(group, req, member_id)
        else:
            member = self._dynamic_member(group, req, member_id)
        updated = self._apply_fields(member, req)
        bump = joining and replaced is None and member_id not in group.members
        bump = bump or not _same_subscription(member, updated)
        final = self._advance(group, updated, replaced, bump, req.owned)
        full = (
            req.rebalance_timeout_ms != -1
            and (req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None)
            and req.owned is not None
        )
        send = joining or full or not same(member.assigned, final.assigned)
        return HeartbeatAnswer(
            ErrorCode.none,
            None,
            member_id,
            final.member_epoch,
            self.config.heartbeat_interval_ms,
            dict(final.assigned) if send else None,
        )

    def _advance(
        self,
        group: ConsumerGroup,
        updated: ConsumerMember,
        replaced: ConsumerMember | None,
        bump: bool,
        owned: Mapping[str, frozenset[int]] | None,
    ) -> ConsumerMember:
        """Kafka's steps 1-3 of a member's heartbeat or classic JoinGroup: put the member (an
        heir takes a replaced static member's target; no new epoch), bump the group epoch on a
        change of members or subscriptions, compute the target, reconcile the member."""
        topics = self.topics()
        if replaced is not None:
            self._take_over(group, replaced, updated.member_id)
        group.put(updated)
        subscription = group.subscription(topics)
        if bump or subscription != group.subscription_metadata:
            group.subscription_metadata = subscription
            group.group_epoch += 1
        if group.group_epoch > group.assignment_epoch:
            self._compute_target(group, topics)
        final = reconcile(
            updated,
            group.assignment_epoch,
            group.target.get(updated.member_id, {}),
            group.owner_epoch,
            owned,
        )
        group.put(final)
        self._after_reconcile(group, updated, final)
        return final

    def _new_member(self, member_id: str) -> ConsumerMember:
        return ConsumerMember(member_id=member_id)

    def _no_target(self) -> Assignment:
        return {}

    def _check_epoch(self, member: ConsumerMember, req: HeartbeatRequest) -> None:
        """Kafka's ``throwIfConsumerGroupMemberEpochIsInvalid``: the previous epoch is still
        accepted if what the member owns fits its assignment (the answer may have been lost)."""
        if req.member_epoch > member.member_epoch:
            raise KafkaError(
                ErrorCode.fenced_member_epoch,
                f"The consumer group member has a greater member epoch ({req.member_epoch}) "
                f"than the one known by the group coordinator ({member.member_epoch}).",
            )
        if req.member_epoch < member.member_epoch:
            fits = req.owned is not None and all(
                ps <= member.assigned.get(t, frozenset()) for t, ps in req.owned.items()
            )
            if req.member_epoch != member.previous_member_epoch or not fits:
                raise KafkaError(
                    ErrorCode.fenced_member_epoch,
                    f"The consumer group member has a smaller member epoch ({req.member_epoch}) "
                    f"than the one known by the group coordinator ({member.member_epoch}).",
                )

    @staticmethod
    def _apply_fields(member: ConsumerMember, req: HeartbeatRequest) -> ConsumerMember:
        changes = member_changes(req)
        changes["classic"] = None  # a consumer-protocol member (maybe the heir of a classic one)
        if req.subscribed_topic_names is not None:
            changes["subscribed_topic_names"] = tuple(sorted(set(req.subscribed_topic_names)))
        if req.subscribed_topic_regex is not None:
            changes["subscribed_topic_regex"] = req.subscribed_topic_regex or None
        if req.server_assignor is not None:
            changes["server_assignor"] = req.server_assignor
        return dataclasses.replace(member, **changes)  # type: ignore[arg-type]

    def _compute_target(self, group: ConsumerGroup, topics: Mapping[str, int]) -> None:
        """A new target assignment at the group epoch (Kafka's ``TargetAssignmentBuilder``)."""
        name = self._preferred_assignor(group)
        specs = {
            mid: MemberSpec(subscribed_topics(m, topics), group.target.get(mid, {}))
            for mid, m in group.members.items()
        }
        group.target = ASSIGNORS[name](specs, group.subscription(topics))
        group.assignor_name = name
        group.assignment_epoch = group.group_epoch
        group.assignments_computed += 1

    def _preferred_assignor(self, group: ConsumerGroup) -> str:
        """Kafka's computePreferredServerAssignor: the one most members ask for, else the
        default."""
        asked = Counter(m.server_assignor for m in group.members.values() if m.server_assignor)
        return max(sorted(asked), key=lambda a: asked[a]) if asked else self.config.assignors[0]

    # -- leaving and fencing -------------------------------------------------------------------

    def _leave(self, req: HeartbeatRequest) -> HeartbeatAnswer:
        group = self._group(req.group_id, False, False)
        self._leave_member(group, req.member_id, req.instance_id, req.member_epoch)
        return HeartbeatAnswer(ErrorCode.none, None, req.member_id, req.member_epoch, 0, None)

    def _fence_members(
        self, group: ConsumerGroup, member_ids: Collection[str], may_downgrade: bool = True
    ) -> None:
        """As every protocol's; the subscribed topics' metadata is taken again. If only
        classic members remain, the group may become a classic one (not when a member is
        fenced only to rejoin at once)."""
        super()._fence_members(group, member_ids)
        group.subscription_metadata = group.subscription(self.topics())
        if may_downgrade:
            self._after_fence(group)

    def _fence_rejoining(self, group: ConsumerGroup, member_id: str) -> None:
        self._fence_members(group, (member_id,), may_downgrade=False)

    def _released(self, existing: ConsumerMember) -> bool:
        """A classic member never leaves at -2: a consumer-protocol member with its instance
        id replaces it at once (a static member switching protocols), as in Kafka."""
        return existing.member_epoch == STATIC_LEAVE_EPOCH or existing.classic is not None

    def _revoking(self, member: ConsumerMember) -> bool:
        return member.state is MemberState.UNREVOKED_PARTITIONS

    def _keeps_assignment_epochs(self, member: ConsumerMember) -> bool:
        """KIP-1251 for consumer-protocol members; a classic member keeps the exact
        generation check (ILLEGAL_GENERATION), as in Kafka."""
        return member.classic is None

    def _assignment_epoch(
        self, group: ConsumerGroup, member: ConsumerMember, topic: str, partition: int
    ) -> int | None:
        return member.assignment_epoch(topic, partition)


def _same_subscription(a: ConsumerMember, b: ConsumerMember) -> bool:
    return (
        a.subscribed_topic_names == b.subscribed_topic_names
        and a.subscribed_topic_regex == b.subscribed_topic_regex
    )
