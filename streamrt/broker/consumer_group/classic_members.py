"""Members of a consumer group that use the classic protocol (KIP-848's online migration, the
``classicGroup*ToConsumerGroup`` steps of Kafka's ``GroupMetadataManager``).

A classic consumer keeps speaking JoinGroup/SyncGroup/Heartbeat to a consumer group (one that
was upgraded while it was a member, or one it joins): its JoinGroup is a member update as a
heartbeat is (subscription and owned partitions from the embedded consumer protocol), answered
at once with its member epoch as the generation; its SyncGroup returns what it may own now;
its Heartbeat answers REBALANCE_IN_PROGRESS when it must rejoin to move on (a new group epoch,
partitions to revoke, or partitions it waited for are free). A member that does not rejoin or
sync within its rebalance timeout is fenced. Pure: timers only through the injected ``Timer``.
"""

from __future__ import annotations

import abc
import dataclasses
import logging
from collections.abc import Mapping
from typing import Protocol

from streamrt.broker.consumer_group.embedded import (
    PROTOCOL_TYPE,
    MalformedEmbeddedProtocol,
    decode_subscription,
    encode_assignment,
    subscription_version,
)
from streamrt.broker.consumer_group.group import ConsumerGroup
from streamrt.broker.consumer_group.member import (
    ClassicMetadata,
    ConsumerMember,
    MemberState,
    new_member_id,
)
from streamrt.broker.consumer_group_config import ConsumerGroupConfig
from streamrt.broker.modern_group.coordinator import ModernGroupCoordinator, Records
from streamrt.broker.modern_group.member import (
    check_size,
    fenced_instance,
    unknown_member,
)
from streamrt.errors import ErrorCode, KafkaError

__all__ = ("ClassicAnswer", "ClassicJoin", "ClassicMemberSteps", "Downgrade")

logger = logging.getLogger(__name__)

Protocols = tuple[tuple[str, bytes], ...]


class Downgrade(Protocol):
    """The classic coordinator's side of a downgrade (``group.migration.Downgrader``)."""

    def __call__(self, group: ConsumerGroup, rebalance: bool) -> Records:
        """Make ``group`` (all members classic) a classic group; its records. ``rebalance``:
        it starts rebalancing (a member left), else it is stable (a member was replaced)."""

    def undo(self, group_id: str) -> None:
        """The step that downgraded ``group_id`` was undone: drop the classic group."""


@dataclasses.dataclass(frozen=True, slots=True)
class ClassicJoin:
    """A JoinGroup to a consumer group, as the state machine sees it."""

    group_id: str
    member_id: str
    instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    client_id: str = ""
    client_host: str = ""
    #: JoinGroup v4+ from a dynamic member without an id: it gets one (MEMBER_ID_REQUIRED)
    requires_known_member_id: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class ClassicAnswer:
    """The answer to a classic JoinGroup/SyncGroup/Heartbeat from a consumer group."""

    error: ErrorCode
    message: str | None = None
    member_id: str = ""
    generation_id: int = -1
    protocol_name: str | None = None
    assignment: bytes = b""
    records: Records = ()


