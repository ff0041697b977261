"""The changelog end offsets the group leader measures standby and warm-up lag against.

Kafka Streams' leader lists the end offset of every changelog partition during the assignment
and computes an instance's lag on a task as ``sum(end offsets) - sum(checkpointed offsets)``
(KIP-441). aiokafka calls the assignor synchronously, so it cannot send that ListOffsets
itself: every stream thread refreshes these ends just before it joins (any thread may become
the leader), and the assignor reads them. They are at most one rebalance old.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from streamrt.logs import fields
from streamrt.runtime.graph.topology import changelog_topic
from streamrt.topic_partition import TopicPartition

__all__ = ("ChangelogEnds",)

logger = logging.getLogger(__name__)


class ChangelogEnds:
    """Responsibilities: know each stateful task's changelog partitions, fetch their end
    offsets, give the leader each task's end-offset sum.

    :param application_id: names the changelog topics.
    :param subtopologies: sub-topology id → (source topics, store names).
    """

    def __init__(
        self,
        application_id: str,
        subtopologies: Mapping[int, tuple[tuple[str, ...], tuple[str, ...]]],
    ) -> None:
        self.application_id = application_id
        self.subtopologies = {
            sub: (tuple(sources), tuple(stores))
            for sub, (sources, stores) in subtopologies.items()
            if stores
        }
        self.ends: dict[tuple[str, int], int] = {}

    @property
    def stateful(self) -> bool:
        return bool(self.subtopologies)

    def changelogs(
        self, partitions_of: Callable[[str], Iterable[int] | None]
    ) -> list[TopicPartition]:
        """Every changelog partition of every stateful task, the task count taken from the
        source topics' partitions (changelogs are co-partitioned with them)."""
        out: list[TopicPartition] = []
        for sources, stores in self.subtopologies.values():
            count = max((len(set(partitions_of(t) or ())) for t in sources), default=0)
            for store in stores:
                topic = changelog_topic(self.application_id, store)
                out.extend(TopicPartition(topic, p) for p in range(count))
        return out

    async def refresh(
        self,
        consumer: Any,
        partitions_of: Callable[[str], Iterable[int] | None],
        timeout_s: float = 10.0,
    ) -> None:
        """ListOffsets (latest) for every changelog partition with ``consumer``; on failure the
        previous ends stay (the leader then falls back to the most advanced copy)."""
        wanted = self.changelogs(partitions_of)
        if not wanted:
            return
        try:
            ends = await asyncio.wait_for(consumer.end_offsets(wanted), timeout_s)
        except Exception as exc:  # best effort: a lag estimate must not fail a rebalance
            logger.info("changelog end offsets not refreshed", extra=fields(error=repr(exc)))
            return
        self.ends.update({(tp.topic, tp.partition): int(off) for tp, off in ends.items()})

    def task_ends(self, tasks: Iterable[str]) -> dict[str, int]:
        """Task id → the sum of its changelogs' end offsets; tasks with an unknown end are
        left out."""
        out: dict[str, int] = {}
        for task in tasks:
            sub, _, part = task.partition("_")
            spec = self.subtopologies.get(int(sub))
            if spec is None:
                continue
            keys = [(changelog_topic(self.application_id, s), int(part)) for s in spec[1]]
            if all(k in self.ends for k in keys):
                out[task] = sum(self.ends[k] for k in keys)
        return out
