"""KIP-848 groups in ``__consumer_offsets``: every step's records, replayed into a fresh
coordinator (the broker's load after a restart), rebuild the same groups: epochs, members,
target and current assignments, and static members; a left member and a deleted group stay
gone. The records are Kafka's (type in the key, version 0 flexible values)."""

from __future__ import annotations

import uuid
from typing import Any

from streamrt.broker.consumer_group.coordinator import ConsumerGroupCoordinator
from streamrt.broker.consumer_group.member import MemberState
from streamrt.broker.consumer_group.requests import HeartbeatAnswer, HeartbeatRequest
from streamrt.broker.group.records import CoordinatorRecord
from streamrt.broker.group.timer import ManualTimer
from streamrt.errors import ErrorCode
from tests.broker.consumer_group.harness import GROUP, Harness, parts

IDS = {"t": uuid.UUID(int=1), "u": uuid.UUID(int=2)}


class Persisted(Harness):
    """The harness with topic ids, keeping the log every step appends."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(topics={"t": 6, "u": 2}, **kw)
        self.coordinator.topic_ids = lambda: dict(IDS)
        self.log: list[CoordinatorRecord] = []

    def keep(self, answer: HeartbeatAnswer) -> HeartbeatAnswer:
        self.log.extend(answer.records)
        return answer

    def join(self, member_id: str, *args: Any, **kw: Any) -> HeartbeatAnswer:
        return self.keep(super().join(member_id, *args, **kw))

    def beat(self, member_id: str, epoch: int, *args: Any, **kw: Any) -> HeartbeatAnswer:
        return self.keep(super().beat(member_id, epoch, *args, **kw))

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        for result in self.timer.poll():
            self.log.extend(result.records)

    def restarted(self) -> ConsumerGroupCoordinator:
        """A new coordinator loaded from the log, as the broker's start does."""
        fresh = ConsumerGroupCoordinator(
            self.config,
            self.clock,
            ManualTimer(self.clock),
            lambda: dict(self.topics),
            lambda: dict(IDS),
        )
        for record in self.log:
            assert fresh.replay(record.key, record.value)
        fresh.on_loaded()
        return fresh


def _state(coordinator: ConsumerGroupCoordinator) -> dict[str, Any]:
    return {
        gid: (
            g.group_epoch,
            g.assignment_epoch,
            dict(g.members),
            {m: {t: p for t, p in a.items() if p} for m, a in g.target.items()},
            dict(g.static_members),
            g.state,
        )
        for gid, g in coordinator.groups.items()
    }


def _held(h: Persisted, member_id: str) -> dict[str, set[int]]:
    return {t: set(p) for t, p in h.group.members[member_id].assigned.items()}


def _stable_pair(h: Persisted) -> tuple[int, set[int], set[int]]:
    h.join("a")
    h.join("b")
    for _ in range(4):  # each reports what it holds until both are reconciled
        for mid in ("a", "b"):
            h.beat(mid, h.group.members[mid].member_epoch, _held(h, mid))
    assert all(m.is_reconciled_to(h.group.group_epoch) for m in h.group.members.values())
    a, b = (set(h.group.members[m].assigned["t"]) for m in ("a", "b"))
    return h.group.group_epoch, a, b


def test_a_reconciled_group_replays_to_the_same_state() -> None:
    h = Persisted()
    epoch, a_parts, b_parts = _stable_pair(h)
    assert a_parts and b_parts and not a_parts & b_parts
    fresh = h.restarted()
    assert _state(fresh) == _state(h.coordinator)
    # the member's next heartbeat at its epoch is accepted: no fencing, no rejoin
    answer = fresh.heartbeat(
        HeartbeatRequest(
            group_id=GROUP,
            member_id="a",
            member_epoch=epoch,
            owned={"t": frozenset(a_parts)},
        )
    )
    assert answer.error == ErrorCode.none and answer.member_epoch == epoch
    assert answer.records == ()  # nothing changed, nothing written


