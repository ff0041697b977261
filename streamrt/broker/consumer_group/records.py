"""KIP-848 consumer-group records of ``__consumer_offsets``, as Kafka 4.3.1 writes them.

The key's int16 prefix is the record type (3 group metadata, 4 partition metadata, 5 member
metadata, 6 target assignment metadata, 7 target assignment member, 8 current member
assignment), then the key's strings (non-flexible). Values are version 0, flexible; tagged
fields we do not use are written absent (Kafka's defaults) and skipped on read. Type 4 is
deprecated since Kafka 4.1 (KIP-1101 moved it to a hash): we never write it and ignore it on
load, but tombstone it on delete as Kafka does. Assignments carry topic ids, as in Kafka, so a
topic deleted and recreated under the same name does not inherit old assignments.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping

from streamrt.broker.consumer_group.assignors import Assignment
from streamrt.broker.consumer_group.member import ClassicMetadata, ConsumerMember, MemberState
from streamrt.broker.coordination.record_reader import RecordReader
from streamrt.broker.coordination.record_writer import RecordWriter
from streamrt.broker.coordination.result import CoordinatorRecord
from streamrt.broker.modern_group.records import (
    GroupKey,
    decode_group_key,
    encode_key,
    tombstone,
    value_writer,
)

__all__ = (
    "CONSUMER_RECORD_TYPES",
    "ConsumerKey",
    "CurrentAssignment",
    "MemberFields",
    "current_assignment_record",
    "decode_consumer_key",
    "decode_current_assignment",
    "decode_epoch",
    "decode_member_fields",
    "decode_partitions",
    "group_epoch_record",
    "member_metadata_record",
    "target_epoch_record",
    "target_member_record",
    "tombstone",
)

GROUP_METADATA = 3
PARTITION_METADATA = 4
MEMBER_METADATA = 5
TARGET_ASSIGNMENT_METADATA = 6
TARGET_ASSIGNMENT_MEMBER = 7
CURRENT_MEMBER_ASSIGNMENT = 8
CONSUMER_RECORD_TYPES = frozenset(range(GROUP_METADATA, CURRENT_MEMBER_ASSIGNMENT + 1))
_PER_MEMBER = (MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT)
_STATE_BYTES = {
    MemberState.STABLE: 0,
    MemberState.UNREVOKED_PARTITIONS: 1,
    MemberState.UNRELEASED_PARTITIONS: 2,
}
_STATES = {v: k for k, v in _STATE_BYTES.items()}


#: a consumer-group record key (types 5, 7, 8 carry the member id)
ConsumerKey = GroupKey


@dataclasses.dataclass(frozen=True, slots=True)
class MemberFields:
    """ConsumerGroupMemberMetadataValue: what a member said about itself."""

    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic: ClassicMetadata | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class CurrentAssignment:
    """ConsumerGroupCurrentMemberAssignmentValue, with topic names resolved."""

    member_epoch: int
    previous_member_epoch: int
    state: MemberState
    assigned: Assignment
    pending_revocation: Assignment
    #: KIP-1251's per-partition epochs, as far as the record carries them
    assignment_epochs: Mapping[tuple[str, int], int] = dataclasses.field(default_factory=dict)


# -- keys -------------------------------------------------------------------------------------


_key = encode_key
_value = value_writer


def decode_consumer_key(raw: bytes) -> ConsumerKey | None:
    """The key of a consumer-group record; ``None`` for any other record type."""
    return decode_group_key(raw, CONSUMER_RECORD_TYPES, _PER_MEMBER)


def _epoch_value(epoch: int) -> bytes:
    w = _value()
    w.int32(epoch)
    w.tagged_fields()
    return w.done()


def group_epoch_record(group_id: str, epoch: int) -> CoordinatorRecord:
    """ConsumerGroupMetadata: the group epoch (MetadataHash left at its default 0)."""
    return CoordinatorRecord(_key(GROUP_METADATA, group_id), _epoch_value(epoch), group_id)


def target_epoch_record(group_id: str, epoch: int) -> CoordinatorRecord:
    """ConsumerGroupTargetAssignmentMetadata: the epoch the target assignment was computed at."""
    key = _key(TARGET_ASSIGNMENT_METADATA, group_id)
    return CoordinatorRecord(key, _epoch_value(epoch), group_id)


def member_metadata_record(group_id: str, member: ConsumerMember) -> CoordinatorRecord:
    w = _value()
    w.string(member.instance_id)
    w.string(member.rack_id)
    w.string(member.client_id)
    w.string(member.client_host)
    w.array_length(len(member.subscribed_topic_names))
    for name in member.subscribed_topic_names:
        w.string(name)
    w.string(member.subscribed_topic_regex)
    w.int32(member.rebalance_timeout_ms)
    w.string(member.server_assignor)
    if member.classic is None:
        w.tagged_fields()
    else:  # tag 0: ClassicMemberMetadata, as Kafka writes it for a classic member
        body = _classic_metadata(member.classic)
        w.uvarint(1)
        w.uvarint(_CLASSIC_TAG)
        w.uvarint(len(body))
        w.parts.append(body)
    key = _key(MEMBER_METADATA, group_id, member.member_id)
    return CoordinatorRecord(key, w.done(), group_id)


#: KIP-1251's ``AssignmentEpochs`` of a current assignment's TopicPartitions (tagged)
_EPOCHS_TAG = 0


def _write_partitions(
    w: RecordWriter,
    assignment: Assignment,
    ids: Mapping[str, uuid.UUID],
    epochs: Mapping[tuple[str, int], int] | None = None,
) -> None:
    """TopicPartitions; with ``epochs`` (a current assignment), each partition's assignment
    epoch in the struct's tagged ``AssignmentEpochs``, in the order of ``Partitions``."""
    topics = [(t, ps) for t, ps in sorted(assignment.items()) if ps and t in ids]
    w.array_length(len(topics))
    for topic, ps in topics:
        w.uuid_(ids[topic])
        w.array_length(len(ps))
        for p in sorted(ps):
            w.int32(p)
        if epochs is None:
            w.tagged_fields()
            continue
        body = RecordWriter(0, flexible=True)
        body.parts.clear()  # a tagged field's value: no version prefix
        body.array_length(len(ps))
        for p in sorted(ps):
            body.int32(epochs[(topic, p)])
        raw = body.done()
        w.uvarint(1)
        w.uvarint(_EPOCHS_TAG)
        w.uvarint(len(raw))
        w.parts.append(raw)


