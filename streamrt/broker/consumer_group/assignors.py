"""Server-side assignors of consumer groups: ``uniform`` (sticky) and ``range``.

Pure functions from the members' subscriptions, their current target assignment and the
partition counts of the subscribed topics to a new target assignment (Kafka's
``ConsumerGroupPartitionAssignor``). Written from the behaviour Kafka documents, not its code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

__all__ = ("ASSIGNORS", "Assignment", "MemberSpec", "range_assign", "uniform_assign")

#: topic name -> partitions of one member
Assignment = dict[str, frozenset[int]]
TopicPartition = tuple[str, int]


@dataclasses.dataclass(frozen=True, slots=True)
class MemberSpec:
    """What an assignor knows of a member: its subscribed (existing) topics and what it holds
    in the current target assignment (for stickiness)."""

    topics: frozenset[str]
    current: Mapping[str, frozenset[int]] = dataclasses.field(default_factory=dict)


Assignor = Callable[[Mapping[str, MemberSpec], Mapping[str, int]], dict[str, Assignment]]


def _pack(pairs: list[TopicPartition]) -> Assignment:
    out: dict[str, set[int]] = {}
    for topic, partition in pairs:
        out.setdefault(topic, set()).add(partition)
    return {topic: frozenset(ps) for topic, ps in out.items()}


def uniform_assign(
    members: Mapping[str, MemberSpec], partitions: Mapping[str, int]
) -> dict[str, Assignment]:
    """Spread every subscribed partition evenly; a member keeps what it had up to its quota.

    Quotas: ``P // N`` each, and ``P % N`` members one more; members that held more than the
    base keep one extra first, so a member joining takes partitions only from those above
    quota (the others keep theirs: no needless revocation). Heterogeneous subscriptions are
    balanced greedily (least-loaded subscribed member first).
    """
    ids = sorted(members)
    if not ids:
        return {}
    topics = sorted({t for m in members.values() for t in m.topics if t in partitions})
    every = [(t, p) for t in topics for p in range(partitions[t])]
    base, extra = divmod(len(every), len(ids))
    owned: dict[str, list[TopicPartition]] = {m: [] for m in ids}
    taken: set[TopicPartition] = set()
    surplus: dict[str, list[TopicPartition]] = {}
    for m in ids:
        spec = members[m]
        keep = sorted(
            (t, p)
            for t, ps in spec.current.items()
            if t in spec.topics and t in partitions
            for p in ps
            if p < partitions[t]
        )
        owned[m].extend(keep[:base])
        taken.update(keep[:base])
        surplus[m] = keep[base:]
    for m in ids:
        if extra <= 0:
            break
        spare = [tp for tp in surplus[m] if tp not in taken]
        if spare:
            owned[m].append(spare[0])
            taken.add(spare[0])
            extra -= 1
    for tp in every:
        if tp in taken:
            continue
        candidates = [m for m in ids if tp[0] in members[m].topics]
        if candidates:
            best = min(candidates, key=lambda m: (len(owned[m]), m))
            owned[best].append(tp)
            taken.add(tp)
    return {m: _pack(owned[m]) for m in ids}


def range_assign(
    members: Mapping[str, MemberSpec], partitions: Mapping[str, int]
) -> dict[str, Assignment]:
    """Per topic, its subscribers (by member id) get consecutive ranges, the first ones one
    more: members subscribed to co-partitioned topics get the same partition numbers."""
    out: dict[str, dict[str, frozenset[int]]] = {m: {} for m in members}
    topics = sorted({t for m in members.values() for t in m.topics if t in partitions})
    for topic in topics:
        subs = sorted(m for m, spec in members.items() if topic in spec.topics)
        per, extra = divmod(partitions[topic], len(subs))
        start = 0
        for i, m in enumerate(subs):
            count = per + (1 if i < extra else 0)
            if count:
                out[m][topic] = frozenset(range(start, start + count))
            start += count
    return out


ASSIGNORS: Mapping[str, Assignor] = {"uniform": uniform_assign, "range": range_assign}
