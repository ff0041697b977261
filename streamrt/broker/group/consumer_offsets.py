"""OffsetCommit/OffsetFetch of consumer groups: the member epoch is the generation.

Kafka's ``ConsumerGroup.validateOffsetCommit``/``validateOffsetFetch``: a commit from a member
must carry its current member epoch (else STALE_MEMBER_EPOCH), from a known member (else
UNKNOWN_MEMBER_ID), over OffsetCommit v9+ (older versions cannot carry a member epoch:
UNSUPPORTED_VERSION); a consumer-group member's commit at an older epoch passes for the
partitions it has held since that epoch (KIP-1251, per partition). Commits with epoch -1 are
accepted only while the group has no members. OffsetFetch keeps the exact epoch check.
The offsets themselves live in the classic coordinator's offset table, like Kafka's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Protocol

from streamrt.broker.group.admin import offset_tombstones
from streamrt.broker.group.offsets import OffsetMetadataManager
from streamrt.broker.group.pending import PendingTxnOffsets
from streamrt.broker.group.records import CoordinatorRecord, offset_tombstone
from streamrt.broker.modern_group.commit_epochs import PartitionCheck
from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import build
from streamrt.wire.group_responses import response_cls

__all__ = (
    "MemberChecks",
    "RetainedGroups",
    "commit",
    "delete",
    "expired",
    "fetch_errors",
    "txn_commit",
    "with_fetch_errors",
)


class MemberChecks(Protocol):
    """What the offset checks need of a broker-driven (consumer or streams) coordinator."""

    @property
    def groups(self) -> Mapping[str, Any]: ...

    def validate_offset_request(
        self, group_id: str, member_id: str | None, member_epoch: int, *, fetch: bool = False
    ) -> ErrorCode | None: ...

    def validate_offset_commit(
        self, group_id: str, member_id: str | None, member_epoch: int
    ) -> tuple[ErrorCode | None, PartitionCheck | None]: ...

    def is_classic_member(self, group_id: str, member_id: str | None) -> bool: ...


def commit(
    consumer: MemberChecks,
    offsets: OffsetMetadataManager,
    now_ms: int,
    version: int,
    request: Any,
) -> tuple[Any, tuple[CoordinatorRecord, ...]]:
    """(response, records to append then replay) of an OffsetCommit to a consumer group."""
    epoch: int = request.generation_id_or_member_epoch
    error, check = consumer.validate_offset_commit(request.group_id, request.member_id, epoch)
    classic = consumer.is_classic_member(request.group_id, request.member_id)
    if error is None and epoch >= 0 and version < 9 and not classic:
        error = ErrorCode.unsupported_version
    topics, records = offsets.commit_records(
        request.group_id, request.topics, error, now_ms, -1, check
    )
    response = build(response_cls(ApiKey.OFFSET_COMMIT, version), throttle_time=0, topics=topics)
    return response, records


#: the OffsetCommit answers a TxnOffsetCommit gives as ILLEGAL_GENERATION
_FENCED_TXN_COMMIT = frozenset({ErrorCode.stale_member_epoch, ErrorCode.streams_topology_fenced})


def txn_commit(
    consumer: MemberChecks,
    offsets: OffsetMetadataManager,
    now_ms: int,
    version: int,
    request: Any,
) -> tuple[Any, tuple[CoordinatorRecord, ...]]:
    """A TxnOffsetCommit to a consumer or streams group (exactly-once with
    ``group.protocol=consumer`` or ``streams``): the generation field carries the member epoch,
    checked as an OffsetCommit's (Kafka's ``validateOffsetCommit`` with ``isTransactional``);
    v0-2 carry no member: not checked. A stale epoch (or a streams member on an older
    topology) is ILLEGAL_GENERATION, as Kafka's ``validateTransactionalOffsetCommit`` maps it:
    TxnOffsetCommit has no STALE_MEMBER_EPOCH, and the producer takes an unknown code as fatal
    where ILLEGAL_GENERATION aborts the transaction."""
    epoch: int = getattr(request, "generation_id", -1)
    member_id: str = getattr(request, "member_id", "")
    error: ErrorCode | None = None
    check: PartitionCheck | None = None
    if version >= 3:
        error, check = consumer.validate_offset_commit(request.group_id, member_id, epoch)
    if error in _FENCED_TXN_COMMIT:
        error = ErrorCode.illegal_generation
    topics, records = offsets.commit_records(
        request.group_id, request.topics, error, now_ms, -1, _txn_check(check)
    )
    response = build(
        response_cls(ApiKey.TXN_OFFSET_COMMIT, version), throttle_time=0, topics=topics
    )
    return response, records


def _txn_check(check: PartitionCheck | None) -> PartitionCheck | None:
    """A TxnOffsetCommit answers a partition refused at an older epoch ILLEGAL_GENERATION."""
    if check is None:
        return None

    def txn(topic: str, partition: int) -> ErrorCode | None:
        error = check(topic, partition)
        return ErrorCode.illegal_generation if error in _FENCED_TXN_COMMIT else error

    return txn


def fetch_errors(consumer: MemberChecks, version: int, request: Any) -> dict[str, Any]:
    """Group id -> error for the consumer groups of an OffsetFetch v9+ whose member checks fail."""
    if version < 9:
        return {}
    out: dict[str, Any] = {}
    for g in request.groups:
        if g.group_id in consumer.groups:
            error = consumer.validate_offset_request(
                g.group_id, g.member_id, g.member_epoch, fetch=True
            )
            if error is not None:
                out[g.group_id] = error
    return out


def with_fetch_errors(response: Any, errors: dict[str, Any]) -> Any:
    """The OffsetFetch response with the refused groups answering their error, no offsets."""
    if not errors:
        return response
    groups = tuple(
        dataclasses.replace(g, error_code=errors[g.group_id], topics=())
        if g.group_id in errors
        else g
        for g in response.groups
    )
    return dataclasses.replace(response, groups=groups)


class _Retained(Protocol):
    @property
    def members(self) -> Mapping[str, Any]: ...

    def subscription(self, topics: Mapping[str, int]) -> Mapping[str, int]: ...


class RetainedGroups(Protocol):
    """What offsets retention needs of a consumer or streams coordinator."""

    @property
    def groups(self) -> Mapping[str, _Retained]: ...


def expired(
    consumer: RetainedGroups,
    offsets: OffsetMetadataManager,
    pending: PendingTxnOffsets,
    topics: Mapping[str, int],
    now_ms: int,
    retention_ms: int,
) -> tuple[tuple[CoordinatorRecord, ...], list[str]]:
    """Offsets retention of consumer (and streams) groups, as Kafka's ``cleanupExpiredOffsets``
    with ``ConsumerGroup.offsetExpirationCondition``: an offset of a topic no member subscribes to
    expires ``retention_ms`` after its commit (or at its explicit expire timestamp). Returns
    the tombstones and the empty groups left without offsets (Kafka deletes them)."""
    records: list[CoordinatorRecord] = []
    gone: list[str] = []
    for group_id, group in sorted(consumer.groups.items()):
        if pending.has_group(group_id):
            continue  # an open transaction will still commit offsets here
        subscribed = set(group.subscription(topics))
        committed = offsets.of_group(group_id)
        expired_count = 0
        for (topic, partition), value in sorted(committed.items()):
            if topic in subscribed:
                continue
            if value.expire_timestamp >= 0:
                is_expired = now_ms >= value.expire_timestamp
            else:
                is_expired = now_ms - value.commit_timestamp >= retention_ms
            if is_expired:
                expired_count += 1
                records.append(offset_tombstone(group_id, topic, partition))
        if expired_count == len(committed) and not group.members:
            gone.append(group_id)
    return tuple(records), gone


def delete(
    consumer: RetainedGroups,
    offsets: OffsetMetadataManager,
    topics: Mapping[str, int],
    version: int,
    request: Any,
) -> tuple[Any, tuple[CoordinatorRecord, ...]]:
    """OffsetDelete on a consumer or streams group (Kafka's ``deleteOffsets``): the offsets
    of a topic the group reads stay (GROUP_SUBSCRIBED_TO_TOPIC): one some member subscribes
    to, or a source topic of a streams group with members (``isSubscribedToTopic``); others
    get tombstones."""
    group = consumer.groups[request.group_id]
    return offset_tombstones(offsets, set(group.subscription(topics)), version, request)