def target_member_record(
    group_id: str, member_id: str, target: Assignment, ids: Mapping[str, uuid.UUID]
) -> CoordinatorRecord:
    w = _value()
    _write_partitions(w, target, ids)
    w.tagged_fields()
    key = _key(TARGET_ASSIGNMENT_MEMBER, group_id, member_id)
    return CoordinatorRecord(key, w.done(), group_id)


def current_assignment_record(
    group_id: str, member: ConsumerMember, ids: Mapping[str, uuid.UUID]
) -> CoordinatorRecord:
    w = _value()
    w.int32(member.member_epoch)
    w.int32(member.previous_member_epoch)
    w.int8(_STATE_BYTES[member.state])
    epochs = _epochs_of(member)
    _write_partitions(w, member.assigned, ids, epochs)
    _write_partitions(w, member.pending_revocation, ids, epochs)
    w.tagged_fields()
    key = _key(CURRENT_MEMBER_ASSIGNMENT, group_id, member.member_id)
    return CoordinatorRecord(key, w.done(), group_id)


def _epochs_of(member: ConsumerMember) -> dict[tuple[str, int], int] | None:
    """Every held partition's assignment epoch; None (the tag left out, as a record from
    before KIP-1251) for a member with none recorded yet (just migrated from a classic
    group): it replays to the same default, the member's epoch."""
    if not member.assignment_epochs:
        return None
    out: dict[tuple[str, int], int] = {}
    for topic, ps in member.held().items():
        for p in ps:
            epoch = member.assignment_epoch(topic, p)
            out[(topic, p)] = max(member.member_epoch, 0) if epoch is None else epoch
    return out


_CLASSIC_TAG = 0


