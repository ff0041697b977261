"""Transactional offset commits (KIP-98, KIP-447): validation, pending offsets, markers.

Mirrors Kafka's ``OffsetMetadataManager.commitTransactionalOffset`` and
``replayEndTransactionMarker``. A TxnOffsetCommit is written to ``__consumer_offsets`` as a
transactional batch of the producer (so a fenced epoch is refused by the log, 47), and its
offsets stay *pending* per producer id, invisible to OffsetFetch, until the transaction's
COMMIT marker makes them committed; an ABORT marker drops them.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from streamrt.broker.group.group import ClassicGroup
from streamrt.broker.group.records import (
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_value,
)
from streamrt.broker.group.result import Result
from streamrt.broker.group.state import GroupState
from streamrt.errors import ErrorCode, KafkaError
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import build
from streamrt.wire.context import RequestContext
from streamrt.wire.group_responses import response_cls

if TYPE_CHECKING:
    from streamrt.broker.group.coordinator import GroupCoordinator

__all__ = (
    "PendingTxnOffsets",
    "mark_unstable",
    "replay_pending",
    "txn_offset_commit",
    "validate_txn_offset_commit",
)

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


def validate_txn_offset_commit(
    group: ClassicGroup, member_id: str, instance_id: str | None, generation_id: int
) -> None:
    """Kafka's ``ClassicGroup.validateOffsetCommit`` with ``isTransactional``: KIP-447 checks for
    v3+ requests carrying group metadata; v0-2 (no metadata) pass in any live state, and there
    is no REBALANCE_IN_PROGRESS."""
    if group.is_in(GroupState.DEAD):
        raise KafkaError(ErrorCode.coordinator_not_available)
    if generation_id < 0 and group.is_in(GroupState.EMPTY):
        return
    if generation_id >= 0 or member_id or instance_id is not None:
        group.validate_member(member_id, instance_id)  # UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID
        if generation_id != group.generation_id:
            raise KafkaError(ErrorCode.illegal_generation)


def txn_offset_commit(coordinator: GroupCoordinator, ctx: RequestContext, request: Any) -> Result:
    """Group-level errors apply to every partition; unknown partitions get 3, big metadata 12.
    The records are appended as the producer's transactional batch (``Result.producer``)."""
    group_id: str = request.group_id
    generation: int = getattr(request, "generation_id", -1)
    member_id: str = getattr(request, "member_id", "")
    instance_id: str | None = getattr(request, "group_instance_id", None)
    now = coordinator.clock.now_ms()
    group_error: ErrorCode | None = None
    if not group_id:
        group_error = ErrorCode.invalid_group_id
    else:
        group = coordinator.groups.get(group_id)
        if group is None:
            if generation < 0:
                coordinator.groups[group_id] = ClassicGroup(group_id, now)
            else:
                group_error = ErrorCode.illegal_generation
        else:
            try:
                validate_txn_offset_commit(group, member_id, instance_id, generation)
            except KafkaError as exc:
                group_error = exc.code
    # transactional offsets never expire by an explicit timestamp (-1), as in Kafka
    topics, records = coordinator.offsets.commit_records(
        group_id, request.topics, group_error, now, -1
    )
    response = build(
        response_cls(ApiKey.TXN_OFFSET_COMMIT, ctx.api_version), throttle_time=0, topics=topics
    )
    result = coordinator.out.drain(response, records=records, replay=True)
    return dataclasses.replace(result, producer=(request.producer_id, request.producer_epoch))


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
