"""The key and value framing both group protocols' ``__consumer_offsets`` records share:
a key is the record type (int16), the group id, and the member id for the per-member types;
values are version 0, flexible. Each protocol names its own record types."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection

from streamrt.broker.coordination.record_reader import RecordReader
from streamrt.broker.coordination.record_writer import RecordWriter
from streamrt.broker.coordination.result import CoordinatorRecord

__all__ = ("GroupKey", "decode_group_key", "encode_key", "tombstone", "value_writer")


@dataclasses.dataclass(frozen=True, slots=True)
class GroupKey:
    record_type: int
    group_id: str
    member_id: str | None = None  # set for the per-member types


def encode_key(record_type: int, group_id: str, member_id: str | None = None) -> bytes:
    w = RecordWriter(record_type)
    w.string(group_id)
    if member_id is not None:
        w.string(member_id)
    return w.done()


def decode_group_key(
    raw: bytes, types: Collection[int], per_member: Collection[int]
) -> GroupKey | None:
    """The key of a record of one of ``types``; ``None`` for any other record type."""
    r = RecordReader(raw)
    if r.version not in types:
        return None
    group_id = r.string()
    member_id = r.string() if r.version in per_member else None
    return GroupKey(r.version, group_id, member_id)


def tombstone(record_type: int, group_id: str, member_id: str | None = None) -> CoordinatorRecord:
    return CoordinatorRecord(encode_key(record_type, group_id, member_id), None, group_id)


def value_writer() -> RecordWriter:
    return RecordWriter(0, flexible=True)
