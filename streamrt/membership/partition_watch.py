"""The leader's watch on its subscribed topics' partition counts (Kafka's assignment snapshot).

An assignment covers the partitions the leader saw when it ran the assignor. Partitions added
later (CreatePartitions, or a subscribed topic created after the join) belong to nobody until
the next rebalance, and a stable group has none: as Kafka's ConsumerCoordinator, the leader
compares the counts it assigned with fresh metadata every ``metadata.max.age.ms`` and asks for
a rebalance when they differ. Only the leader watches: it is the one that assigns.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence

from streamrt.admin.connection import AdminConnectionError

__all__ = ("PartitionCountWatch",)

CountsReader = Callable[[Sequence[str]], Awaitable[dict[str, int]]]


class PartitionCountWatch:
    """The counts of the last assignment this member made as leader, re-read when due."""

    def __init__(self, read: CountsReader, max_age_ms: int) -> None:
        self._read = read
        self._max_age_s = max_age_ms / 1000
        self._assigned: dict[str, int] | None = None  # None: not the leader
        self._topics: tuple[str, ...] = ()
        self._checked_at = 0.0

    def assigned(self, topics: Sequence[str], counts: Mapping[str, int]) -> None:
        """This member, as leader, assigned with ``counts`` (unknown topics absent)."""
        self._topics = tuple(topics)
        self._assigned = {t: counts.get(t, 0) for t in self._topics}
        self._checked_at = time.monotonic()

    def forget(self) -> None:
        """Not the leader of the new generation (or it did not assign): nothing to watch."""
        self._assigned = None

    async def changed(self) -> str | None:
        """When due, the reason to rebalance if a count moved; a failed lookup waits for the
        next period (the group loop's heartbeats must not stop on it)."""
        if self._assigned is None or time.monotonic() - self._checked_at < self._max_age_s:
            return None
        self._checked_at = time.monotonic()
        with contextlib.suppress(AdminConnectionError, TimeoutError):
            counts = await self._read(self._topics)
            was = self._assigned
            moved = {t: (was[t], n) for t in self._topics if (n := counts.get(t, 0)) != was[t]}
            if moved:
                return f"the subscribed topics' partition counts changed: {moved}"
        return None
