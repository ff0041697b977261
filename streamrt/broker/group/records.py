"""``__consumer_offsets`` record factories and serde, versioned as Kafka writes and reads them.

A record is a (key, value) pair of bytes, each starting with an int16 version. The key version
also names the record kind: 0 and 1 are offset commits, 2 is group metadata. A ``None`` value is
a tombstone. We write GroupMetadataValue v3 (the highest non-flexible version, the first with
``groupInstanceId``) and OffsetCommitValue v3 (v1 when an expire timestamp is set), and read
every version 0-4, so a log written by Kafka itself can be loaded.
"""

from __future__ import annotations

import dataclasses

from streamrt.broker.coordination.record_reader import RecordReader
from streamrt.broker.coordination.record_writer import RecordWriter
from streamrt.broker.coordination.result import CoordinatorRecord

__all__ = (
    "CoordinatorRecord",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "MemberMetadata",
    "OffsetCommitKey",
    "OffsetCommitValue",
    "RecordWriter",
    "decode_key",
    "decode_value",
    "group_metadata_record",
    "group_tombstone",
    "offset_commit_record",
    "offset_tombstone",
)

GROUP_METADATA_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION = 3


@dataclasses.dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


@dataclasses.dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclasses.dataclass(frozen=True, slots=True)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclasses.dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[MemberMetadata, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int


def _group_key(group_id: str) -> bytes:
    w = RecordWriter(2)
    w.string(group_id)
    return w.done()


def _offset_key(group_id: str, topic: str, partition: int) -> bytes:
    w = RecordWriter(1)
    w.string(group_id)
    w.string(topic)
    w.int32(partition)
    return w.done()


def encode_group_metadata_value(value: GroupMetadataValue, version: int = 3) -> bytes:
    w = RecordWriter(version, flexible=version >= 4)
    w.string(value.protocol_type)
    w.int32(value.generation)
    w.string(value.protocol)
    w.string(value.leader)
    if version >= 2:
        w.int64(value.current_state_timestamp)
    w.array_length(len(value.members))
    for m in value.members:
        w.string(m.member_id)
        if version >= 3:
            w.string(m.group_instance_id)
        w.string(m.client_id)
        w.string(m.client_host)
        if version >= 1:
            w.int32(m.rebalance_timeout)
        w.int32(m.session_timeout)
        w.bytes_(m.subscription)
        w.bytes_(m.assignment)
        w.tagged_fields()
    w.tagged_fields()
    return w.done()


def encode_offset_commit_value(value: OffsetCommitValue, version: int = 3) -> bytes:
    w = RecordWriter(version, flexible=version >= 4)
    w.int64(value.offset)
    if version >= 3:
        w.int32(value.leader_epoch)
    w.string(value.metadata)
    w.int64(value.commit_timestamp)
    if version == 1:
        w.int64(value.expire_timestamp)
    w.tagged_fields()
    return w.done()


def group_metadata_record(group_id: str, value: GroupMetadataValue) -> CoordinatorRecord:
    """Kafka's ``newGroupMetadataRecord``: the group's persisted generation."""
    return CoordinatorRecord(
        _group_key(group_id),
        encode_group_metadata_value(value, GROUP_METADATA_VALUE_VERSION),
        group_id,
    )


def group_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(_group_key(group_id), None, group_id)


def offset_commit_record(
    group_id: str, topic: str, partition: int, value: OffsetCommitValue
) -> CoordinatorRecord:
    """v1 when an expire timestamp is set (the only version carrying it), else v3."""
    version = 1 if value.expire_timestamp >= 0 else OFFSET_COMMIT_VALUE_VERSION
    return CoordinatorRecord(
        _offset_key(group_id, topic, partition),
        encode_offset_commit_value(value, version),
        group_id,
    )


def offset_tombstone(group_id: str, topic: str, partition: int) -> CoordinatorRecord:
    return CoordinatorRecord(_offset_key(group_id, topic, partition), None, group_id)


def decode_key(key: bytes) -> GroupMetadataKey | OffsetCommitKey | None:
    """``None`` for other key versions (KIP-848 records: ``consumer_group.records``)."""
    r = RecordReader(key)
    if r.version in (0, 1):
        return OffsetCommitKey(r.string(), r.string(), r.int32())
    if r.version == 2:
        return GroupMetadataKey(r.string())
    return None


def decode_value(
    key: GroupMetadataKey | OffsetCommitKey, value: bytes
) -> GroupMetadataValue | OffsetCommitValue:
    r = RecordReader(value)
    r.flexible = r.version >= 4
    if isinstance(key, OffsetCommitKey):
        return _read_offset_value(r)
    return _read_group_value(r)


def _read_offset_value(r: RecordReader) -> OffsetCommitValue:
    offset = r.int64()
    leader_epoch = r.int32() if r.version >= 3 else -1
    metadata = r.string()
    commit_timestamp = r.int64()
    expire_timestamp = r.int64() if r.version == 1 else -1
    r.skip_tagged_fields()
    return OffsetCommitValue(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)


def _read_group_value(r: RecordReader) -> GroupMetadataValue:
    protocol_type = r.string()
    generation = r.int32()
    protocol = r.nullable_string()
    leader = r.nullable_string()
    current_state_timestamp = r.int64() if r.version >= 2 else -1
    members: list[MemberMetadata] = []
    for _ in range(max(r.array_length(), 0)):
        member_id = r.string()
        instance_id = r.nullable_string() if r.version >= 3 else None
        client_id = r.string()
        client_host = r.string()
        rebalance_timeout = r.int32() if r.version >= 1 else -1
        session_timeout = r.int32()
        subscription = r.bytes_()
        assignment = r.bytes_()
        r.skip_tagged_fields()
        members.append(
            MemberMetadata(
                member_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout,
                session_timeout,
                subscription,
                assignment,
            )
        )
    r.skip_tagged_fields()
    return GroupMetadataValue(
        protocol_type, generation, protocol, leader, current_state_timestamp, tuple(members)
    )
