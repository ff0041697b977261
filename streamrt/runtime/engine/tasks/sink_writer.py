"""What one sink node of a task does with a record before the collector sends it.

Kafka Streams' ``RecordCollectorImpl.send`` with a ``StreamPartitioner`` (KIP-837): the topic
(fixed, or a ``TopicNameExtractor``'s), then the partitions, then the bytes. The partitioner
gets the record's key and value (not bytes) and the topic's partition count, and answers
``None`` (the producer's default partitioning: murmur2 of the key bytes), a collection of
partitions (the record is sent to each: multicast) or an empty one (the record is dropped,
counted in ``dropped-records``). A windowed key's ``to()`` without a partitioner gets Kafka's
``WindowedStreamPartitioner`` when the topology is built (``runtime/graph/windowed_serdes``),
so it arrives here as any partitioner. Kept out of :mod:`.task` so the task stays one job.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Protocol

from streamrt.errors import ConfigError
from streamrt.logs import fields
from streamrt.runtime.graph.topology import StreamPartitioner, TopicNameExtractor
from streamrt.serde import Serde

__all__ = (
    "DEFAULT_PARTITIONING",
    "PartitionChooser",
    "PartitionCounts",
    "SinkPlan",
    "chosen_partitions",
    "fixed_counts",
    "sink_plan",
)

logger = logging.getLogger(__name__)

#: the partitions of a record left to the producer's partitioner (no partitioner, or None)
DEFAULT_PARTITIONING: tuple[int | None, ...] = (None,)

SinkPlan = tuple["str | TopicNameExtractor", "Serde[Any]", "Serde[Any]", "PartitionChooser | None"]


class PartitionCounts(Protocol):
    """How many partitions a topic has (the thread's producer's metadata; Kafka's
    ``partitionsFor``). ``checks_range``: whether a partition the partitioner names must be
    below that count (Kafka's test driver reports one partition and checks nothing)."""

    @property
    def checks_range(self) -> bool: ...

    def partitions_for(self, topic: str) -> int: ...


def chosen_partitions(
    partitioner: StreamPartitioner,
    topic: str,
    key: Any,
    value: Any,
    counts: PartitionCounts | None,
) -> tuple[int | None, ...]:
    """The partitions ``partitioner`` sends one record to, checked: ``(None,)`` for the
    default partitioning, ``()`` to drop it. Raises ``ConfigError`` for an answer that is not
    None or a collection of partition numbers in range, or a topic without partitions."""
    if counts is None:
        raise ConfigError(f"a stream partitioner for {topic!r} needs the topic's partition count")
    count = counts.partitions_for(topic)
    if count < 1:
        raise ConfigError(
            f"could not get partition information for topic {topic!r} (does it exist?)"
        )
    answer = partitioner(topic, key, value, count)
    if answer is None:
        return DEFAULT_PARTITIONING
    if not isinstance(answer, set | frozenset | list | tuple | range):
        raise ConfigError(
            f"the stream partitioner for {topic!r} returned {answer!r}: return None (default "
            "partitioning) or a set of partitions (e.g. {3}; an empty set drops the record)"
        )
    partitions = tuple(answer) if len(answer) < 2 else tuple(sorted(set(answer)))
    for p in partitions:  # type() so that True is not partition 1
        if type(p) is not int or p < 0 or (p >= count and counts.checks_range):
            raise ConfigError(
                f"the stream partitioner for {topic!r} chose partition {p!r}; the topic has "
                f"{count} partitions (0..{count - 1})"
            )
    return partitions


@dataclass(frozen=True, slots=True)
class PartitionChooser:
    """A sink's stream partitioner with the partition counts it is given."""

    partitioner: StreamPartitioner
    counts: PartitionCounts | None

    def choose(self, topic: str, key: Any, value: Any) -> tuple[int | None, ...]:
        """:func:`chosen_partitions`, a drop logged (the task counts it)."""
        partitions = chosen_partitions(self.partitioner, topic, key, value, self.counts)
        if not partitions:
            logger.warning(
                "skipping a record: the stream partitioner returned no partitions",
                extra=fields(topic=topic),
            )
        return partitions


def sink_plan(
    target: str | TopicNameExtractor,
    serdes: tuple[Serde[Any], Serde[Any]],
    partitioner: StreamPartitioner | None,
    counts: PartitionCounts | None,
) -> SinkPlan:
    """What a task keeps per sink: (topic or extractor, key serde, value serde, chooser or
    None). A tuple, unpacked per record: the sink path without a partitioner stays as fast
    as before the partitioner (``bench/sink_path.py``)."""
    chooser = None if partitioner is None else PartitionChooser(partitioner, counts)
    return target, serdes[0], serdes[1], chooser


def fixed_counts(count: int, *, checks_range: bool) -> PartitionCounts:
    """A :class:`PartitionCounts` that answers ``count`` for every topic (the test driver)."""
    return _Fixed(count, checks_range)


@dataclass(frozen=True, slots=True)
class _Fixed:
    count: int
    checks_range: bool

    def partitions_for(self, topic: str) -> int:
        del topic
        return self.count
