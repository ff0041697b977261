"""A member's step towards its target tasks (Kafka's streams ``CurrentAssignmentBuilder``).

The rule that keeps two members of a streams group from running one active task, or one
process from holding a task twice: an active task moves to its new owner only once no member
holds it active and the new owner's process holds it in no other role; a standby or warm-up
task only once the member's process holds it in no role. A member gives tasks up by reporting
(in its heartbeat's owned tasks) that it no longer runs them; until then it keeps its epoch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from streamrt.broker.modern_group.commit_epochs import assignment_epochs
from streamrt.broker.streams_group.member import MemberState, StreamsMember, Tasks
from streamrt.broker.streams_group.topology import TaskIds

__all__ = ("Owners", "reconcile")


@dataclasses.dataclass(frozen=True, slots=True)
class Owners:
    """Who holds a task now: the process of its active owner (or None), the processes
    holding it as standby and as warm-up (Kafka's ``currentActiveTaskProcessId`` etc.)."""

    active: Callable[[str, int], str | None]
    standby: Callable[[str, int], frozenset[str]]
    warmup: Callable[[str, int], frozenset[str]]


def reconcile(
    member: StreamsMember,
    target_epoch: int,
    target: Tasks,
    owners: Owners,
    owned: Tasks | None,
) -> StreamsMember:
    """The member after this heartbeat; ``owned`` is what it reported (None: not sent)."""
    if member.state is MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return _next(member, member.member_epoch, target_epoch, target, owners, owned)
        return member
    if member.state is MemberState.UNREVOKED_TASKS:
        if owned is None or owned.overlaps(member.pending_revocation):
            return member
        # revoked: it moves on (one epoch up, as Kafka's builder does, or to the target)
        return _next(member, member.member_epoch + 1, target_epoch, target, owners, owned)
    return _next(member, member.member_epoch, target_epoch, target, owners, owned)


def _difference(
    current: TaskIds, target: TaskIds, unreleased: Callable[[str, int], bool]
) -> tuple[dict[str, frozenset[int]], dict[str, frozenset[int]], dict[str, frozenset[int]], bool]:
    """(kept, to revoke, to gain now, whether some target task is not free yet)."""
    kept: dict[str, frozenset[int]] = {}
    revoke: dict[str, frozenset[int]] = {}
    gain: dict[str, frozenset[int]] = {}
    waiting = False
    for sub in sorted(set(current) | set(target)):
        have = frozenset(current.get(sub, frozenset()))
        want = frozenset(target.get(sub, frozenset()))
        if have & want:
            kept[sub] = have & want
        if have - want:
            revoke[sub] = have - want
        free = frozenset(p for p in want - have if not unreleased(sub, p))
        waiting = waiting or len(free) < len(want - have)
        if free:
            gain[sub] = free
    return kept, revoke, gain, waiting


def _next(
    member: StreamsMember,
    epoch: int,
    target_epoch: int,
    target: Tasks,
    owners: Owners,
    owned: Tasks | None,
) -> StreamsMember:
    process = member.process_id

    def elsewhere(sub: str, p: int) -> bool:  # this process holds it as standby or warm-up
        return process in owners.standby(sub, p) or process in owners.warmup(sub, p)

    def active_taken(sub: str, p: int) -> bool:
        return owners.active(sub, p) is not None or elsewhere(sub, p)

    def on_this_process(sub: str, p: int) -> bool:
        return owners.active(sub, p) == process or elsewhere(sub, p)

    a_kept, a_revoke, a_gain, a_wait = _difference(
        member.assigned.active, target.active, active_taken
    )
    s_kept, s_revoke, s_gain, s_wait = _difference(
        member.assigned.standby, target.standby, on_this_process
    )
    w_kept, w_revoke, w_gain, w_wait = _difference(
        member.assigned.warmup, target.warmup, on_this_process
    )
    kept = Tasks(a_kept, s_kept, w_kept)
    revoke = Tasks(a_revoke, s_revoke, w_revoke)
    gain = Tasks(a_gain, s_gain, w_gain)
    waiting = a_wait or s_wait or w_wait
    if not revoke.is_empty() and (owned is None or owned.overlaps(revoke)):
        return dataclasses.replace(
            member,
            state=MemberState.UNREVOKED_TASKS,
            member_epoch=epoch,
            previous_member_epoch=member.member_epoch,
            assigned=kept,
            pending_revocation=revoke,
            assignment_epochs=assignment_epochs(
                member.assignment_epoch, (kept.active, revoke.active), epoch
            ),
        )
    assigned = kept.merged(gain)
    return dataclasses.replace(
        member,
        state=MemberState.UNRELEASED_TASKS if waiting else MemberState.STABLE,
        member_epoch=target_epoch,
        previous_member_epoch=member.member_epoch,
        assigned=assigned,
        pending_revocation=Tasks(),
        assignment_epochs=assignment_epochs(
            member.assignment_epoch, (assigned.active,), target_epoch
        ),
    )
