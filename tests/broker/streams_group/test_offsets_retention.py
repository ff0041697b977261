"""Offsets retention of streams groups: while the group has members the topics its topology
reads keep their offsets; an empty group's offsets expire ``offsets.retention`` after their
commit and the group, left without offsets, is deleted (as a consumer group's)."""

from __future__ import annotations

from streamrt.broker.group.consumer_offsets import expired
from streamrt.broker.group.offsets import OffsetMetadataManager
from streamrt.broker.group.pending import PendingTxnOffsets
from streamrt.broker.group.rebalance import GroupConfig
from streamrt.broker.group.records import OffsetCommitValue
from streamrt.clock import ManualClock
from tests.broker.streams_group.coordinator_harness import GROUP, Harness

DAY = 86_400_000


def test_read_topics_keep_their_offsets_until_the_group_is_empty() -> None:
    h = Harness({"in": 1, "other": 1})
    h.join("a")
    offsets = OffsetMetadataManager(
        {},
        GroupConfig(),
        ManualClock(0),
        touch_member=lambda group, member: None,
        partition_exists=lambda topic, partition: True,
    )
    now = h.clock.now_ms()
    for topic in ("in", "other"):
        value = OffsetCommitValue(1, -1, "", now - 8 * DAY, -1)
        offsets.put(GROUP, topic, 0, value)
    pending = PendingTxnOffsets()
    records, gone = expired(h.coordinator, offsets, pending, h.topics, now, 7 * DAY)
    assert len(records) == 1 and gone == []  # "other" only: the topology reads "in"
    offsets.delete(GROUP, "other", 0)
    h.beat("a", -1)
    records, gone = expired(h.coordinator, offsets, pending, h.topics, now, 7 * DAY)
    assert len(records) == 1 and gone == [GROUP]
    assert h.coordinator.drop_if_empty(GROUP) and GROUP not in h.coordinator.groups
