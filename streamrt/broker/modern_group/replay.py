"""Replay steps both group protocols share (Kafka's ``GroupMetadataManager.replay``): a value
record applied to its group (created by it, but not by one that fails to decode), and the
tombstones of the record types both protocols have."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, MutableMapping
from typing import Any, TypeVar

from streamrt.broker.modern_group.member import LEAVE_EPOCH, ModernGroup
from streamrt.broker.modern_group.records import GroupKey

__all__ = ("MemberRecordTypes", "replay_tombstone", "replay_value")

G = TypeVar("G", bound=ModernGroup[Any])


@dataclasses.dataclass(frozen=True, slots=True)
class MemberRecordTypes:
    """One protocol's numbers of the record types both have."""

    group_metadata: int
    member_metadata: int
    target_member: int
    current_assignment: int


def replay_value(
    groups: MutableMapping[str, G],
    group_id: str,
    new: Callable[[str], G],
    apply: Callable[[G], None],
) -> None:
    """``apply`` the record to its group, creating the group first if needed; an undecodable
    record (the loader skips it) creates no group."""
    group = groups.get(group_id)
    created = group is None
    if group is None:
        group = groups[group_id] = new(group_id)
    try:
        apply(group)
    except Exception:
        if created:
            del groups[group_id]
        raise


def replay_tombstone(
    groups: MutableMapping[str, G],
    key: GroupKey,
    types: MemberRecordTypes,
    empty: Callable[[], object],
) -> G | None:
    """Apply the tombstone of a shared type; returns the group for a type left to the
    protocol (None if the group is unknown or the tombstone is done). A deleted current
    assignment leaves the member at ``LEAVE_EPOCH`` holding ``empty()``."""
    gid, kind, mid = key.group_id, key.record_type, key.member_id or ""
    group = groups.get(gid)
    if group is None:
        return None
    if kind == types.group_metadata:
        del groups[gid]
    elif kind == types.member_metadata:
        group.remove(mid)
    elif kind == types.target_member:
        group.target.pop(mid, None)
    elif kind == types.current_assignment:
        member = group.members.get(mid)
        if member is not None:
            group.put(
                dataclasses.replace(
                    member,
                    member_epoch=LEAVE_EPOCH,
                    previous_member_epoch=LEAVE_EPOCH,
                    assigned=empty(),
                    pending_revocation=empty(),
                )
            )
    else:
        return group
    return None
