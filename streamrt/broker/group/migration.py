"""Online migration of a group between the classic and the consumer protocol (KIP-848,
``group.consumer.migration.policy``): Kafka's ``convertToConsumerGroup`` and
``convertToClassicGroup`` (``ConsumerGroup.fromClassicGroup``, ``ClassicGroup.fromConsumerGroup``).

Upgrade: a consumer-protocol member joins a classic group that has members. The classic group
becomes a consumer group in the same step: each member keeps its id, instance id and assigned
partitions, at the classic generation as its member epoch (so it is stable and owns what it
owned); parked JoinGroup/SyncGroup requests are answered REBALANCE_IN_PROGRESS (they rejoin as
classic members of the consumer group). Downgrade: a fence leaves only classic members in a
consumer group; it becomes a classic group at the group epoch as the generation, each member
with its target partitions, and a rebalance starts so they rejoin the classic way.

Both sides stay pure state machines: this module only moves state between them, with the
injected timer and clock they already hold. It sits on the classic side (``group`` imports
``consumer_group``, never the other way).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping

from streamrt.broker.consumer_group.coordinator import ConsumerGroupCoordinator
from streamrt.broker.consumer_group.embedded import (
    PROTOCOL_TYPE,
    MalformedEmbeddedProtocol,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    subscription_version,
)
from streamrt.broker.consumer_group.group import ConsumerGroup
from streamrt.broker.consumer_group.member import ClassicMetadata, ConsumerMember, MemberState
from streamrt.broker.consumer_group.persist import GroupImage
from streamrt.broker.consumer_group.requests import HeartbeatRequest, validate
from streamrt.broker.consumer_group_config import ConsumerGroupConfig
from streamrt.broker.coordination.result import Completion, CoordinatorRecord
from streamrt.broker.group.coordinator import GroupCoordinator
from streamrt.broker.group.group import ClassicGroup, Member
from streamrt.broker.group.records import group_tombstone
from streamrt.broker.group.state import GroupState
from streamrt.errors import ErrorCode, KafkaError

__all__ = (
    "Downgrader",
    "Upgrade",
    "can_upgrade",
    "classic_to_consumer",
    "consumer_to_classic",
    "maybe_upgrade",
    "undo",
    "upgrade",
)

logger = logging.getLogger(__name__)


def can_upgrade(group: ClassicGroup, config: ConsumerGroupConfig) -> bool:
    """Kafka's ``validateOnlineUpgrade``: the policy allows it, the members use the consumer
    embedded protocol, and they fit ``group.consumer.max.size``."""
    return (
        config.upgrade_enabled
        and bool(group.members)
        and group.protocol_type == PROTOCOL_TYPE
        and len(group.members) <= config.max_size
    )


def classic_to_consumer(group: ClassicGroup, topics: Mapping[str, int]) -> ConsumerGroup:
    """The consumer group a classic one becomes; raises ``MalformedEmbeddedProtocol`` if a
    member's subscription or assignment is not the consumer protocol."""
    epoch = group.generation_id
    out = ConsumerGroup(group.group_id)
    out.group_epoch = out.assignment_epoch = epoch
    for m in group.members.values():
        chosen = group.protocol_name or (m.protocols[0][0] if m.protocols else "")
        subscription = decode_subscription(m.metadata(chosen))
        assigned = {
            t: ps for t, ps in decode_assignment(m.assignment).items() if t in topics and ps
        }
        member = ConsumerMember(
            member_id=m.member_id,
            client_id=m.client_id,
            client_host=m.client_host,
            instance_id=m.group_instance_id,
            rack_id=subscription.rack_id,
            rebalance_timeout_ms=m.rebalance_timeout_ms,
            subscribed_topic_names=tuple(sorted(set(subscription.topics))),
            member_epoch=epoch,
            previous_member_epoch=epoch,
            state=MemberState.STABLE,
            assigned=assigned,
            classic=ClassicMetadata(m.session_timeout_ms, m.protocols),
        )
        out.put(member)
        out.target[m.member_id] = assigned
    out.subscription_metadata = out.subscription(topics)
    return out


@dataclasses.dataclass(frozen=True, slots=True)
class Upgrade:
    """An upgrade done in memory: the classic group it replaced (to put back if the step is
    undone), its records (the classic tombstone, then the consumer group's) and the answers to
    the requests it had parked."""

    group: ClassicGroup
    records: tuple[CoordinatorRecord, ...]
    completions: tuple[Completion, ...]