class ClassicMemberSteps(ModernGroupCoordinator[ConsumerGroup, ConsumerMember]):
    """The consumer-group coordinator's steps for classic members and for the conversions."""

    config: ConsumerGroupConfig
    #: set by the service: turns an all-classic group into a classic one (None: never)
    downgrade: Downgrade | None = None
    #: groups a step just downgraded, until the step's records are taken (``_with_downgrade``)
    _downgraded: dict[str, tuple[ConsumerGroup, bool]]

    @abc.abstractmethod
    def _advance(
        self,
        group: ConsumerGroup,
        updated: ConsumerMember,
        replaced: ConsumerMember | None,
        bump: bool,
        owned: Mapping[str, frozenset[int]] | None,
    ) -> ConsumerMember: ...

    # -- conversions ---------------------------------------------------------------------------

    def adopt(self, group: ConsumerGroup) -> Records:
        """Take a group converted from a classic one (an upgrade): its records (everything is
        new), and a session timer per member at its classic session timeout."""
        _, records = self._tracked(
            group.group_id, lambda: self.groups.update({group.group_id: group})
        )
        for member_id in group.members:
            self._schedule_session_timeout(group.group_id, member_id)
        return records

    def _should_downgrade(self, group: ConsumerGroup) -> bool:
        """Kafka's ``validateOnlineDowngradeWithFencedMembers``, after the removal: members
        remain, all classic, within ``group.max.size``, and the policy allows it (and they
        share a protocol, which their joins ensured: the classic group must select one)."""
        left = [m.classic for m in group.members.values()]
        return (
            self.downgrade is not None
            and bool(left)
            and all(c is not None for c in left)
            and self.config.downgrade_enabled
            and len(left) <= self.config.classic_max_size
            and bool(frozenset.intersection(*(c.protocol_names() for c in left if c)))
        )

    def _after_fence(self, group: ConsumerGroup, rebalance: bool = True) -> bool:
        """A member was fenced (or replaced): if only classic members remain, the group leaves
        this coordinator (``_with_downgrade`` hands it to the classic one within the same
        step); True if it did."""
        if not self._should_downgrade(group):
            return False
        logger.info("consumer group %s: downgraded to a classic group", group.group_id)
        del self.groups[group.group_id]
        self._downgraded[group.group_id] = (group, rebalance)
        for member_id in group.members:
            self._cancel_timers(group.group_id, member_id)
        return True

    def _with_downgrade(self, group_id: str, records: Records) -> Records:
        """The step's records, then the classic group's if the step downgraded the group."""
        pending = self._downgraded.pop(group_id, None)
        if pending is None or self.downgrade is None:
            return records
        return records + self.downgrade(*pending)

    # -- JoinGroup -------------------------------------------------------------------------------

    def classic_join(self, req: ClassicJoin) -> ClassicAnswer:
        """Kafka's ``classicGroupJoinToConsumerGroup``; errors leave the group unchanged."""
        try:
            answer, records = self._tracked(req.group_id, lambda: self._join(req))
        except KafkaError as exc:
            return ClassicAnswer(exc.code, str(exc.args[0]) if exc.args else None, req.member_id)
        return dataclasses.replace(answer, records=records)

    def _join(self, req: ClassicJoin) -> ClassicAnswer:
        group = self.groups[req.group_id]
        member_id = req.member_id or new_member_id()
        if member_id not in group.members:
            check_size(group, self.config.max_size, self.kind)
        _check_protocols(group, req.protocol_type, req.protocols, member_id)
        if req.requires_known_member_id:
            return ClassicAnswer(ErrorCode.member_id_required, None, member_id)
        try:
            subscription = decode_subscription(req.protocols[0][1])
        except MalformedEmbeddedProtocol as exc:
            raise KafkaError(
                ErrorCode.inconsistent_group_protocol,
                f"Member {member_id}'s subscription is not the consumer protocol: {exc}",
            ) from None
        replaced: ConsumerMember | None = None
        if req.instance_id is None:
            member = group.members.get(member_id) or ConsumerMember(member_id=member_id)
        else:
            member, replaced = self._static_classic(group, req, member_id)
        updated = dataclasses.replace(
            member,
            instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
            rack_id=subscription.rack_id or member.rack_id,
            rebalance_timeout_ms=req.rebalance_timeout_ms,
            subscribed_topic_names=tuple(sorted(set(subscription.topics))),
            subscribed_topic_regex=None,
            client_id=req.client_id,
            client_host=req.client_host,
            classic=ClassicMetadata(req.session_timeout_ms, req.protocols),
        )
        bump = replaced is None and member_id not in group.members
        bump = bump or updated.subscribed_topic_names != member.subscribed_topic_names
        final = self._advance(group, updated, replaced, bump, subscription.owned)
        protocol = req.protocols[0][0]
        if replaced is not None and replaced.classic is None and self._after_fence(group, False):
            # Kafka's join step 4: it replaced the last consumer-protocol member, the group is
            # a stable classic group now, where this member syncs at its epoch
            return ClassicAnswer(ErrorCode.none, None, member_id, final.member_epoch, protocol)
        self.timer.cancel(self._join_key(group.group_id, member_id))
        self._schedule_session_timeout(group.group_id, member_id)
        self._schedule_classic_timeout(
            self._sync_key(group.group_id, member_id), group.group_id, member_id
        )
        return ClassicAnswer(ErrorCode.none, None, member_id, final.member_epoch, protocol)

    def _static_classic(
        self, group: ConsumerGroup, req: ClassicJoin, member_id: str
    ) -> tuple[ConsumerMember, ConsumerMember | None]:
        """A classic static member (Kafka's ``getOrMaybeSubscribeStaticConsumerGroupMember``
        for the classic protocol): one joining without a member id replaces the instance's
        current member at once, keeping its assignment, as a classic group does."""
        assert req.instance_id is not None
        existing = group.static_member(req.instance_id)
        if not req.member_id:
            if existing is None:
                return ConsumerMember(member_id=member_id), None
            heir = dataclasses.replace(
                existing, member_id=member_id, member_epoch=0, previous_member_epoch=0
            )
            return heir, existing
        if existing is None:
            raise KafkaError(
                ErrorCode.unknown_member_id,
                f"Member with instance id {req.instance_id} is not a member of group "
                f"{group.group_id}.",
            )
        if existing.member_id != member_id:
            raise fenced_instance(member_id, req.instance_id, existing.member_id)
        return existing, None

    # -- SyncGroup and Heartbeat ---------------------------------------------------------------

    def classic_sync(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        generation_id: int,
        protocol_type: str | None,
        protocol_name: str | None,
    ) -> ClassicAnswer:
        """Kafka's ``classicGroupSyncToConsumerGroup``: the partitions the member may own now."""
        try:
            group, member = self._classic_member(group_id, member_id, instance_id, generation_id)
            assert member.classic is not None
            chosen = member.classic.protocols[0][0]
            if (protocol_type is not None and protocol_type != PROTOCOL_TYPE) or (
                protocol_name is not None and protocol_name != chosen
            ):
                raise KafkaError(
                    ErrorCode.inconsistent_group_protocol,
                    f"The protocol type {protocol_type} or name {protocol_name} of member "
                    f"{member_id} does not match its JoinGroup's.",
                )
            if (
                group.group_epoch > member.member_epoch
                and member.state is not MemberState.UNREVOKED_PARTITIONS
            ):
                raise KafkaError(
                    ErrorCode.rebalance_in_progress,
                    f"A new rebalance is triggered in group {group_id} and member {member_id} "
                    "should rejoin to catch up.",
                )
        except KafkaError as exc:
            return ClassicAnswer(exc.code, str(exc.args[0]) if exc.args else None, member_id)
        self.timer.cancel(self._sync_key(group_id, member.member_id))
        self._schedule_session_timeout(group_id, member.member_id)
        version = subscription_version(member.classic.protocols[0][1])
        assignment = encode_assignment(member.assigned, min(version, 3))
        return ClassicAnswer(
            ErrorCode.none, None, member_id, member.member_epoch, chosen, assignment
        )

    def classic_heartbeat(
        self, group_id: str, member_id: str, instance_id: str | None, generation_id: int
    ) -> ClassicAnswer:
        """Kafka's ``classicGroupHeartbeatToConsumerGroup``: REBALANCE_IN_PROGRESS when the
        member must rejoin (the join must come within its rebalance timeout)."""
        try:
            group, member = self._classic_member(group_id, member_id, instance_id, generation_id)
        except KafkaError as exc:
            return ClassicAnswer(exc.code, str(exc.args[0]) if exc.args else None, member_id)
        self._schedule_session_timeout(group_id, member.member_id)
        rejoin = (
            member.member_epoch < group.group_epoch
            or member.state is MemberState.UNREVOKED_PARTITIONS
            or (
                member.state is MemberState.UNRELEASED_PARTITIONS
                and not _waiting_on_unreleased(group, member)
            )
        )
        if not rejoin:
            return ClassicAnswer(ErrorCode.none, None, member_id, member.member_epoch)
        key = self._join_key(group_id, member.member_id)
        if not self.timer.is_scheduled(key):
            self._schedule_classic_timeout(key, group_id, member.member_id)
        return ClassicAnswer(ErrorCode.rebalance_in_progress, None, member_id, member.member_epoch)

    def _classic_member(
        self, group_id: str, member_id: str, instance_id: str | None, generation_id: int
    ) -> tuple[ConsumerGroup, ConsumerMember]:
        """Kafka's ``validateConsumerGroupMember`` + the classic checks: the member exists
        (FENCED_INSTANCE_ID if its instance id names another), uses the classic protocol
        (else UNKNOWN_MEMBER_ID) and sent its epoch as the generation (ILLEGAL_GENERATION)."""
        group = self.groups.get(group_id)
        if group is None:
            raise unknown_member(member_id, group_id)
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise unknown_member(member_id, group_id)
        else:
            member = group.static_member(instance_id)
            if member is None:
                raise unknown_member(member_id, group_id)
            if member.member_id != member_id:
                raise fenced_instance(member_id, instance_id, member.member_id)
        if member.classic is None:
            raise KafkaError(
                ErrorCode.unknown_member_id,
                f"Member {member_id} does not use the classic protocol.",
            )
        if generation_id != member.member_epoch:
            raise KafkaError(
                ErrorCode.illegal_generation,
                f"The member {member_id} sent generation {generation_id}; its epoch is "
                f"{member.member_epoch}.",
            )
        return group, member

    # -- members' protocol ---------------------------------------------------------------------

    def validate_offset_request(
        self, group_id: str, member_id: str | None, member_epoch: int, *, fetch: bool = False
    ) -> ErrorCode | None:
        """As a consumer member's, but a classic member's stale generation is
        ILLEGAL_GENERATION, the error its client knows (Kafka's ``validateMemberEpoch``)."""
        error = super().validate_offset_request(group_id, member_id, member_epoch, fetch=fetch)
        if error is ErrorCode.stale_member_epoch and self.is_classic_member(group_id, member_id):
            return ErrorCode.illegal_generation
        return error

    def is_classic_member(self, group_id: str, member_id: str | None) -> bool:
        group = self.groups.get(group_id)
        member = None if group is None else group.members.get(member_id or "")
        return member is not None and member.classic is not None

    def _member_session_timeout_ms(self, group_id: str, member_id: str) -> int:
        group = self.groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        if member is not None and member.classic is not None:
            return member.classic.session_timeout_ms
        return self.config.session_timeout_ms

    # -- join and sync timeouts ----------------------------------------------------------------

    def _join_key(self, group_id: str, member_id: str) -> str:
        return f"{self.kind}-classic-join-{group_id}-{member_id}"

    def _sync_key(self, group_id: str, member_id: str) -> str:
        return f"{self.kind}-classic-sync-{group_id}-{member_id}"

    def _cancel_timers(self, group_id: str, member_id: str) -> None:
        super()._cancel_timers(group_id, member_id)
        self.timer.cancel(self._join_key(group_id, member_id))
        self.timer.cancel(self._sync_key(group_id, member_id))

    def _schedule_classic_timeout(self, key: str, group_id: str, member_id: str) -> None:
        """A classic member that was told to rejoin (or to sync) and does not within its
        rebalance timeout is fenced (Kafka's join and sync timeouts)."""
        group = self.groups[group_id]

        def expire() -> None:
            current = self.groups.get(group_id)
            if current is not None and member_id in current.members:
                logger.info(
                    "consumer group %s: classic member %s did not rejoin or sync in time",
                    group_id,
                    member_id,
                )
                self._fence(current, member_id)

        self.timer.schedule(
            key, group.members[member_id].rebalance_timeout_ms, self._expiry(group_id, expire)
        )


def _check_protocols(
    group: ConsumerGroup, protocol_type: str, protocols: Protocols, member_id: str
) -> None:
    """Kafka's ``supportsClassicProtocols``: the consumer protocol type, and a protocol every
    classic member also supports (any one if there is none)."""
    names = {name for name, _ in protocols}
    supported = [m.classic.protocol_names() for m in group.members.values() if m.classic]
    if (
        protocol_type != PROTOCOL_TYPE
        or not names
        or not any(all(n in s for s in supported) for n in names)
    ):
        raise KafkaError(
            ErrorCode.inconsistent_group_protocol,
            f"Member {member_id}'s protocols are not supported.",
        )


def _waiting_on_unreleased(group: ConsumerGroup, member: ConsumerMember) -> bool:
    """Some partition of its target that it does not have yet is still held by another."""
    target = group.target.get(member.member_id, {})
    return any(
        group.owner_epoch(topic, p) != -1
        for topic, ps in target.items()
        for p in ps - member.assigned.get(topic, frozenset())
    )
