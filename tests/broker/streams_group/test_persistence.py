"""Streams groups in ``__consumer_offsets``: every step's records, replayed into an empty
coordinator, give the same group back (epochs, topology, members, targets, tasks), with
Kafka 4.3.1's record types; a group deleted leaves tombstones that replay to nothing."""

from __future__ import annotations

from typing import Any

from streamrt.broker.coordination.record_reader import RecordReader
from streamrt.broker.group.timer import ManualTimer
from streamrt.broker.streams_group.coordinator import StreamsGroupCoordinator
from streamrt.broker.streams_group_config import StreamsGroupConfig
from streamrt.clock import ManualClock
from tests.broker.streams_group.coordinator_harness import (
    CHANGELOG,
    GROUP,
    REPARTITION,
    Harness,
    count_topology,
)


def _replayed(records: list[Any]) -> StreamsGroupCoordinator:
    fresh = StreamsGroupCoordinator(StreamsGroupConfig(), ManualTimer(ManualClock(0)), lambda: {})
    for r in records:
        assert fresh.replay(r.key, r.value)
    return fresh


def _view(group: Any) -> tuple[Any, ...]:
    return (
        group.group_epoch,
        group.assignment_epoch,
        group.validated_topology_epoch,
        group.standby_replicas_used,
        group.topology,
        dict(group.members),
        {m: t for m, t in group.target.items()},
    )


def test_every_step_replays_to_the_same_group() -> None:
    h = Harness(topics={"in": 2, REPARTITION: 2, CHANGELOG: 2}, num_standby_replicas=1)
    log: list[Any] = []

    def keep(answer: Any) -> Any:
        log.extend(answer.records)
        return answer

    keep(h.join("a1", instance_id="A", process="pa", topology=count_topology(), endpoint=("a", 1)))
    keep(h.join("b1", process="pb", topology=count_topology()))
    for _ in range(4):
        for m in ("a1", "b1"):
            member = h.group.members[m]
            keep(h.beat(m, member.member_epoch, member.assigned))
    keep(h.beat("a1", -2, instance_id="A"))
    assert {RecordReader(r.key).version for r in log} == {17, 19, 20, 21, 22, 23}
    back = _replayed(log).groups[GROUP]
    assert _view(back) == _view(h.group)
    assert back.members["a1"].member_epoch == -2 and back.static_members == {"A": "a1"}


def test_a_deleted_group_replays_to_nothing() -> None:
    h = Harness()
    log = list(h.join("a").records)
    log += h.beat("a", -1).records
    log += h.coordinator.drop_if_empty(GROUP)
    assert GROUP not in h.coordinator.groups
    assert GROUP not in _replayed(log).groups