def _classic_metadata(classic: ClassicMetadata) -> bytes:
    """ClassicMemberMetadata (SessionTimeoutMs, SupportedProtocols [Name, Metadata]), a
    flexible struct: compact forms, empty tagged fields."""
    w = RecordWriter(0, flexible=True)
    w.parts.clear()  # a nested struct: no version prefix
    w.int32(classic.session_timeout_ms)
    w.array_length(len(classic.protocols))
    for name, metadata in classic.protocols:
        w.string(name)
        w.bytes_(metadata)
        w.tagged_fields()
    w.tagged_fields()
    return w.done()


def _read_classic(r: RecordReader) -> ClassicMetadata:
    session_timeout_ms = r.int32()
    protocols = []
    for _ in range(max(r.array_length(), 0)):
        name = r.string()
        protocols.append((name, r.bytes_()))
        r.skip_tagged_fields()
    r.skip_tagged_fields()
    return ClassicMetadata(session_timeout_ms, tuple(protocols))


def _reader(raw: bytes) -> RecordReader:
    r = RecordReader(raw)
    r.flexible = True
    return r


def decode_epoch(raw: bytes) -> int:
    """The int32 leading ConsumerGroupMetadataValue and TargetAssignmentMetadataValue."""
    return _reader(raw).int32()


def decode_member_fields(raw: bytes) -> MemberFields:
    r = _reader(raw)
    instance_id = r.nullable_string()
    rack_id = r.nullable_string()
    client_id = r.string()
    client_host = r.string()
    names = tuple(r.string() for _ in range(max(r.array_length(), 0)))
    regex = r.nullable_string()
    rebalance_timeout_ms = r.int32()
    assignor = r.nullable_string()
    classic = None
    for _ in range(r.uvarint()):  # tagged fields: tag 0 is a classic member's metadata
        tag, size = r.uvarint(), r.uvarint()
        end = r.pos + size
        if tag == _CLASSIC_TAG:
            classic = _read_classic(r)
        r.pos = end
    return MemberFields(
        instance_id,
        rack_id,
        client_id,
        client_host,
        names,
        regex,
        rebalance_timeout_ms,
        assignor,
        classic,
    )


def _read_partitions(
    r: RecordReader,
    names: Mapping[uuid.UUID, str],
    epochs: dict[tuple[str, int], int] | None = None,
) -> Assignment:
    """TopicPartitions; fills ``epochs`` from the tagged ``AssignmentEpochs`` where present
    (a record without them, or with a count that does not match, leaves the defaults)."""
    out: dict[str, frozenset[int]] = {}
    for _ in range(max(r.array_length(), 0)):
        topic_id = r.uuid_()
        listed = [r.int32() for _ in range(max(r.array_length(), 0))]
        found: list[int] = []
        for _ in range(r.uvarint()):
            tag, size = r.uvarint(), r.uvarint()
            end = r.pos + size
            if tag == _EPOCHS_TAG:
                found = [r.int32() for _ in range(max(r.array_length(), 0))]
            r.pos = end
        if topic_id not in names or not listed:  # a deleted topic's partitions are dropped
            continue
        topic = names[topic_id]
        out[topic] = frozenset(listed)
        if epochs is not None and len(found) == len(listed):
            epochs.update(((topic, p), e) for p, e in zip(listed, found, strict=True))
    return out


def decode_partitions(raw: bytes, names: Mapping[uuid.UUID, str]) -> Assignment:
    """ConsumerGroupTargetAssignmentMemberValue."""
    return _read_partitions(_reader(raw), names)


def decode_current_assignment(raw: bytes, names: Mapping[uuid.UUID, str]) -> CurrentAssignment:
    r = _reader(raw)
    epoch = r.int32()
    previous = r.int32()
    state = _STATES.get(r.int8())
    if state is None:
        raise ValueError("unknown member state in ConsumerGroupCurrentMemberAssignmentValue")
    epochs: dict[tuple[str, int], int] = {}
    assigned = _read_partitions(r, names, epochs)
    pending = _read_partitions(r, names, epochs)
    return CurrentAssignment(epoch, previous, state, assigned, pending, epochs)
