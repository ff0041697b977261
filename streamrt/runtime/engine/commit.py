"""The at-least-once commit, in one place, over small protocols (no broker needed to test it).

Order, and why:

0. flush each task's record cache: cached updates reach the stores, the changelogs and the
   sinks (as producer sends), so that step 1 delivers them;
1. flush the producer: every sink and changelog record is delivered, and we learn the
   changelog offset each store reached;
2. each task writes each store's data with that offset in one WriteBatch per store (and the
   checkpoint hint), so a store never claims data its changelog does not hold;
3. commit the input offsets.

A failure at 1 or 2 raises before 3: the input is read again, which at-least-once allows.
Exactly-once (issue 15) replaces 1 and 3 with a transaction around the same step 2.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from streamrt.clock import Clock
from streamrt.state import TopicPartition

__all__ = ("CommitSchedule", "Committable", "OffsetCommitter", "ProducerFlush", "commit")


class ProducerFlush(Protocol):
    async def flush(self) -> Mapping[TopicPartition, int]:
        """Deliver everything sent; the next offset reached per partition."""
        ...


class Committable(Protocol):
    """A task: flushes its cache (step 0) and state (step 2), hands over its input offsets."""

    def flush_cache(self) -> None: ...

    def flush_state(self, delivered: dict[TopicPartition, int]) -> None: ...

    def take_offsets(self) -> dict[TopicPartition, int]: ...


class OffsetCommitter(Protocol):
    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None: ...


async def commit(
    producer: ProducerFlush, tasks: Iterable[Committable], committer: OffsetCommitter
) -> dict[TopicPartition, int]:
    """Run steps 0-3; returns the input offsets committed (empty: nothing to commit)."""
    tasks = list(tasks)
    for task in tasks:
        task.flush_cache()  # 0
    delivered = dict(await producer.flush())  # 1
    for task in tasks:
        task.flush_state(delivered)  # 2
    offsets: dict[TopicPartition, int] = {}
    for task in tasks:
        offsets.update(task.take_offsets())
    if offsets:
        await committer.commit(offsets)  # 3
    return offsets


class CommitSchedule:
    """When the next periodic commit is due (``commit.interval.ms``), on an injected clock."""

    def __init__(self, clock: Clock, interval_ms: int) -> None:
        self._clock = clock
        self.interval_ms = interval_ms
        self._next_ms = clock.now_ms() + interval_ms

    def due(self) -> bool:
        return self._clock.now_ms() >= self._next_ms

    def committed(self) -> None:
        """Start the next interval from now."""
        self._next_ms = self._clock.now_ms() + self.interval_ms
