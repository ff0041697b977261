"""Offsets retention of consumer groups (Kafka's ConsumerGroup.offsetExpirationCondition): an
offset of a topic no member subscribes to expires ``offsets.retention`` after its commit; an
empty group left without offsets is deleted."""

from __future__ import annotations

from streamrt.broker.group.consumer_offsets import expired
from streamrt.broker.group.offsets import OffsetMetadataManager
from streamrt.broker.group.pending import PendingTxnOffsets
from streamrt.broker.group.rebalance import GroupConfig
from streamrt.broker.group.records import OffsetCommitValue
from tests.broker.consumer_group.harness import GROUP, Harness

DAY = 86_400_000


def _value(commit_ts: int) -> OffsetCommitValue:
    return OffsetCommitValue(
        offset=1, leader_epoch=-1, metadata="", commit_timestamp=commit_ts, expire_timestamp=-1
    )


def test_unsubscribed_topics_expire_then_the_empty_group_goes() -> None:
    h = Harness({"t": 1, "other": 2})
    h.join("m1")  # subscribed to t only
    offsets = OffsetMetadataManager(
        {},
        GroupConfig(),
        h.clock,
        touch_member=lambda group, member: None,
        partition_exists=lambda topic, partition: True,
    )
    now = h.clock.now_ms()
    offsets.put(GROUP, "t", 0, _value(now - 8 * DAY))
    offsets.put(GROUP, "other", 0, _value(now - 8 * DAY))
    offsets.put(GROUP, "other", 1, _value(now - 1 * DAY))
    pending = PendingTxnOffsets()
    records, gone = expired(h.coordinator, offsets, pending, h.topics, now, 7 * DAY)
    assert [(r.group_id, r.value) for r in records] == [(GROUP, None)]  # other-0 only
    assert gone == []
    h.beat("m1", -1)  # the group is empty: nothing is subscribed any more
    offsets.delete(GROUP, "other", 0)
    records, gone = expired(h.coordinator, offsets, pending, h.topics, now + 7 * DAY, 7 * DAY)
    assert len(records) == 2 and gone == [GROUP]
