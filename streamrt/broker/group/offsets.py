"""Committed offsets: storage, OffsetCommit validation, OffsetFetch, and retention.

Mirrors Kafka's ``OffsetMetadataManager`` and ``ClassicGroup.validateOffsetCommit``. Commits
return records meant for replay: the offsets become visible only once the records are in
``__consumer_offsets`` (the runtime replays them through :meth:`OffsetMetadataManager.put`), so
an acknowledged commit is never lost.

The manager gets what it needs explicitly (the groups table it shares with the coordinator, the
config, the clock, and two callbacks) and never sees the coordinator itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, MutableMapping
from typing import Any

from streamrt.broker.group.group import ClassicGroup, Member
from streamrt.broker.group.pending import PendingTxnOffsets, mark_unstable
from streamrt.broker.group.rebalance import GroupConfig
from streamrt.broker.group.records import (
    CoordinatorRecord,
    OffsetCommitValue,
    group_tombstone,
    offset_commit_record,
    offset_tombstone,
)
from streamrt.broker.group.state import GroupState
from streamrt.clock import Clock
from streamrt.errors import ErrorCode, KafkaError
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import build, ms
from streamrt.wire.context import RequestContext
from streamrt.wire.group_responses import response_cls

__all__ = ("OffsetMetadataManager", "validate_offset_commit")

TopicPartition = tuple[str, int]
#: Restarts a member's session timer (a commit from a live member counts as a heartbeat).
TouchMember = Callable[[ClassicGroup, Member], None]
PartitionExists = Callable[[str, int], bool]


def validate_offset_commit(
    group: ClassicGroup, member_id: str, instance_id: str | None, generation_id: int
) -> None:
    """Kafka's ``ClassicGroup.validateOffsetCommit`` for OffsetCommit (not transactional)."""
    if group.is_in(GroupState.DEAD):
        raise KafkaError(ErrorCode.coordinator_not_available)
    if generation_id < 0 and group.is_in(GroupState.EMPTY):
        return  # admin or manually assigned consumer
    if generation_id >= 0 or member_id or instance_id is not None:
        group.validate_member(member_id, instance_id)
        if generation_id != group.generation_id:
            raise KafkaError(ErrorCode.illegal_generation)
    elif not group.is_in(GroupState.EMPTY):
        raise KafkaError(ErrorCode.unknown_member_id)
    if group.is_in(GroupState.COMPLETING_REBALANCE):
        raise KafkaError(ErrorCode.rebalance_in_progress)


