"""Per-task assignment epochs of streams groups (Kafka's KAFKA-19779, the streams side of
KIP-1251) in the pure coordinator: a member's commit at an older epoch passes for each input
partition of an active task it has run since that epoch, and only for those; a restart
(replay of the records) keeps the epochs."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from streamrt.broker.group.consumer_offsets import commit
from streamrt.broker.group.offsets import OffsetMetadataManager
from streamrt.broker.group.rebalance import GroupConfig
from streamrt.broker.group.timer import ManualTimer
from streamrt.broker.streams_group.coordinator import StreamsGroupCoordinator
from streamrt.broker.streams_group_config import StreamsGroupConfig
from streamrt.clock import ManualClock
from streamrt.errors import ErrorCode
from tests.broker.streams_group.coordinator_harness import GROUP, Harness, actives


def _check(coordinator: Any, epoch: int, topic: str, partition: int) -> ErrorCode | None:
    """The answer to member a's OffsetCommit v9 of (topic, partition) at ``epoch``, through
    the broker's commit path (None: committed)."""
    offsets = OffsetMetadataManager(
        {},
        GroupConfig(),
        ManualClock(0),
        touch_member=lambda group, member: None,
        partition_exists=lambda topic, partition: True,
    )
    part = SimpleNamespace(
        partition_index=partition,
        committed_offset=1,
        committed_leader_epoch=-1,
        committed_metadata="",
    )
    request = SimpleNamespace(
        group_id=GROUP,
        member_id="a",
        generation_id_or_member_epoch=epoch,
        topics=[SimpleNamespace(name=topic, partitions=[part])],
    )
    response, _ = commit(coordinator, offsets, 0, 9, request)
    code = ErrorCode(response.topics[0].partitions[0].error_code)
    return None if code is ErrorCode.none else code


def _survivor(h: Harness, log: list[Any]) -> tuple[int, set[int], set[int]]:
    """a and b split the 4 tasks, b leaves, a runs all 4: (a's epoch before the leave, the
    tasks a kept, the tasks it gained from b)."""
    log += h.join("a").records
    log += h.join("b").records
    for _ in range(6):
        for m in ("a", "b"):
            member = h.group.members[m]
            log += h.beat(m, member.member_epoch, member.assigned).records
    before = h.group.members["a"].member_epoch
    kept, gained = actives(h.group.members["a"].assigned), actives(h.group.members["b"].assigned)
    assert kept and gained and before == h.group.group_epoch
    log += h.beat("b", -1).records  # the group epoch bumps
    for _ in range(3):
        member = h.group.members["a"]
        log += h.beat("a", member.member_epoch, member.assigned).records
    assert actives(h.group.members["a"].assigned) == kept | gained
    assert h.group.members["a"].member_epoch > before
    return before, kept, gained


def test_a_survivor_commits_its_kept_tasks_at_its_previous_epoch() -> None:
    h, log = Harness(), []
    before, kept, gained = _survivor(h, log)
    now = h.group.members["a"].member_epoch
    stale = ErrorCode.stale_member_epoch
    assert _check(h.coordinator, before, "in", min(kept)) is None
    assert _check(h.coordinator, before, "in", min(gained)) == stale  # b's task at that epoch
    assert _check(h.coordinator, before, "other", min(kept)) == stale  # no task reads it
    assert _check(h.coordinator, now, "in", min(gained)) is None
    assert _check(h.coordinator, now + 1, "in", min(kept)) == stale


def test_a_restart_keeps_the_task_assignment_epochs() -> None:
    h, log = Harness(), []
    before, kept, gained = _survivor(h, log)
    fresh = StreamsGroupCoordinator(StreamsGroupConfig(), ManualTimer(ManualClock(0)), lambda: {})
    for record in log:
        assert fresh.replay(record.key, record.value)
    epochs = dict(h.group.members["a"].assignment_epochs)
    assert set(epochs) == {("0", p) for p in kept | gained}
    assert dict(fresh.groups[GROUP].members["a"].assignment_epochs) == epochs
    assert _check(fresh, before, "in", min(kept)) is None
    assert _check(fresh, before, "in", min(gained)) == ErrorCode.stale_member_epoch
