"""A consumer group's state in ``__consumer_offsets``: the records one step writes, and replay.

A step of the coordinator mutates its group in memory; :func:`records_between` compares an
image taken before the step with one taken after and yields Kafka's records for what changed
(Kafka builds the same records first and replays them: the log ends up the same). The records
go in Kafka's order: a removed member's current assignment, target and metadata tombstones,
then new or changed members' metadata, the group epoch, target members, the target epoch, and
current assignments. :func:`replay` rebuilds the group from them at load.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping, MutableMapping

from streamrt.broker.consumer_group import records as rec
from streamrt.broker.consumer_group.assignors import Assignment
from streamrt.broker.consumer_group.group import ConsumerGroup
from streamrt.broker.consumer_group.member import ConsumerMember, same
from streamrt.broker.coordination.result import CoordinatorRecord
from streamrt.broker.modern_group.replay import MemberRecordTypes, replay_tombstone, replay_value

__all__ = ("GroupImage", "image", "rebuild", "records_between", "replay")

_TYPES = MemberRecordTypes(
    rec.GROUP_METADATA,
    rec.MEMBER_METADATA,
    rec.TARGET_ASSIGNMENT_MEMBER,
    rec.CURRENT_MEMBER_ASSIGNMENT,
)


@dataclasses.dataclass(frozen=True, slots=True)
class GroupImage:
    """What of a group is persisted (members are frozen, so copying the maps suffices)."""

    group_epoch: int
    assignment_epoch: int
    members: Mapping[str, ConsumerMember]
    target: Mapping[str, Assignment]
    subscription: Mapping[str, int] = dataclasses.field(default_factory=dict)  # not written


def image(group: ConsumerGroup | None) -> GroupImage | None:
    if group is None:
        return None
    return GroupImage(
        group.group_epoch,
        group.assignment_epoch,
        dict(group.members),
        dict(group.target),
        dict(group.subscription_metadata),
    )


def rebuild(group_id: str, before: GroupImage, now: ConsumerGroup | None) -> ConsumerGroup:
    """The group as ``before`` shows it: a step whose records did not reach the log is undone
    (Kafka reverts its in-memory state to the last committed offset)."""
    group = ConsumerGroup(group_id)
    group.group_epoch, group.assignment_epoch = before.group_epoch, before.assignment_epoch
    for member in before.members.values():
        group.put(member)
    group.target = dict(before.target)
    group.subscription_metadata = dict(before.subscription)
    if now is not None:
        group.assignor_name, group.assignments_computed = (
            now.assignor_name,
            now.assignments_computed,
        )
    return group


def _metadata_changed(a: ConsumerMember, b: ConsumerMember) -> bool:
    fields = (
        "instance_id",
        "rack_id",
        "client_id",
        "client_host",
        "subscribed_topic_names",
        "subscribed_topic_regex",
        "rebalance_timeout_ms",
        "server_assignor",
        "classic",
    )
    return any(getattr(a, f) != getattr(b, f) for f in fields)


def _assignment_changed(a: ConsumerMember, b: ConsumerMember) -> bool:
    return (
        a.member_epoch != b.member_epoch
        or a.previous_member_epoch != b.previous_member_epoch
        or a.state is not b.state
        or not same(a.assigned, b.assigned)
        or not same(a.pending_revocation, b.pending_revocation)
        or a.assignment_epochs != b.assignment_epochs
    )


def _member_tombstones(group_id: str, member_id: str) -> list[CoordinatorRecord]:
    return [
        rec.tombstone(rec.CURRENT_MEMBER_ASSIGNMENT, group_id, member_id),
        rec.tombstone(rec.TARGET_ASSIGNMENT_MEMBER, group_id, member_id),
        rec.tombstone(rec.MEMBER_METADATA, group_id, member_id),
    ]


def records_between(
    group_id: str,
    before: GroupImage | None,
    after: GroupImage | None,
    ids: Mapping[str, uuid.UUID],
) -> tuple[CoordinatorRecord, ...]:
    """The records taking the log from ``before`` to ``after`` (``None``: no group)."""
    if after is None:
        if before is None:
            return ()
        out = [r for mid in sorted(before.members) for r in _member_tombstones(group_id, mid)]
        out += [
            rec.tombstone(rec.TARGET_ASSIGNMENT_METADATA, group_id),
            rec.tombstone(rec.PARTITION_METADATA, group_id),
            rec.tombstone(rec.GROUP_METADATA, group_id),
        ]
        return tuple(out)
    old = before or GroupImage(-1, -1, {}, {})
    out = [
        r
        for mid in sorted(set(old.members) - set(after.members))
        for r in _member_tombstones(group_id, mid)
    ]
    # members are frozen and replaced on change: an identical object is unchanged (the
    # usual case for all but the heartbeating member, so a step costs O(members) lookups)
    changed = sorted(
        (mid, m, old.members.get(mid))
        for mid, m in after.members.items()
        if old.members.get(mid) is not m
    )
    for _mid, m, prev in changed:
        if prev is None or _metadata_changed(prev, m):
            out.append(rec.member_metadata_record(group_id, m))
    if after.group_epoch != old.group_epoch:
        out.append(rec.group_epoch_record(group_id, after.group_epoch))
    targets = sorted(
        (mid, target)
        for mid, target in after.target.items()
        if old.target.get(mid) is not target and mid in after.members
    )
    for mid, target in targets:
        was = old.target.get(mid)
        if was is None or not same(was, target):
            out.append(rec.target_member_record(group_id, mid, target, ids))
    if after.assignment_epoch != old.assignment_epoch:
        out.append(rec.target_epoch_record(group_id, after.assignment_epoch))
    for _mid, m, prev in changed:
        if prev is None or _assignment_changed(prev, m):
            out.append(rec.current_assignment_record(group_id, m, ids))
    return tuple(out)


def replay(
    groups: MutableMapping[str, ConsumerGroup],
    key: rec.ConsumerKey,
    value: bytes | None,
    names: Mapping[uuid.UUID, str],
) -> None:
    """Apply one consumer-group record (Kafka's ``GroupMetadataManager.replay``)."""
    if value is None:
        _replay_tombstone(groups, key)
    elif key.record_type != rec.PARTITION_METADATA:  # deprecated: recomputed after load
        replay_value(
            groups, key.group_id, ConsumerGroup, lambda g: _replay_value(g, key, value, names)
        )


def _replay_tombstone(groups: MutableMapping[str, ConsumerGroup], key: rec.ConsumerKey) -> None:
    replay_tombstone(groups, key, _TYPES, dict)


def _replay_value(
    group: ConsumerGroup, key: rec.ConsumerKey, value: bytes, names: Mapping[uuid.UUID, str]
) -> None:
    kind, mid = key.record_type, key.member_id or ""
    if kind == rec.GROUP_METADATA:
        group.group_epoch = rec.decode_epoch(value)
    elif kind == rec.TARGET_ASSIGNMENT_METADATA:
        group.assignment_epoch = rec.decode_epoch(value)
    elif kind == rec.TARGET_ASSIGNMENT_MEMBER:
        group.target[mid] = rec.decode_partitions(value, names)
    elif kind == rec.MEMBER_METADATA:
        f = rec.decode_member_fields(value)
        member = group.members.get(mid) or ConsumerMember(member_id=mid)
        group.put(
            dataclasses.replace(
                member,
                instance_id=f.instance_id,
                rack_id=f.rack_id,
                client_id=f.client_id,
                client_host=f.client_host,
                subscribed_topic_names=f.subscribed_topic_names,
                subscribed_topic_regex=f.subscribed_topic_regex,
                rebalance_timeout_ms=f.rebalance_timeout_ms,
                server_assignor=f.server_assignor,
                classic=f.classic,
            )
        )
    elif kind == rec.CURRENT_MEMBER_ASSIGNMENT:
        a = rec.decode_current_assignment(value, names)
        member = group.members.get(mid) or ConsumerMember(member_id=mid)
        group.put(
            dataclasses.replace(
                member,
                member_epoch=a.member_epoch,
                previous_member_epoch=a.previous_member_epoch,
                state=a.state,
                assigned=a.assigned,
                pending_revocation=a.pending_revocation,
                assignment_epochs=a.assignment_epochs,
            )
        )