def maybe_upgrade(
    classic: GroupCoordinator, consumer: ConsumerGroupCoordinator, request: HeartbeatRequest
) -> Upgrade | None:
    """Kafka's ``getOrMaybeCreateConsumerGroup`` for a joining consumer-protocol member (a
    valid heartbeat at epoch 0): a classic group with members becomes a consumer group if
    ``can_upgrade``; None if nothing is converted (the heartbeat then answers as before)."""
    group = classic.groups.get(request.group_id)
    if (
        group is None
        or group.is_in(GroupState.EMPTY, GroupState.DEAD)
        or request.member_epoch != 0
        or not can_upgrade(group, consumer.config)
    ):
        return None
    try:
        validate(request, consumer.config.assignors)
    except KafkaError:
        return None  # the heartbeat answers the error; the group stays classic
    return upgrade(classic, consumer, request.group_id)


def upgrade(
    classic: GroupCoordinator, consumer: ConsumerGroupCoordinator, group_id: str
) -> Upgrade:
    """Convert the classic group ``group_id`` into a consumer group (the caller checked
    ``can_upgrade``); parked JoinGroup/SyncGroup requests are answered REBALANCE_IN_PROGRESS.
    GROUP_ID_NOT_FOUND (Kafka's answer) if a member's embedded protocol is malformed; nothing
    changes then."""
    group = classic.groups[group_id]
    try:
        converted = classic_to_consumer(group, consumer.topics())
    except MalformedEmbeddedProtocol as exc:
        raise KafkaError(
            ErrorCode.group_id_not_found,
            f"Cannot upgrade classic group {group_id} to consumer group because the embedded "
            f"consumer protocol is malformed: {exc}",
        ) from None
    for member in group.members.values():
        classic.out.complete_join(member, ErrorCode.rebalance_in_progress, member.member_id)
        classic.out.complete_sync(member, ErrorCode.rebalance_in_progress)
    # its timers are left to run: they find no classic group and do nothing (and if the
    # step is undone, the group is back with them)
    del classic.groups[group_id]
    logger.info("classic group %s upgraded to a consumer group", group_id)
    answered = classic.out.drain()
    records = (group_tombstone(group_id), *consumer.adopt(converted))
    return Upgrade(group, records, answered.completions)


def undo(
    classic: GroupCoordinator,
    consumer: ConsumerGroupCoordinator,
    group_id: str,
    before: GroupImage | None,
    classic_group: ClassicGroup | None,
) -> None:
    """Undo a consumer heartbeat's step (refused after an upgrade, or not appended): the
    consumer group as it was, and the classic group back if there was one (its timers were
    left running; requests it had parked were answered and rejoin)."""
    consumer.restore(group_id, before)
    if classic_group is not None:
        classic.groups[group_id] = classic_group


def consumer_to_classic(group: ConsumerGroup, now_ms: int) -> ClassicGroup:
    """The classic group an all-classic consumer group becomes: the group epoch as the
    generation, each member's target partitions as its assignment, written in the version of
    its subscription (Kafka's ``ClassicGroup.fromConsumerGroup``)."""
    out = ClassicGroup(group.group_id, now_ms, GroupState.STABLE)
    out.generation_id = group.group_epoch
    out.protocol_type = PROTOCOL_TYPE
    for m in group.members.values():
        assert m.classic is not None
        out.add(
            Member(
                member_id=m.member_id,
                group_instance_id=m.instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                session_timeout_ms=m.classic.session_timeout_ms,
                protocol_type=PROTOCOL_TYPE,
                protocols=m.classic.protocols,
            )
        )
    out.protocol_name = out.select_protocol()
    for member in out.members.values():
        version = subscription_version(member.metadata(out.protocol_name))
        target = group.target.get(member.member_id, {})
        member.assignment = encode_assignment(target, min(version, 3))
    return out


class Downgrader:
    """The consumer coordinator's ``downgrade`` hook: the classic side of a downgrade."""

    def __init__(self, classic: GroupCoordinator) -> None:
        self.classic = classic

    def __call__(self, group: ConsumerGroup, rebalance: bool) -> tuple[CoordinatorRecord, ...]:
        """Install the classic group, start its rebalance if a member left (the members
        learn it from their next heartbeat; a replaced member's group stays stable), and
        return its GroupMetadata record."""
        engine = self.classic.engine
        converted = consumer_to_classic(group, self.classic.clock.now_ms())
        self.classic.groups[group.group_id] = converted
        assignment = {mid: m.assignment for mid, m in converted.members.items()}
        record = engine.group_record(converted, assignment)
        for member in converted.members.values():
            engine.reschedule_heartbeat(converted, member)
        if rebalance:
            engine.prepare_rebalance(converted)
        logger.info("consumer group %s downgraded to a classic group", group.group_id)
        return (record,)

    def undo(self, group_id: str) -> None:
        """The downgrade's step could not be appended: the consumer group is back, so the
        classic group goes (its timers find no group and do nothing)."""
        self.classic.groups.pop(group_id, None)
