"""TxnOffsetCommit rules (KIP-98, KIP-447): fencing by group metadata, pending until the marker."""

from __future__ import annotations

from typing import Any

from streamrt.errors import ErrorCode
from tests.broker.group.context import CoordinatorTestContext, Pending, fetch_topic

PID, EPOCH = 7000, 0


def txn_commit(
    context: CoordinatorTestContext,
    group_id: str,
    member_id: str = "",
    generation_id: int = -1,
    instance_id: str | None = None,
    offsets: dict[tuple[str, int], int] | None = None,
    *,
    version: int = 3,
) -> dict[tuple[str, int], ErrorCode]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), offset in (offsets or {("t", 0): 10}).items():
        topics.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "committed_offset": offset,
                "committed_leader_epoch": -1,
                "committed_metadata": "",
            }
        )
    request = context.request(
        28,
        version,
        transactional_id="tx",
        group_id=group_id,
        producer_id=PID,
        producer_epoch=EPOCH,
        generation_id=generation_id,
        member_id=member_id,
        group_instance_id=instance_id,
        topics=[{"name": t, "partitions": ps} for t, ps in topics.items()],
    )
    pending = Pending()
    context.apply(context.coordinator.txn_offset_commit(context.ctx(28, version), request), pending)
    return {
        (t.name, p.partition_index): ErrorCode(p.error_code)
        for t in pending.response.topics
        for p in t.partitions
    }


def committed(context: CoordinatorTestContext, group_id: str = "g") -> int:
    (topic,) = context.fetch(group_id, {"t": [0]}).topics
    return int(topic.partitions[0].committed_offset)


def test_a_fenced_static_member_cannot_commit_transactionally(
    context: CoordinatorTestContext,
) -> None:
    ids = context.join_stable_group("g", ("i1", "i2"))
    generation = context.coordinator.groups["g"].generation_id
    # i1 restarts: its new incarnation replaces the old member id (no rebalance).
    rejoin = context.join("g", instance_id="i1")
    new_id = rejoin.response.member_id
    assert rejoin.error is ErrorCode.none and new_id != ids["i1"]
    stale = txn_commit(context, "g", ids["i1"], generation, "i1")
    assert stale == {("t", 0): ErrorCode.fenced_instance_id}
    assert context.coordinator.validate_txn_offset_commit("g", ids["i1"], "i1", generation) is (
        ErrorCode.fenced_instance_id
    )
    assert txn_commit(context, "g", new_id, generation, "i1") == {("t", 0): ErrorCode.none}


def test_generation_and_member_are_checked_from_v3(context: CoordinatorTestContext) -> None:
    ids = context.join_stable_group("g", ("i1",))
    generation = context.coordinator.groups["g"].generation_id
    assert txn_commit(context, "g", ids["i1"], generation - 1, "i1") == {
        ("t", 0): ErrorCode.illegal_generation
    }
    assert txn_commit(context, "g", "ghost", generation) == {("t", 0): ErrorCode.unknown_member_id}
    assert txn_commit(context, "unknown-group", "m", 3) == {("t", 0): ErrorCode.illegal_generation}
    # v0 carries no group metadata: accepted on a Stable group.
    assert txn_commit(context, "g", version=0) == {("t", 0): ErrorCode.none}


def test_current_generation_commits_during_a_rebalance(context: CoordinatorTestContext) -> None:
    ids = context.join_stable_group("g", ("i1", "i2"))
    generation = context.coordinator.groups["g"].generation_id
    context.leave("g", [(ids["i2"], "i2")])
    assert context.coordinator.groups["g"].state.value == "PreparingRebalance"
    assert txn_commit(context, "g", ids["i1"], generation, "i1") == {("t", 0): ErrorCode.none}


def test_offsets_stay_pending_until_commit_and_vanish_on_abort(
    context: CoordinatorTestContext,
) -> None:
    assert context.commit("g", offsets={("t", 0): 5})[("t", 0)] is ErrorCode.none
    assert txn_commit(context, "g", offsets={("t", 0): 10}) == {("t", 0): ErrorCode.none}
    assert committed(context) == 5  # invisible while the transaction is open
    assert context.coordinator.pending_txn_offsets.is_pending("g", "t", 0)
    context.coordinator.complete_txn(PID, commit=False)
    assert committed(context) == 5
    assert txn_commit(context, "g", offsets={("t", 0): 12}) == {("t", 0): ErrorCode.none}
    context.coordinator.complete_txn(PID, commit=True)
    assert committed(context) == 12
    assert not context.coordinator.pending_txn_offsets.is_pending("g", "t", 0)


def test_require_stable_fetch_waits_for_the_transaction(context: CoordinatorTestContext) -> None:
    def fetch(require_stable: bool) -> tuple[int, ErrorCode]:
        request = context.request(
            9,
            7,
            group_id="g",
            topics=[fetch_topic("t", [0], 7)],
            require_stable=require_stable,
        )
        pending = Pending()
        context.apply(context.coordinator.offset_fetch(context.ctx(9, 7), request), pending)
        row = pending.response.topics[0].partitions[0]
        return int(row.committed_offset), ErrorCode(row.error_code)

    assert context.commit("g", offsets={("t", 0): 5})[("t", 0)] is ErrorCode.none
    assert txn_commit(context, "g", offsets={("t", 0): 10}) == {("t", 0): ErrorCode.none}
    assert fetch(require_stable=True) == (-1, ErrorCode.unstable_offset_commit)
    assert fetch(require_stable=False) == (5, ErrorCode.none)
    context.coordinator.complete_txn(PID, commit=True)
    assert fetch(require_stable=True) == (10, ErrorCode.none)
