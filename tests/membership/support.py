"""What the membership tests share: a round-robin assignor, a recording listener, members."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Mapping
from typing import Any

from streamrt.membership.assignment import MemberSubscription
from streamrt.membership.config import MemberConfig
from streamrt.membership.member import GroupMember, RebalanceListener
from streamrt.membership.protocol import TopicPartition

TIMINGS = {
    "session.timeout.ms": 10_000,
    "rebalance.timeout.ms": 10_000,
    "heartbeat.interval.ms": 200,
}


class RoundRobin:
    """Partitions, sorted, dealt to members sorted by instance id (else member id)."""

    name = "roundrobin"
    runs = 0  # how often this member ran the assignment (as the group's leader)

    def assign(
        self, members: Mapping[str, MemberSubscription], partitions_per_topic: Mapping[str, int]
    ) -> dict[str, set[TopicPartition]]:
        self.runs += 1
        order = sorted(members, key=lambda m: (members[m].group_instance_id or "", m))
        out: dict[str, set[TopicPartition]] = {m: set() for m in order}
        topics = sorted({t for m in members.values() for t in m.subscription.topics})
        partitions = [(t, p) for t in topics for p in range(partitions_per_topic.get(t, 0))]
        for i, tp in enumerate(partitions):
            out[order[i % len(order)]].add(tp)
        return out


@dataclasses.dataclass
class Event:
    kind: str  # "revoked" | "assigned" | "lost"
    partitions: frozenset[TopicPartition]
    generation: int  # the member's generation when the callback ran


class Recorder(RebalanceListener):
    """Records every callback with the member's generation at that moment."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.member: GroupMember | None = None

    def _record(self, kind: str, partitions: set[TopicPartition]) -> None:
        generation = self.member.generation if self.member is not None else -1
        self.events.append(Event(kind, frozenset(partitions), generation))

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self._record("revoked", partitions)

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self._record("assigned", partitions)

    async def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self._record("lost", partitions)

    def of(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.kind == kind]

    def all(self, kind: str) -> set[TopicPartition]:
        return {tp for e in self.of(kind) for tp in e.partitions}


def member(
    bootstrap: str,
    group: str,
    topic: str,
    *,
    instance: str | None = None,
    protocol: str = "eager",
    **overrides: Any,
) -> GroupMember:
    settings: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "rebalance.protocol": protocol,
        "client.id": f"test-{instance or 'dynamic'}",
        **TIMINGS,
        **overrides,
    }
    if instance is not None:
        settings["group.instance.id"] = instance
    recorder = Recorder()
    m = GroupMember(MemberConfig.from_config(settings), [topic], RoundRobin(), recorder)
    recorder.member = m
    return m


def recorder(m: GroupMember) -> Recorder:
    listener = m.listener
    assert isinstance(listener, Recorder)
    return listener


def balanced(members: list[GroupMember], partitions: int, topic: str) -> bool:
    """Every partition owned by exactly one member, counts differing by at most one, and
    everyone in the same generation."""
    owned = [m.assignment for m in members]
    union = set().union(*owned)
    sizes = [len(o) for o in owned]
    return (
        union == {(topic, p) for p in range(partitions)}
        and sum(sizes) == partitions
        and max(sizes) - min(sizes) <= 1
        and len({m.generation for m in members}) == 1
    )


@contextlib.asynccontextmanager
async def closing(members: list[GroupMember]) -> AsyncIterator[list[GroupMember]]:
    """Close every member in ``members`` (also ones appended inside the block)."""
    try:
        yield members
    finally:
        for m in members:
            with contextlib.suppress(Exception):
                await m.close()
