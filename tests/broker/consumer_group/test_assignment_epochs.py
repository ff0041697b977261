"""KIP-1251 assignment epochs in the consumer-group coordinator (a pure state machine on a
manual clock): a commit at an older member epoch passes for each partition the member has held
since that epoch, and only for those; a broker restart (replay) keeps the epochs."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from streamrt.broker.consumer_group.coordinator import ConsumerGroupCoordinator
from streamrt.broker.consumer_group.member import ConsumerMember
from streamrt.broker.consumer_group.records import (
    current_assignment_record,
    decode_current_assignment,
)
from streamrt.broker.coordination.record_writer import RecordWriter
from streamrt.broker.group.consumer_offsets import commit, txn_commit
from streamrt.broker.group.offsets import OffsetMetadataManager
from streamrt.broker.group.rebalance import GroupConfig
from streamrt.errors import ErrorCode
from tests.broker.consumer_group.harness import GROUP
from tests.broker.consumer_group.test_persistence import IDS, Persisted


def _survivor(h: Persisted) -> None:
    """a holds t-0..2 since epoch 1, b held t-3..5 at epoch 2 and left: a is at epoch 3 with
    all six, t-3..5 assigned to it at epoch 3."""
    h.join("a")
    h.join("b")
    h.beat("a", 1, {"t": set(range(6))})  # told to give up 3..5
    h.beat("a", 1, {"t": {0, 1, 2}})  # revoked: epoch 2
    h.beat("b", 2, {})  # b gets 3..5 at epoch 2
    assert set(h.group.members["b"].assigned["t"]) == {3, 4, 5}
    h.beat("b", -1)  # b leaves: group epoch 3
    answer = h.beat("a", 2, {"t": {0, 1, 2}})
    assert answer.member_epoch == 3 and h.group.group_epoch == 3


def _offsets(h: Persisted) -> OffsetMetadataManager:
    return OffsetMetadataManager(
        {},
        GroupConfig(),
        h.clock,
        touch_member=lambda group, member: None,
        partition_exists=lambda topic, partition: True,
    )


def _partitions(*indexes: int) -> list[Any]:
    return [
        SimpleNamespace(
            partition_index=p,
            committed_offset=10 + p,
            committed_leader_epoch=-1,
            committed_metadata="",
        )
        for p in indexes
    ]


def _codes(response: Any) -> dict[int, int]:
    return {p.partition_index: p.error_code for t in response.topics for p in t.partitions}


def _commit(coordinator: Any, offsets: Any, epoch: int, *indexes: int) -> dict[int, int]:
    """An OffsetCommit v9 from member a at ``epoch``: partition -> error code."""
    request = SimpleNamespace(
        group_id=GROUP,
        member_id="a",
        generation_id_or_member_epoch=epoch,
        topics=[SimpleNamespace(name="t", partitions=_partitions(*indexes))],
    )
    response, _records = commit(coordinator, offsets, 0, 9, request)
    return _codes(response)


def test_a_survivor_commits_at_its_previous_epoch_what_it_held_then() -> None:
    h = Persisted()
    _survivor(h)
    offsets = _offsets(h)
    # the commit a sent at epoch 2, before b's leave reached it: t-0..2 are still its own
    assert _commit(h.coordinator, offsets, 2, 0, 1, 2) == dict.fromkeys((0, 1, 2), 0)
    assert _commit(h.coordinator, offsets, 1, 0) == {0: 0}  # held since epoch 1
    # t-3 was b's at epoch 2: a commit of it at epoch 2 is a zombie's, refused alone
    stale = ErrorCode.stale_member_epoch.value
    assert _commit(h.coordinator, offsets, 2, 0, 3) == {0: 0, 3: stale}
    assert _commit(h.coordinator, offsets, 3, 0, 3) == {0: 0, 3: 0}  # its current epoch
    assert _commit(h.coordinator, offsets, 4, 0) == {0: stale}  # above the member's epoch
    assert _commit(h.coordinator, offsets, 0, 0) == {0: stale}


def test_a_partition_revoked_from_the_member_is_refused_at_the_older_epoch() -> None:
    h = Persisted()
    h.join("a")
    h.join("b")
    h.beat("a", 1, {"t": set(range(6))})
    h.beat("a", 1, {"t": {0, 1, 2}})  # a gave up 3..5, now at epoch 2
    h.beat("b", 2, {})  # b owns 3..5
    offsets = _offsets(h)
    stale = ErrorCode.stale_member_epoch.value
    # a's late commit at epoch 1: 0..2 are still its own, 3 is b's now
    assert _commit(h.coordinator, offsets, 1, 0, 3) == {0: 0, 3: stale}
    assert offsets.get(GROUP, "t", 0) is None  # the records are the caller's to append


def test_a_transactional_commit_at_the_older_epoch_is_checked_per_partition() -> None:
    h = Persisted()
    _survivor(h)
    request = SimpleNamespace(
        group_id=GROUP,
        member_id="a",
        generation_id=2,
        topics=[SimpleNamespace(name="t", partitions=_partitions(1, 4))],
    )
    response, records = txn_commit(h.coordinator, _offsets(h), 0, 3, request)
    assert _codes(response) == {1: 0, 4: ErrorCode.illegal_generation.value}
    assert len(records) == 1  # t-1 only


def test_a_restart_keeps_the_assignment_epochs() -> None:
    h = Persisted()
    _survivor(h)
    before = dict(h.group.members["a"].assignment_epochs)
    assert before == {("t", p): 1 for p in (0, 1, 2)} | {("t", p): 3 for p in (3, 4, 5)}
    fresh: ConsumerGroupCoordinator = h.restarted()
    assert dict(fresh.groups[GROUP].members["a"].assignment_epochs) == before
    stale = ErrorCode.stale_member_epoch.value
    assert _commit(fresh, _offsets(h), 2, 0, 3) == {0: 0, 3: stale}


def test_a_record_without_assignment_epochs_counts_from_the_member_epoch() -> None:
    """A current-assignment record written before KIP-1251 (no AssignmentEpochs tag) replays
    with each partition counted from the member's epoch, Kafka's default: older commits of it
    are refused, as before."""
    w = RecordWriter(0, flexible=True)
    w.int32(3)  # MemberEpoch
    w.int32(2)  # PreviousMemberEpoch
    w.int8(0)  # State: stable
    w.array_length(1)  # AssignedPartitions
    w.uuid_(IDS["t"])
    w.array_length(2)
    w.int32(0)
    w.int32(1)
    w.tagged_fields()  # no AssignmentEpochs
    w.array_length(0)  # PartitionsPendingRevocation
    w.tagged_fields()
    names = {v: k for k, v in IDS.items()}
    legacy = decode_current_assignment(w.done(), names)
    assert legacy.assigned == {"t": frozenset({0, 1})} and legacy.assignment_epochs == {}
    h = Persisted()
    _survivor(h)
    member = h.group.members["a"]
    record = current_assignment_record(GROUP, member, IDS)
    assert decode_current_assignment(record.value or b"", names).assignment_epochs == dict(
        member.assignment_epochs
    )
    old = ConsumerMember("a", member_epoch=3, assigned={"t": frozenset({0, 1})})
    assert old.assignment_epoch("t", 0) == 3 and old.assignment_epoch("t", 2) is None
