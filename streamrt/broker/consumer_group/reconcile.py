"""A member's step towards its target assignment (Kafka's ``CurrentAssignmentBuilder``).

The rule that keeps two consumers from reading one partition: a partition moves to its new
owner only once no other member holds it, and a member gives partitions up by reporting (in
its heartbeat's owned partitions) that it no longer has them. Until then it keeps its epoch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from streamrt.broker.consumer_group.assignors import Assignment
from streamrt.broker.consumer_group.member import ConsumerMember, MemberState
from streamrt.broker.modern_group.commit_epochs import assignment_epochs

__all__ = ("reconcile",)

#: -1 if no member holds the partition, else the epoch of the member holding it
OwnerEpoch = Callable[[str, int], int]


def reconcile(
    member: ConsumerMember,
    target_epoch: int,
    target: Assignment,
    owner_epoch: OwnerEpoch,
    owned: Mapping[str, frozenset[int]] | None,
) -> ConsumerMember:
    """The member after this heartbeat; ``owned`` is what it reported (None: not sent)."""
    if member.state is MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return _next(member, member.member_epoch, target_epoch, target, owner_epoch, owned)
        return member
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if owned is not None and not _intersects(member.pending_revocation, owned):
            # revoked: it can move on (to the target epoch if nothing else is pending)
            return _next(member, member.member_epoch, target_epoch, target, owner_epoch, owned)
        return member
    # UNRELEASED_PARTITIONS: maybe the partitions it waits for are free now
    return _next(member, member.member_epoch, target_epoch, target, owner_epoch, owned)


def _next(
    member: ConsumerMember,
    epoch: int,
    target_epoch: int,
    target: Assignment,
    owner_epoch: OwnerEpoch,
    owned: Mapping[str, frozenset[int]] | None,
) -> ConsumerMember:
    kept: dict[str, frozenset[int]] = {}
    revoke: dict[str, frozenset[int]] = {}
    gain: dict[str, frozenset[int]] = {}
    unreleased = False
    for topic in sorted(set(target) | set(member.assigned)):
        want = target.get(topic, frozenset())
        have = member.assigned.get(topic, frozenset())
        if have & want:
            kept[topic] = have & want
        if have - want:
            revoke[topic] = have - want
        free = frozenset(p for p in want - have if owner_epoch(topic, p) == -1)
        if len(free) < len(want - have):
            unreleased = True
        if free:
            gain[topic] = free
    if revoke and (owned is None or _intersects(revoke, owned)):
        return dataclasses.replace(
            member,
            state=MemberState.UNREVOKED_PARTITIONS,
            member_epoch=epoch,
            previous_member_epoch=member.member_epoch,
            assigned=kept,
            pending_revocation=revoke,
            assignment_epochs=assignment_epochs(member.assignment_epoch, (kept, revoke), epoch),
        )
    assigned = dict(kept)
    for topic, ps in gain.items():
        assigned[topic] = assigned.get(topic, frozenset()) | ps
    return dataclasses.replace(
        member,
        state=MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE,
        member_epoch=target_epoch,
        previous_member_epoch=member.member_epoch,
        assigned=assigned,
        pending_revocation={},
        assignment_epochs=assignment_epochs(member.assignment_epoch, (assigned,), target_epoch),
    )


def _intersects(a: Mapping[str, frozenset[int]], b: Mapping[str, frozenset[int]]) -> bool:
    return any(a[t] & b.get(t, frozenset()) for t in a)
