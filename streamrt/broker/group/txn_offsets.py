"""Transactional offset commits (KIP-98, KIP-447): validation and the commit's records.

Mirrors Kafka's ``OffsetMetadataManager.commitTransactionalOffset``. A TxnOffsetCommit is
written to ``__consumer_offsets`` as a transactional batch of the producer (so a fenced epoch
is refused by the log, 47); its offsets stay pending (:mod:`pending`) until the marker.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from streamrt.broker.group.group import ClassicGroup
from streamrt.broker.group.offsets import OffsetMetadataManager
from streamrt.broker.group.records import CoordinatorRecord
from streamrt.broker.group.state import GroupState
from streamrt.errors import ErrorCode, KafkaError
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import build
from streamrt.wire.context import RequestContext
from streamrt.wire.group_responses import response_cls

__all__ = ("txn_offset_commit", "validate_txn_offset_commit")


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


def txn_offset_commit(
    groups: MutableMapping[str, ClassicGroup],
    offsets: OffsetMetadataManager,
    now: int,
    ctx: RequestContext,
    request: Any,
) -> tuple[Any, tuple[CoordinatorRecord, ...]]:
    """The response and the records. Group-level errors apply to every partition; unknown
    partitions get 3, big metadata 12. The caller appends the records as the producer's
    transactional batch."""
    group_id: str = request.group_id
    generation: int = getattr(request, "generation_id", -1)
    member_id: str = getattr(request, "member_id", "")
    instance_id: str | None = getattr(request, "group_instance_id", None)
    group_error: ErrorCode | None = None
    if not group_id:
        group_error = ErrorCode.invalid_group_id
    else:
        group = groups.get(group_id)
        if group is None:
            if generation < 0:
                groups[group_id] = ClassicGroup(group_id, now)
            else:
                group_error = ErrorCode.illegal_generation
        else:
            try:
                validate_txn_offset_commit(group, member_id, instance_id, generation)
            except KafkaError as exc:
                group_error = exc.code
    # transactional offsets never expire by an explicit timestamp (-1), as in Kafka
    topics, records = offsets.commit_records(group_id, request.topics, group_error, now, -1)
    response = build(
        response_cls(ApiKey.TXN_OFFSET_COMMIT, ctx.api_version), throttle_time=0, topics=topics
    )
    return response, records
