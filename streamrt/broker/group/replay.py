"""Applying one ``__consumer_offsets`` record to the coordinator's state (load and
``replay=True`` results): offsets, group metadata, their tombstones, and a transactional
offset held pending until its marker. A record that does not decode raises; the loader skips
it (:mod:`streamrt.broker.coordination.loader`)."""

from __future__ import annotations

from collections.abc import MutableMapping

from streamrt.broker.group.group import ClassicGroup
from streamrt.broker.group.offsets import OffsetMetadataManager
from streamrt.broker.group.pending import PendingTxnOffsets, replay_pending
from streamrt.broker.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_value,
)
from streamrt.broker.group.state import GroupState

__all__ = ("replay_record",)


def replay_record(
    groups: MutableMapping[str, ClassicGroup],
    offsets: OffsetMetadataManager,
    pending: PendingTxnOffsets,
    key_bytes: bytes,
    value_bytes: bytes | None,
    producer_id: int = -1,
) -> None:
    """Apply one record; unknown key versions (e.g. KIP-848 records) are ignored."""
    if producer_id >= 0:
        replay_pending(pending, producer_id, key_bytes, value_bytes)
        return
    key = decode_key(key_bytes)
    if key is None:
        return
    if isinstance(key, OffsetCommitKey):
        if value_bytes is None:
            offsets.delete(key.group, key.topic, key.partition)
            return
        value = decode_value(key, value_bytes)
        assert isinstance(value, OffsetCommitValue)
        if key.group not in groups:
            groups[key.group] = ClassicGroup(key.group, value.commit_timestamp)
        offsets.put(key.group, key.topic, key.partition, value)
        return
    assert isinstance(key, GroupMetadataKey)
    if value_bytes is None:
        group = groups.pop(key.group, None)
        if group is not None:
            group.state = GroupState.DEAD
        offsets.delete_group(key.group)
        return
    group_value = decode_value(key, value_bytes)
    assert isinstance(group_value, GroupMetadataValue)
    groups[key.group] = ClassicGroup.from_record(key.group, group_value)
