"""KIP-1071 streams-group records of ``__consumer_offsets``, as Kafka 4.3.1 writes them.

Record types (the key's int16 prefix, from Kafka 4.3.1's ``StreamsGroup*Key.json``): 17 group
metadata, 19 member metadata, 20 target assignment metadata, 21 target assignment member, 22
current member assignment, 23 topology. Keys are version 0 (non-flexible strings); values are
version 0, flexible. Tagged fields we write: the group metadata's ValidatedTopologyEpoch (tag 0)
and LastAssignmentConfigs (tag 1, ``num.standby.replicas``), the current assignment's active
TaskIds' AssignmentEpochs (tag 0, KAFKA-19779); others are skipped on read.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping

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
from streamrt.broker.streams_group.member import MemberState, StreamsMember, Tasks, merge
from streamrt.broker.streams_group.topology import (
    CopartitionGroup,
    StreamsTopology,
    Subtopology,
    TaskIds,
    TopicInfo,
)

__all__ = (
    "CURRENT_MEMBER_ASSIGNMENT",
    "GROUP_METADATA",
    "MEMBER_METADATA",
    "STREAMS_RECORD_TYPES",
    "TARGET_ASSIGNMENT_MEMBER",
    "TARGET_ASSIGNMENT_METADATA",
    "TOPOLOGY",
    "GroupMetadata",
    "StreamsKey",
    "current_assignment_record",
    "decode_current_assignment",
    "decode_group_metadata",
    "decode_key",
    "decode_member_metadata",
    "decode_target",
    "decode_target_epoch",
    "decode_topology",
    "group_metadata_record",
    "member_metadata_record",
    "target_epoch_record",
    "target_member_record",
    "tombstone",
    "topology_record",
)

GROUP_METADATA = 17
MEMBER_METADATA = 19
TARGET_ASSIGNMENT_METADATA = 20
TARGET_ASSIGNMENT_MEMBER = 21
CURRENT_MEMBER_ASSIGNMENT = 22
TOPOLOGY = 23
STREAMS_RECORD_TYPES = frozenset({17, 19, 20, 21, 22, 23})
_PER_MEMBER = (MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT)
_STATE_BYTES = {
    MemberState.STABLE: 0,
    MemberState.UNREVOKED_TASKS: 1,
    MemberState.UNRELEASED_TASKS: 2,
}
_STATES = {v: k for k, v in _STATE_BYTES.items()}
_STANDBYS = "num.standby.replicas"


#: a streams-group record key (types 19, 21, 22 carry the member id)
StreamsKey = GroupKey


@dataclasses.dataclass(frozen=True, slots=True)
class GroupMetadata:
    epoch: int
    validated_topology_epoch: int
    standby_replicas: int


# -- keys -------------------------------------------------------------------------------------


_key = encode_key
_value = value_writer


def decode_key(raw: bytes) -> StreamsKey | None:
    """The key of a streams-group record; ``None`` for any other record type."""
    return decode_group_key(raw, STREAMS_RECORD_TYPES, _PER_MEMBER)


def _record(
    kind: int, group_id: str, w: RecordWriter, member_id: str | None = None
) -> CoordinatorRecord:
    w.tagged_fields()
    return CoordinatorRecord(_key(kind, group_id, member_id), w.done(), group_id)


def _payload(write: Callable[[RecordWriter], None]) -> bytes:
    w = _value()
    write(w)
    return w.done()[2:]  # without the version prefix


def metadata_hash(metadata: Mapping[str, int]) -> int:
    """A stable int64 of the topology's topics and partition counts (Kafka's MetadataHash
    role; its exact hash is not reproduced, and it is recomputed at load)."""
    text = ",".join(f"{t}:{n}" for t, n in sorted(metadata.items())).encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "big", signed=True)


def group_metadata_record(
    group_id: str, meta: GroupMetadata, metadata: Mapping[str, int]
) -> CoordinatorRecord:
    w = _value()
    w.int32(meta.epoch)
    w.int64(metadata_hash(metadata))

    def configs(v: RecordWriter) -> None:
        v.array_length(1)
        v.string(_STANDBYS)
        v.string(str(meta.standby_replicas))
        v.tagged_fields()

    validated = _payload(lambda v: v.int32(meta.validated_topology_epoch))
    tagged = ((0, validated), (1, _payload(configs)))
    w.uvarint(len(tagged))
    for tag, raw in tagged:
        w.uvarint(tag)
        w.uvarint(len(raw))
        w.parts.append(raw)
    return CoordinatorRecord(_key(GROUP_METADATA, group_id), w.done(), group_id)


def member_metadata_record(group_id: str, m: StreamsMember) -> CoordinatorRecord:
    w = _value()
    w.string(m.instance_id)
    w.string(m.rack_id)
    w.string(m.client_id)
    w.string(m.client_host)
    w.int32(m.rebalance_timeout_ms)
    w.int32(m.topology_epoch)
    w.string(m.process_id)
    if m.user_endpoint is None:
        w.int8(-1)
    else:
        w.int8(1)
        w.string(m.user_endpoint[0])
        w.int16(m.user_endpoint[1] - 65536 if m.user_endpoint[1] >= 32768 else m.user_endpoint[1])
        w.tagged_fields()
    w.array_length(len(m.client_tags))
    for k, v in m.client_tags:
        w.string(k)
        w.string(v)
        w.tagged_fields()
    return _record(MEMBER_METADATA, group_id, w, m.member_id)


def _write_tasks(
    w: RecordWriter, tasks: TaskIds, epochs: Mapping[tuple[str, int], int] | None = None
) -> None:
    """TaskIds; with ``epochs`` (a current assignment's active tasks) each task's assignment
    epoch in the struct's tagged ``AssignmentEpochs`` (tag 0), in the order of Partitions."""
    entries = [(s, ps) for s, ps in sorted(tasks.items()) if ps]
    w.array_length(len(entries))
    for sub, ps in entries:
        w.string(sub)
        w.array_length(len(ps))
        for p in sorted(ps):
            w.int32(p)
        if epochs is None:
            w.tagged_fields()
            continue
        raw = _epochs_payload([epochs[(sub, p)] for p in sorted(ps)])
        w.uvarint(1)
        w.uvarint(_EPOCHS_TAG)
        w.uvarint(len(raw))
        w.parts.append(raw)


#: ``AssignmentEpochs`` in a current assignment's TaskIds (KAFKA-19779)
_EPOCHS_TAG = 0


def _epochs_payload(epochs: list[int]) -> bytes:
    def write(w: RecordWriter) -> None:
        w.array_length(len(epochs))
        for e in epochs:
            w.int32(e)

    return _payload(write)


def _active_epochs(m: StreamsMember) -> dict[tuple[str, int], int] | None:
    """Every held active task's assignment epoch; None (the tag left out, as a record from
    before) for a member with none recorded: it replays to the same default."""
    if not m.assignment_epochs:
        return None
    held = merge(m.assigned.active, m.pending_revocation.active)
    out: dict[tuple[str, int], int] = {}
    for sub, ps in held.items():
        for p in ps:
            epoch = m.assignment_epoch(sub, p)
            out[(sub, p)] = max(m.member_epoch, 0) if epoch is None else epoch
    return out


def target_epoch_record(group_id: str, epoch: int) -> CoordinatorRecord:
    w = _value()
    w.int32(epoch)
    return _record(TARGET_ASSIGNMENT_METADATA, group_id, w)


def target_member_record(group_id: str, member_id: str, target: Tasks) -> CoordinatorRecord:
    w = _value()
    for role in (target.active, target.standby, target.warmup):
        _write_tasks(w, role)
    return _record(TARGET_ASSIGNMENT_MEMBER, group_id, w, member_id)


def current_assignment_record(group_id: str, m: StreamsMember) -> CoordinatorRecord:
    w = _value()
    w.int32(m.member_epoch)
    w.int32(m.previous_member_epoch)
    w.int8(_STATE_BYTES[m.state])
    epochs = _active_epochs(m)
    for tasks in (m.assigned, m.pending_revocation):
        _write_tasks(w, tasks.active, epochs)
        for role in (tasks.standby, tasks.warmup):
            _write_tasks(w, role)
    return _record(CURRENT_MEMBER_ASSIGNMENT, group_id, w, m.member_id)


def _write_topic_info(w: RecordWriter, info: TopicInfo) -> None:
    w.string(info.name)
    w.int32(info.partitions)
    w.int16(info.replication_factor)
    w.array_length(len(info.configs))
    for k, v in info.configs:
        w.string(k)
        w.string(v)
        w.tagged_fields()
    w.tagged_fields()


def _write_strings(w: RecordWriter, values: tuple[str, ...]) -> None:
    w.array_length(len(values))
    for v in values:
        w.string(v)


def _write_int16s(w: RecordWriter, values: tuple[int, ...]) -> None:
    w.array_length(len(values))
    for v in values:
        w.int16(v)


def topology_record(group_id: str, topology: StreamsTopology) -> CoordinatorRecord:
    w = _value()
    w.int32(topology.epoch)
    w.array_length(len(topology.subtopologies))
    for s in topology.subtopologies:
        w.string(s.subtopology_id)
        _write_strings(w, s.source_topics)
        _write_strings(w, s.source_topic_regex)
        w.array_length(len(s.state_changelog_topics))
        for info in s.state_changelog_topics:
            _write_topic_info(w, info)
        _write_strings(w, s.repartition_sink_topics)
        w.array_length(len(s.repartition_source_topics))
        for info in s.repartition_source_topics:
            _write_topic_info(w, info)
        w.array_length(len(s.copartition_groups))
        for g in s.copartition_groups:
            _write_int16s(w, g.source_topics)
            _write_int16s(w, g.source_topic_regex)
            _write_int16s(w, g.repartition_source_topics)
            w.tagged_fields()
        w.tagged_fields()
    return _record(TOPOLOGY, group_id, w)


# -- reading ----------------------------------------------------------------------------------


def _reader(raw: bytes) -> RecordReader:
    r = RecordReader(raw)
    r.flexible = True
    return r


def _count(r: RecordReader) -> int:
    return max(r.array_length(), 0)


def decode_group_metadata(raw: bytes) -> GroupMetadata:
    r = _reader(raw)
    epoch = r.int32()
    r.int64()  # MetadataHash: recomputed at load
    validated, standbys = -1, 0
    for _ in range(r.uvarint()):
        tag, size = r.uvarint(), r.uvarint()
        end = r.pos + size
        if tag == 0:
            validated = r.int32()
        elif tag == 1:
            for _ in range(_count(r)):
                k, v = r.string(), r.string()
                r.skip_tagged_fields()
                if k == _STANDBYS:
                    standbys = int(v)
        r.pos = end
    return GroupMetadata(epoch, validated, standbys)


def decode_member_metadata(raw: bytes, member: StreamsMember) -> StreamsMember:
    r = _reader(raw)
    instance_id, rack_id = r.nullable_string(), r.nullable_string()
    client_id, client_host = r.string(), r.string()
    rebalance_timeout_ms, topology_epoch = r.int32(), r.int32()
    process_id = r.string()
    endpoint = None
    if r.int8() >= 0:
        endpoint = (r.string(), r.int16() & 0xFFFF)
        r.skip_tagged_fields()
    tags = []
    for _ in range(_count(r)):
        tags.append((r.string(), r.string()))
        r.skip_tagged_fields()
    return dataclasses.replace(
        member,
        instance_id=instance_id,
        rack_id=rack_id,
        client_id=client_id,
        client_host=client_host,
        rebalance_timeout_ms=rebalance_timeout_ms,
        topology_epoch=topology_epoch,
        process_id=process_id,
        user_endpoint=endpoint,
        client_tags=tuple(tags),
    )


def _read_tasks(
    r: RecordReader, epochs: dict[tuple[str, int], int] | None = None
) -> dict[str, frozenset[int]]:
    """TaskIds; fills ``epochs`` from a current assignment's ``AssignmentEpochs`` (tag 0)
    where present with one epoch per partition (else the defaults stay)."""
    out: dict[str, frozenset[int]] = {}
    for _ in range(_count(r)):
        sub = r.string()
        listed = [r.int32() for _ in range(_count(r))]
        found: list[int] = []
        for _ in range(r.uvarint()):
            tag, size = r.uvarint(), r.uvarint()
            end = r.pos + size
            if tag == _EPOCHS_TAG:
                found = [r.int32() for _ in range(_count(r))]
            r.pos = end
        if listed:
            out[sub] = frozenset(listed)
        if epochs is not None and listed and len(found) == len(listed):
            epochs.update(((sub, p), e) for p, e in zip(listed, found, strict=True))
    return out


def _read_tuple(r: RecordReader, epochs: dict[tuple[str, int], int] | None = None) -> Tasks:
    return Tasks(_read_tasks(r, epochs), _read_tasks(r), _read_tasks(r))


def decode_target_epoch(raw: bytes) -> int:
    return _reader(raw).int32()


def decode_target(raw: bytes) -> Tasks:
    return _read_tuple(_reader(raw))


def decode_current_assignment(raw: bytes, member: StreamsMember) -> StreamsMember:
    r = _reader(raw)
    epoch, previous = r.int32(), r.int32()
    state = _STATES.get(r.int8())
    if state is None:
        raise ValueError("unknown member state in StreamsGroupCurrentMemberAssignmentValue")
    epochs: dict[tuple[str, int], int] = {}
    assigned = _read_tuple(r, epochs)
    pending = _read_tuple(r, epochs)
    return dataclasses.replace(
        member,
        member_epoch=epoch,
        previous_member_epoch=previous,
        state=state,
        assigned=assigned,
        pending_revocation=pending,
        assignment_epochs=epochs,
    )


def _read_topic_info(r: RecordReader) -> TopicInfo:
    name, partitions, replication = r.string(), r.int32(), r.int16()
    configs = []
    for _ in range(_count(r)):
        configs.append((r.string(), r.string()))
        r.skip_tagged_fields()
    r.skip_tagged_fields()
    return TopicInfo(name, partitions, replication, tuple(configs))


def _read_strings(r: RecordReader) -> tuple[str, ...]:
    return tuple(r.string() for _ in range(_count(r)))


def _read_int16s(r: RecordReader) -> tuple[int, ...]:
    return tuple(r.int16() for _ in range(_count(r)))


def decode_topology(raw: bytes) -> StreamsTopology:
    r = _reader(raw)
    epoch = r.int32()
    subs = []
    for _ in range(_count(r)):
        sub_id = r.string()
        sources, regex = _read_strings(r), _read_strings(r)
        changelogs = tuple(_read_topic_info(r) for _ in range(_count(r)))
        sinks = _read_strings(r)
        repartitions = tuple(_read_topic_info(r) for _ in range(_count(r)))
        groups = []
        for _ in range(_count(r)):
            groups.append(CopartitionGroup(_read_int16s(r), _read_int16s(r), _read_int16s(r)))
            r.skip_tagged_fields()
        r.skip_tagged_fields()
        subs.append(
            Subtopology(sub_id, sources, regex, changelogs, sinks, repartitions, tuple(groups))
        )
    return StreamsTopology(epoch, tuple(subs))