class OffsetMetadataManager:
    """Committed offsets of every group (Kafka's ``OffsetMetadataManager``).

    Responsibilities: the offsets table (``put``/``delete`` are its replay path), OffsetCommit
    validation and records, OffsetFetch, and the retention scan. Pure: no I/O, time from
    ``clock``.
    """

    def __init__(
        self,
        groups: MutableMapping[str, ClassicGroup],
        config: GroupConfig,
        clock: Clock,
        *,
        touch_member: TouchMember,
        partition_exists: PartitionExists,
        pending: PendingTxnOffsets | None = None,
    ) -> None:
        self._groups = groups
        # transactional commits not yet decided (TxnOffsetCommit before the COMMIT marker)
        self._pending = pending if pending is not None else PendingTxnOffsets()
        self._config = config
        self._clock = clock
        self._touch_member = touch_member
        self._partition_exists = partition_exists
        self._by_group: dict[str, dict[TopicPartition, OffsetCommitValue]] = {}

    # -- the table (replay) -------------------------------------------------------------------

    def put(self, group_id: str, topic: str, partition: int, value: OffsetCommitValue) -> None:
        self._by_group.setdefault(group_id, {})[(topic, partition)] = value

    def get(self, group_id: str, topic: str, partition: int) -> OffsetCommitValue | None:
        return self._by_group.get(group_id, {}).get((topic, partition))

    def delete(self, group_id: str, topic: str, partition: int) -> None:
        offsets = self._by_group.get(group_id)
        if offsets is not None:
            offsets.pop((topic, partition), None)
            if not offsets:
                del self._by_group[group_id]

    def delete_group(self, group_id: str) -> None:
        self._by_group.pop(group_id, None)

    def of_group(self, group_id: str) -> dict[TopicPartition, OffsetCommitValue]:
        return dict(self._by_group.get(group_id, {}))

    # -- requests -----------------------------------------------------------------------------

    def commit(
        self, ctx: RequestContext, request: Any
    ) -> tuple[Any, tuple[CoordinatorRecord, ...]]:
        """(response, records to append then replay).

        Group-level errors apply to every partition; unknown partitions get 3, big metadata 12.
        """
        version = ctx.api_version
        group_id: str = request.group_id
        generation: int = request.generation_id_or_member_epoch
        member_id: str = request.member_id
        instance_id: str | None = getattr(request, "group_instance_id", None)
        retention = ms(getattr(request, "retention_time", None))
        now = self._clock.now_ms()
        group_error: ErrorCode | None = None
        group = self._groups.get(group_id)
        if group is None:
            if generation < 0:
                group = ClassicGroup(group_id, now)
                self._groups[group_id] = group
            else:
                group_error = (
                    ErrorCode.group_id_not_found if version >= 9 else ErrorCode.illegal_generation
                )
        else:
            try:
                validate_offset_commit(group, member_id, instance_id, generation)
            except KafkaError as exc:
                group_error = exc.code
        if group is not None and group_error is None:
            member = group.members.get(member_id)
            if member is not None and group.is_in(
                GroupState.STABLE, GroupState.PREPARING_REBALANCE
            ):
                self._touch_member(group, member)
        topics, records = self.commit_records(
            group_id, request.topics, group_error, now, now + retention if retention >= 0 else -1
        )
        response = build(
            response_cls(ApiKey.OFFSET_COMMIT, version), throttle_time=0, topics=topics
        )
        return response, records

    def commit_records(
        self,
        group_id: str,
        request_topics: Iterable[Any],
        group_error: ErrorCode | None,
        now: int,
        expire_timestamp: int,
        partition_check: Callable[[str, int], ErrorCode | None] | None = None,
    ) -> tuple[list[dict[str, Any]], tuple[CoordinatorRecord, ...]]:
        """Per-partition answers and records of an OffsetCommit or TxnOffsetCommit: a group
        error applies to every partition; unknown partitions get 3, big metadata 12;
        ``partition_check`` (a commit at an older member epoch, KIP-1251) may refuse some."""
        records: list[CoordinatorRecord] = []
        topics = []
        for topic in request_topics:
            partitions = []
            for p in topic.partitions:
                error = group_error
                metadata = p.committed_metadata or ""
                if error is None and not self._partition_exists(topic.name, p.partition_index):
                    error = ErrorCode.unknown_topic_or_partition
                if error is None and partition_check is not None:
                    error = partition_check(topic.name, p.partition_index)
                if (
                    error is None
                    and len(metadata.encode()) > self._config.offset_metadata_max_bytes
                ):
                    error = ErrorCode.offset_metadata_too_large
                if error is None:
                    value = OffsetCommitValue(
                        offset=p.committed_offset,
                        leader_epoch=getattr(p, "committed_leader_epoch", -1),
                        metadata=metadata,
                        commit_timestamp=now,
                        expire_timestamp=expire_timestamp,
                    )
                    records.append(
                        offset_commit_record(group_id, topic.name, p.partition_index, value)
                    )
                partitions.append(
                    {"partition_index": p.partition_index, "error_code": error or ErrorCode.none}
                )
            topics.append({"name": topic.name, "partitions": partitions})
        return topics, tuple(records)

    def _fetch_partitions(
        self, group_id: str, topics: Iterable[Any] | None
    ) -> list[dict[str, Any]]:
        committed = self.of_group(group_id)
        wanted: dict[str, list[int]] = {}
        if topics is None:
            for topic, partition in sorted(committed):
                wanted.setdefault(topic, []).append(partition)
        else:
            for t in topics:
                wanted[t.name] = list(t.partition_indexes)
        out = []
        for topic, partitions in wanted.items():
            rows = []
            for partition in partitions:
                value = committed.get((topic, partition))
                rows.append(
                    {
                        "partition_index": partition,
                        "committed_offset": value.offset if value else -1,
                        "committed_leader_epoch": value.leader_epoch if value else -1,
                        "metadata": value.metadata if value else "",
                        "error_code": ErrorCode.none,
                    }
                )
            out.append({"name": topic, "partitions": rows})
        return out

    def fetch(self, ctx: RequestContext, request: Any) -> Any:
        """v1-7 fetch one group; v8+ a batch. ``topics`` null (v2+) means every committed offset.

        Partitions with a pending transactional commit answer UNSTABLE_OFFSET_COMMIT when the
        request sets ``require_stable`` (KIP-447)."""
        cls = response_cls(ApiKey.OFFSET_FETCH, ctx.api_version)
        stable = bool(getattr(request, "require_stable", False))
        if ctx.api_version >= 8:
            groups = [
                {
                    "group_id": g.group_id,
                    "topics": mark_unstable(
                        self._pending,
                        g.group_id,
                        self._fetch_partitions(g.group_id, g.topics),
                        stable,
                    ),
                    "error_code": ErrorCode.none,
                }
                for g in request.groups
            ]
            return build(cls, throttle_time=0, groups=groups)
        topics = mark_unstable(
            self._pending,
            request.group_id,
            self._fetch_partitions(request.group_id, request.topics),
            stable,
        )
        return build(cls, throttle_time=0, topics=topics, error_code=ErrorCode.none)

    def expired_records(self) -> tuple[CoordinatorRecord, ...]:
        """Tombstones for expired offsets, and for Empty groups left with no offsets.

        Kafka's ``ClassicGroup.offsetExpirationCondition``: in an Empty group the base time is when
        it became Empty (else the commit time); a group without protocol type (a "simple" group of
        manual commits) uses the commit time; offsets of active groups do not expire. An explicit
        expire timestamp (OffsetCommit v2-4 retention) wins.
        """
        now = self._clock.now_ms()
        retention = self._config.offsets_retention_ms
        records: list[CoordinatorRecord] = []
        for group_id, group in list(self._groups.items()):
            if self._pending.has_group(group_id):
                continue  # an open transaction will still commit offsets here (Kafka keeps them)
            offsets = self.of_group(group_id)
            if group.is_in(GroupState.EMPTY):
                state_ts = group.current_state_timestamp
            elif not group.protocol_type:
                state_ts = None
            else:
                continue
            expired = 0
            for (topic, partition), value in sorted(offsets.items()):
                if value.expire_timestamp >= 0:
                    is_expired = now >= value.expire_timestamp
                else:
                    base = value.commit_timestamp if state_ts is None else state_ts
                    is_expired = now - base >= retention
                if is_expired:
                    expired += 1
                    records.append(offset_tombstone(group_id, topic, partition))
            if expired == len(offsets) and group.is_in(GroupState.EMPTY):
                records.append(group_tombstone(group_id))
        return tuple(records)
