"""The one topic-partition type of the runtime, its state stores and its group member.

A ``NamedTuple``: it compares and hashes as the plain ``(topic, partition)`` tuple (and as
aiokafka's ``TopicPartition``, also a named tuple), so a dict keyed by one is read with the
other. It sits below the state stores and the membership client, which key changelogs and
assignments by it; the Kafka client adapters (``runtime/engine/clients/``) convert to a client
library's own type only where that library needs it (librdkafka's is another class, aiokafka's
consumer checks ``isinstance``).
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ("TopicPartition",)


class TopicPartition(NamedTuple):
    """A Kafka topic partition: inputs, changelogs, assignments and offsets are keyed by it."""

    topic: str
    partition: int
