"""A streams-group member and its reconciliation state (Kafka's ``StreamsGroupMember``).

Tasks are ``subtopology id -> partitions``; a member holds active, standby and warm-up tasks
(``Tasks``, Kafka's ``TasksTuple``). Warm-ups are carried but never assigned here (Kafka 4.3
does not assign them either).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping

from streamrt.broker.modern_group.member import LEAVE_EPOCH, STATIC_LEAVE_EPOCH
from streamrt.broker.streams_group.topology import TaskIds

__all__ = (
    "LEAVE_EPOCH",
    "STATIC_LEAVE_EPOCH",
    "MemberState",
    "StreamsMember",
    "Tasks",
    "merge",
    "minus",
    "overlaps",
)


def _clean(tasks: Mapping[str, frozenset[int]]) -> dict[str, frozenset[int]]:
    return {s: frozenset(ps) for s, ps in sorted(tasks.items()) if ps}


def merge(a: TaskIds, b: TaskIds) -> dict[str, frozenset[int]]:
    out = dict(a)
    for s, ps in b.items():
        out[s] = out.get(s, frozenset()) | ps
    return _clean(out)


def minus(a: TaskIds, b: TaskIds) -> dict[str, frozenset[int]]:
    return _clean({s: ps - b.get(s, frozenset()) for s, ps in a.items()})


def overlaps(a: TaskIds, b: TaskIds) -> bool:
    return any(ps & b.get(s, frozenset()) for s, ps in a.items())


@dataclasses.dataclass(frozen=True, slots=True)
class Tasks:
    """Active, standby and warm-up tasks of one member (Kafka's ``TasksTuple``)."""

    active: TaskIds = dataclasses.field(default_factory=dict)
    standby: TaskIds = dataclasses.field(default_factory=dict)
    warmup: TaskIds = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, active: TaskIds, standby: TaskIds, warmup: TaskIds) -> Tasks:
        return cls(_clean(active), _clean(standby), _clean(warmup))

    def is_empty(self) -> bool:
        return not (_clean(self.active) or _clean(self.standby) or _clean(self.warmup))

    def merged(self, other: Tasks) -> Tasks:
        return Tasks(
            merge(self.active, other.active),
            merge(self.standby, other.standby),
            merge(self.warmup, other.warmup),
        )

    def overlaps(self, other: Tasks) -> bool:
        return (
            overlaps(self.active, other.active)
            or overlaps(self.standby, other.standby)
            or overlaps(self.warmup, other.warmup)
        )

    def contains(self, other: Tasks) -> bool:
        """Every task of ``other`` is in this one (same role)."""
        return not (
            minus(other.active, self.active)
            or minus(other.standby, self.standby)
            or minus(other.warmup, self.warmup)
        )

    def same(self, other: Tasks) -> bool:
        return (
            _clean(self.active) == _clean(other.active)
            and _clean(self.standby) == _clean(other.standby)
            and _clean(self.warmup) == _clean(other.warmup)
        )


class MemberState(enum.Enum):
    """Where a member is on its way to its target (Kafka's streams ``MemberState``)."""

    STABLE = "stable"
    #: it must first give up ``pending_revocation`` (its epoch stays until it does)
    UNREVOKED_TASKS = "unrevoked_tasks"
    #: it is at the target epoch but waits for tasks other members still hold
    UNRELEASED_TASKS = "unreleased_tasks"


@dataclasses.dataclass(frozen=True, slots=True)
class StreamsMember:
    member_id: str
    client_id: str = ""
    client_host: str = ""
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = 300_000
    topology_epoch: int = 0
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    #: what the member runs now
    assigned: Tasks = dataclasses.field(default_factory=Tasks)
    #: what it still runs but must give up
    pending_revocation: Tasks = dataclasses.field(default_factory=Tasks)
    #: (subtopology, partition) -> the member epoch at which it got that active task (Kafka's
    #: per-task assignment epochs of KAFKA-19779, the streams side of KIP-1251)
    assignment_epochs: Mapping[tuple[str, int], int] = dataclasses.field(default_factory=dict)

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == epoch

    def assignment_epoch(self, subtopology: str, partition: int) -> int | None:
        """The epoch at which this member got an active task it holds, None if it does not
        hold it active; one with no recorded epoch (a record from before) counts from the
        member's epoch, Kafka's default: older commits of it are refused, as before."""
        active = self.assigned.active.get(subtopology, frozenset())
        if partition not in active | self.pending_revocation.active.get(subtopology, frozenset()):
            return None
        return self.assignment_epochs.get((subtopology, partition), max(self.member_epoch, 0))

    def held(self) -> Tasks:
        """Tasks this member counts as owner of: assigned and not yet revoked."""
        return self.assigned.merged(self.pending_revocation)
