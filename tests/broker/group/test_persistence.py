"""Records serde, replay into a fresh coordinator, load-time timers, and the purity rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamrt.broker.group import records as rec
from streamrt.broker.group.state import GroupState
from streamrt.errors import ErrorCode
from tests.broker.group.context import CoordinatorTestContext
from tests.source_scan import imports

_MEMBER = rec.MemberMetadata("m-1", "i1", "client", "/127.0.0.1", 30_000, 10_000, b"sub", b"asg")
_GROUP = rec.GroupMetadataValue("consumer", 4, "range", "m-1", 1234, (_MEMBER,))


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_group_metadata_value_round_trips_every_version(version: int) -> None:
    raw = rec.encode_group_metadata_value(_GROUP, version)
    decoded = rec.decode_value(rec.GroupMetadataKey("g"), raw)
    assert isinstance(decoded, rec.GroupMetadataValue)
    m = decoded.members[0]
    assert (decoded.generation, decoded.protocol, decoded.leader, m.assignment) == (
        4,
        "range",
        "m-1",
        b"asg",
    )
    assert m.group_instance_id == ("i1" if version >= 3 else None)
    assert m.rebalance_timeout == (30_000 if version >= 1 else -1)
    assert decoded.current_state_timestamp == (1234 if version >= 2 else -1)


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_offset_commit_value_round_trips_every_version(version: int) -> None:
    value = rec.OffsetCommitValue(42, 7, "meta", 1000, 5000)
    decoded = rec.decode_value(
        rec.OffsetCommitKey("g", "t", 0), rec.encode_offset_commit_value(value, version)
    )
    assert isinstance(decoded, rec.OffsetCommitValue)
    assert (decoded.offset, decoded.metadata, decoded.commit_timestamp) == (42, "meta", 1000)
    assert decoded.leader_epoch == (7 if version >= 3 else -1)
    assert decoded.expire_timestamp == (5000 if version == 1 else -1)


def test_record_keys_and_written_versions() -> None:
    group = rec.group_metadata_record("g", _GROUP)
    assert group.key == b"\x00\x02\x00\x01g"
    assert group.value is not None and group.value[:2] == b"\x00\x03"
    assert rec.decode_key(group.key) == rec.GroupMetadataKey("g")
    offset = rec.offset_commit_record("g", "t", 3, rec.OffsetCommitValue(1, -1, "", 0, -1))
    assert offset.value is not None and offset.value[:2] == b"\x00\x03"
    expiring = rec.offset_commit_record("g", "t", 3, rec.OffsetCommitValue(1, -1, "", 0, 9))
    assert expiring.value is not None and expiring.value[:2] == b"\x00\x01"
    assert rec.decode_key(offset.key) == rec.OffsetCommitKey("g", "t", 3)
    assert rec.group_tombstone("g").value is None
    assert rec.decode_key(b"\x00\x05\x00\x00") is None  # KIP-848 record types are skipped


def _replayed(source: CoordinatorTestContext) -> CoordinatorTestContext:
    fresh = CoordinatorTestContext(start_ms=source.clock.now_ms())
    for record in source.log:
        fresh.coordinator.replay(record)
    fresh.apply(fresh.coordinator.on_loaded())
    return fresh


def test_replay_rebuilds_the_same_groups_and_offsets(context: CoordinatorTestContext) -> None:
    ids = context.join_stable_group(instances=("i1", "i2", None), session_ms=60_000)
    context.commit("g", ids["i1"], 1, "i1", offsets={("t", 0): 10, ("t", 1): 11})
    # A static replacement in Stable is persisted without a rebalance.
    replaced = context.join(instance_id="i2", session_ms=60_000)
    assert replaced.error is ErrorCode.none
    context.commit("simple", offsets={("t", 0): 3})
    fresh = _replayed(context)
    assert fresh.describe("g") == context.describe("g")
    assert fresh.describe("simple") == context.describe("simple")
    assert fresh.fetch("g", None) == context.fetch("g", None)
    group = fresh.coordinator.groups["g"]
    assert group.static_members == context.coordinator.groups["g"].static_members
    assert group.leader_id == context.coordinator.groups["g"].leader_id
    # Only the selected protocol survives a reload.
    other = fresh.join(member_id=ids["i1"], instance_id="i1", protocols=(("roundrobin", b"x"),))
    assert other.error is ErrorCode.inconsistent_group_protocol


def test_in_flight_rebalance_is_lost_on_failover(context: CoordinatorTestContext) -> None:
    ids = context.join_stable_group(session_ms=60_000)
    leader_instance = next(
        i for i, m in ids.items() if m == context.coordinator.groups["g"].leader_id
    )
    context.join(member_id=ids[leader_instance], instance_id=leader_instance)
    context.sleep(10_000)  # generation 2 is in CompletingRebalance, not persisted
    assert context.coordinator.groups["g"].generation_id == 2
    fresh = _replayed(context)
    group = fresh.coordinator.groups["g"]
    assert (group.state, group.generation_id) == (GroupState.STABLE, 1)
    assert fresh.heartbeat("g", ids[leader_instance], 2, leader_instance) is (
        ErrorCode.illegal_generation
    )


def test_load_restarts_session_timers(context: CoordinatorTestContext) -> None:
    ids = context.join_stable_group(session_ms=10_000)
    context.sleep(5_000)
    fresh = _replayed(context)
    group = fresh.coordinator.groups["g"]
    fresh.sleep(9_999)  # sessions were restarted at load time, not at the last heartbeat
    assert fresh.heartbeat("g", ids["i1"], 1, "i1") is ErrorCode.none
    fresh.sleep(1)
    assert ids["i2"] not in group.members
    assert ids["i1"] in group.members


def test_load_over_max_size_rebalances(context: CoordinatorTestContext) -> None:
    context.join_stable_group(instances=("i1", "i2", "i3"))
    import dataclasses

    fresh = CoordinatorTestContext(dataclasses.replace(context.config, max_size=2))
    for record in context.log:
        fresh.coordinator.replay(record)
    fresh.apply(fresh.coordinator.on_loaded())
    assert fresh.coordinator.groups["g"].state is GroupState.PREPARING_REBALANCE


_CORE = (
    "state.py",
    "group.py",
    "coordinator.py",
    "rebalance.py",
    "offsets.py",
    "records.py",
    "timer.py",
    "../coordination/result.py",
    "../coordination/record_writer.py",
    "outbox.py",
    "admin.py",
    "../../wire/group_responses.py",  # the response builders the coordinator returns
)


@pytest.mark.parametrize("name", _CORE)
def test_core_modules_do_no_io(name: str) -> None:
    path = Path(rec.__file__).parent / name
    imported = {name.split(".")[0] for name, _level in imports(path)}
    assert not imported & {"asyncio", "socket", "time", "threading"}, name
