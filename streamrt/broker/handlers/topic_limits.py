"""Kafka's per-request bounds on CreateTopics and CreatePartitions.

A KRaft controller (``ReplicationControlManager``, ``QuorumController``) refuses, with
POLICY_VIOLATION on every topic of the request and nothing created:

* a CreateTopics asking for more than 10,000 partitions in all (``MAX_PARTITIONS_PER_BATCH``;
  ``-1`` counts as ``num.partitions``, an explicit assignment as its length):
  "Excessively large number of partitions per request.";
* an operation that would write more than 10,000 metadata records (``MAX_RECORDS_PER_USER_OP``):
  one per new topic, one per new partition and one per config of a new topic:
  "Unable to perform excessively large batch operation." (so one topic of 10,000 partitions
  is refused too; 9,999 is the most one CreateTopics can create).

Both bounds are Kafka's constants, not configs. They keep one request from opening thousands
of partition logs (and their files) at once.
"""

from __future__ import annotations

import collections
from collections.abc import Collection
from typing import Any

from streamrt.errors import ErrorCode, KafkaError

__all__ = (
    "MAX_PARTITIONS_PER_BATCH",
    "MAX_RECORDS_PER_USER_OP",
    "check_create_partitions",
    "check_create_topics",
)

MAX_PARTITIONS_PER_BATCH = 10_000
MAX_RECORDS_PER_USER_OP = 10_000
_TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."
_TOO_MANY_RECORDS = "Unable to perform excessively large batch operation."


def _requested(topic: Any, default_partitions: int) -> int:
    if topic.assignments:
        return len(topic.assignments)
    if topic.num_partitions == -1:
        return default_partitions
    return max(int(topic.num_partitions), 0)


def check_create_topics(req: Any, default_partitions: int, existing: Collection[str]) -> None:
    """Raise POLICY_VIOLATION if the CreateTopics request is over either of Kafka's bounds.

    Records are counted for the topics that could be created: listed once and not existing
    (Kafka adds records only for topics that pass its checks)."""
    partitions = sum(_requested(t, default_partitions) for t in req.topics)
    if partitions > MAX_PARTITIONS_PER_BATCH:
        raise KafkaError(ErrorCode.policy_violation, _TOO_MANY_PARTITIONS)
    listed = collections.Counter(t.name for t in req.topics)
    records = 0
    for t in req.topics:
        if t.name in existing or listed[t.name] > 1:
            continue
        records += 1 + _requested(t, default_partitions) + len(t.configs)
    if records > MAX_RECORDS_PER_USER_OP:
        raise KafkaError(ErrorCode.policy_violation, _TOO_MANY_RECORDS)


def check_create_partitions(req: Any, current: dict[str, int]) -> None:
    """Raise POLICY_VIOLATION if the CreatePartitions request would add more than
    ``MAX_RECORDS_PER_USER_OP`` partitions (one record each) to existing topics."""
    added = sum(max(int(t.count) - current[t.name], 0) for t in req.topics if t.name in current)
    if added > MAX_RECORDS_PER_USER_OP:
        raise KafkaError(ErrorCode.policy_violation, _TOO_MANY_RECORDS)
