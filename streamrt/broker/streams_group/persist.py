"""A streams group's state in ``__consumer_offsets``: the records one step writes, and replay.

As for consumer groups (``consumer_group/persist.py``): a step mutates the group in memory;
:func:`records_between` compares an image taken before it with one taken after and yields
Kafka's records for what changed, in Kafka's order (a removed member's current assignment,
target and metadata tombstones; then the topology, new or changed members' metadata, the
group metadata, target members, the target epoch, current assignments). :func:`replay` rebuilds
the groups at load, so members keep their ids, epochs and tasks across a broker restart.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, MutableMapping

from streamrt.broker.coordination.result import CoordinatorRecord
from streamrt.broker.modern_group.replay import MemberRecordTypes, replay_tombstone, replay_value
from streamrt.broker.streams_group import records as rec
from streamrt.broker.streams_group.group import StreamsGroup
from streamrt.broker.streams_group.member import StreamsMember, Tasks
from streamrt.broker.streams_group.topology import StreamsTopology

__all__ = ("GroupImage", "image", "records_between", "replay")

_TYPES = MemberRecordTypes(
    rec.GROUP_METADATA,
    rec.MEMBER_METADATA,
    rec.TARGET_ASSIGNMENT_MEMBER,
    rec.CURRENT_MEMBER_ASSIGNMENT,
)

_METADATA_FIELDS = (
    "instance_id",
    "rack_id",
    "client_id",
    "client_host",
    "rebalance_timeout_ms",
    "topology_epoch",
    "process_id",
    "user_endpoint",
    "client_tags",
)


@dataclasses.dataclass(frozen=True, slots=True)
class GroupImage:
    """What of a group is persisted (members are frozen, so copying the maps suffices)."""

    meta: rec.GroupMetadata
    assignment_epoch: int
    topology: StreamsTopology | None
    members: Mapping[str, StreamsMember]
    target: Mapping[str, Tasks]
    metadata: Mapping[str, int]


def image(group: StreamsGroup | None) -> GroupImage | None:
    if group is None:
        return None
    meta = rec.GroupMetadata(
        group.group_epoch, group.validated_topology_epoch, group.standby_replicas_used
    )
    return GroupImage(
        meta,
        group.assignment_epoch,
        group.topology,
        dict(group.members),
        dict(group.target),
        dict(group.metadata),
    )


def _metadata_changed(a: StreamsMember, b: StreamsMember) -> bool:
    return any(getattr(a, f) != getattr(b, f) for f in _METADATA_FIELDS)


def _assignment_changed(a: StreamsMember, b: StreamsMember) -> bool:
    return (
        (a.member_epoch, a.previous_member_epoch, a.state)
        != (b.member_epoch, b.previous_member_epoch, b.state)
        or not a.assigned.same(b.assigned)
        or not a.pending_revocation.same(b.pending_revocation)
        or a.assignment_epochs != b.assignment_epochs
    )


def _member_tombstones(group_id: str, member_id: str) -> list[CoordinatorRecord]:
    return [
        rec.tombstone(rec.CURRENT_MEMBER_ASSIGNMENT, group_id, member_id),
        rec.tombstone(rec.TARGET_ASSIGNMENT_MEMBER, group_id, member_id),
        rec.tombstone(rec.MEMBER_METADATA, group_id, member_id),
    ]


def _deleted(group_id: str, before: GroupImage) -> tuple[CoordinatorRecord, ...]:
    out = [r for mid in sorted(before.members) for r in _member_tombstones(group_id, mid)]
    out += [
        rec.tombstone(rec.TARGET_ASSIGNMENT_METADATA, group_id),
        rec.tombstone(rec.TOPOLOGY, group_id),
        rec.tombstone(rec.GROUP_METADATA, group_id),
    ]
    return tuple(out)


def records_between(
    group_id: str, before: GroupImage | None, after: GroupImage | None
) -> tuple[CoordinatorRecord, ...]:
    """The records taking the log from ``before`` to ``after`` (``None``: no group)."""
    if after is None:
        return () if before is None else _deleted(group_id, before)
    old = before or GroupImage(rec.GroupMetadata(-1, -1, -1), -1, None, {}, {}, {})
    out = [
        r
        for mid in sorted(set(old.members) - set(after.members))
        for r in _member_tombstones(group_id, mid)
    ]
    if after.topology is not None and after.topology != old.topology:
        out.append(rec.topology_record(group_id, after.topology))
    changed = sorted(
        (mid, m, old.members.get(mid))
        for mid, m in after.members.items()
        if old.members.get(mid) is not m
    )
    for _mid, m, prev in changed:
        if prev is None or _metadata_changed(prev, m):
            out.append(rec.member_metadata_record(group_id, m))
    if after.meta != old.meta:
        out.append(rec.group_metadata_record(group_id, after.meta, after.metadata))
    for mid, target in sorted(after.target.items()):
        was = old.target.get(mid)
        if was is target:  # targets are frozen: the same object is unchanged (the usual case)
            continue
        if mid in after.members and (was is None or not was.same(target)):
            out.append(rec.target_member_record(group_id, mid, target))
    if after.assignment_epoch != old.assignment_epoch:
        out.append(rec.target_epoch_record(group_id, after.assignment_epoch))
    for _mid, m, prev in changed:
        if prev is None or _assignment_changed(prev, m):
            out.append(rec.current_assignment_record(group_id, m))
    return tuple(out)


def replay(groups: MutableMapping[str, StreamsGroup], raw_key: bytes, value: bytes | None) -> bool:
    """Apply one record if it is a streams-group one (True); Kafka's ``replay``."""
    key = rec.decode_key(raw_key)
    if key is None:
        return False
    if value is None:
        _replay_tombstone(groups, key)
        return True
    replay_value(groups, key.group_id, StreamsGroup, lambda g: _replay_value(g, key, value))
    return True


def _replay_tombstone(groups: MutableMapping[str, StreamsGroup], key: rec.StreamsKey) -> None:
    group = replay_tombstone(groups, key, _TYPES, Tasks)
    if group is not None and key.record_type == rec.TOPOLOGY:
        group.topology = None


def _replay_value(group: StreamsGroup, key: rec.StreamsKey, value: bytes) -> None:
    kind, mid = key.record_type, key.member_id or ""
    if kind == rec.GROUP_METADATA:
        meta = rec.decode_group_metadata(value)
        group.group_epoch = meta.epoch
        group.validated_topology_epoch = meta.validated_topology_epoch
        group.standby_replicas_used = meta.standby_replicas
    elif kind == rec.TOPOLOGY:
        group.topology = rec.decode_topology(value)
    elif kind == rec.TARGET_ASSIGNMENT_METADATA:
        group.assignment_epoch = rec.decode_target_epoch(value)
    elif kind == rec.TARGET_ASSIGNMENT_MEMBER:
        group.target[mid] = rec.decode_target(value)
    elif kind == rec.MEMBER_METADATA:
        member = group.members.get(mid) or StreamsMember(member_id=mid)
        group.put(rec.decode_member_metadata(value, member))
    elif kind == rec.CURRENT_MEMBER_ASSIGNMENT:
        member = group.members.get(mid) or StreamsMember(member_id=mid)
        group.put(rec.decode_current_assignment(value, member))