def test_a_group_in_the_middle_of_a_revocation_replays_to_the_same_state() -> None:
    h = Persisted()
    a = h.join("a")
    h.beat("a", a.member_epoch, {"t": parts(a)})
    h.join("b")  # a must now give up half of its partitions
    h.beat("a", a.member_epoch, {"t": parts(a)})
    assert h.group.members["a"].state is MemberState.UNREVOKED_PARTITIONS
    fresh = h.restarted()
    assert _state(fresh) == _state(h.coordinator)
    assert fresh.groups[GROUP].members["a"].pending_revocation
    # its owner table came back too: b waits for a's partitions (unreleased), as before
    revoking = min(h.group.members["a"].pending_revocation["t"])
    assert fresh.groups[GROUP].owner_epoch("t", revoking) >= 0


def test_a_static_member_on_a_temporary_leave_keeps_its_partitions_after_replay() -> None:
    h = Persisted()
    s = h.join("s1", instance_id="i1")
    h.beat("s1", s.member_epoch, {"t": parts(s)}, instance_id="i1")
    h.keep(
        h.coordinator.heartbeat(
            HeartbeatRequest(group_id=GROUP, member_id="s1", member_epoch=-2, instance_id="i1")
        )
    )
    fresh = h.restarted()
    assert _state(fresh) == _state(h.coordinator)
    back = fresh.heartbeat(
        HeartbeatRequest(
            group_id=GROUP,
            member_id="s2",
            member_epoch=0,
            instance_id="i1",
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=("t",),
            owned={},
        )
    )
    assert back.error == ErrorCode.none
    assert parts(back) == set(range(6))
    assert back.member_epoch == s.member_epoch  # the heir kept the epoch: no rebalance


def test_left_and_expired_members_and_a_deleted_group_stay_gone() -> None:
    h = Persisted()
    _stable_pair(h)
    h.keep(
        h.coordinator.heartbeat(HeartbeatRequest(group_id=GROUP, member_id="b", member_epoch=-1))
    )
    h.advance(h.config.session_timeout_ms + 1)  # a's session expires
    assert not h.group.members
    fresh = h.restarted()
    assert _state(fresh) == _state(h.coordinator)
    assert not fresh.groups[GROUP].members
    h.log.extend(h.coordinator.drop_if_empty(GROUP))  # DeleteGroups
    assert GROUP not in h.coordinator.groups
    assert GROUP not in h.restarted().groups


def test_a_failed_join_writes_nothing_and_leaves_no_group() -> None:
    h = Persisted(max_size=1)
    h.join("a")
    before = len(h.log)
    assert h.join("b").error == ErrorCode.group_max_size_reached
    assert len(h.log) == before
    bad = h.coordinator.heartbeat(
        HeartbeatRequest(
            group_id="other", member_id="x", member_epoch=0, rebalance_timeout_ms=1, owned={}
        )
    )
    assert bad.error == ErrorCode.invalid_request and bad.records == ()
    assert "other" not in h.coordinator.groups


def test_records_are_kafkas_key_types_and_version_0_values() -> None:
    h = Persisted()
    a = h.join("a", instance_id="i1")
    types = {int.from_bytes(r.key[:2], "big") for r in a.records}
    assert types == {3, 5, 6, 7, 8}
    assert all(r.value is not None and r.value[:2] == b"\x00\x00" for r in a.records)
    # byte for byte as Kafka's serde: int16 type, then the key's int16-length strings; the
    # value's int16 version 0, its fields (flexible), an empty tagged-field section
    by_type = {int.from_bytes(r.key[:2], "big"): r for r in a.records}
    assert by_type[5].key == b"\x00\x05\x00\x01g\x00\x01a"
    assert by_type[3].key == b"\x00\x03\x00\x01g"
    assert by_type[3].value == b"\x00\x00" + (1).to_bytes(4, "big") + b"\x00"
    assert (
        by_type[7].value
        == (
            b"\x00\x00\x02"
            + IDS["t"].bytes
            + b"\x07"
            + b"".join(p.to_bytes(4, "big") for p in range(6))
        )
        + b"\x00\x00"
    )
    # another record type (a classic group's) is not taken
    assert not h.coordinator.replay(b"\x00\x02\x00\x01g", None)
