"""Offsets written by open transactions, pending until their marker (KIP-98, KIP-447).

A transactional offset commit stays *pending* per producer id, invisible to OffsetFetch, until
the transaction's COMMIT marker makes it committed; an ABORT marker drops it.
"""

from __future__ import annotations

from typing import Any

from streamrt.broker.group.records import (
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_value,
)
from streamrt.errors import ErrorCode

__all__ = ("PendingTxnOffsets", "TopicPartition", "mark_unstable", "replay_pending")

TopicPartition = tuple[str, int]


class PendingTxnOffsets:
    """producer id -> group id -> (topic, partition) -> the offset its open transaction wrote."""

    def __init__(self) -> None:
        self._by_producer: dict[int, dict[str, dict[TopicPartition, OffsetCommitValue]]] = {}

    def put(self, producer_id: int, key: OffsetCommitKey, value: OffsetCommitValue) -> None:
        groups = self._by_producer.setdefault(producer_id, {})
        groups.setdefault(key.group, {})[(key.topic, key.partition)] = value

    def pop(self, producer_id: int) -> dict[str, dict[TopicPartition, OffsetCommitValue]]:
        return self._by_producer.pop(producer_id, {})

    def is_pending(self, group_id: str, topic: str, partition: int) -> bool:
        """Some open transaction wrote this partition's offset (OffsetFetch require_stable)."""
        return any(
            (topic, partition) in groups.get(group_id, {}) for groups in self._by_producer.values()
        )

    def has_group(self, group_id: str) -> bool:
        return any(group_id in groups for groups in self._by_producer.values())


def mark_unstable(
    pending: PendingTxnOffsets, group_id: str, topics: list[dict[str, Any]], require_stable: bool
) -> list[dict[str, Any]]:
    """OffsetFetch v7+ with ``require_stable``: a partition whose offset an open transaction
    wrote answers UNSTABLE_OFFSET_COMMIT (the client retries) instead of a stale offset."""
    if not require_stable:
        return topics
    for topic in topics:
        for row in topic["partitions"]:
            if pending.is_pending(group_id, topic["name"], row["partition_index"]):
                row.update(committed_offset=-1, error_code=ErrorCode.unstable_offset_commit)
    return topics


def replay_pending(
    pending: PendingTxnOffsets, producer_id: int, key_bytes: bytes, value_bytes: bytes | None
) -> bool:
    """Hold a transactional offset record as pending; False if it is not an offset commit."""
    key = decode_key(key_bytes)
    if not isinstance(key, OffsetCommitKey) or value_bytes is None:
        return False
    value = decode_value(key, value_bytes)
    assert isinstance(value, OffsetCommitValue)
    pending.put(producer_id, key, value)
    return True
