"""OffsetCommit validation matrix, OffsetFetch, retention, Describe/List/DeleteGroups."""

from __future__ import annotations

import pytest

from streamrt.broker.group.rebalance import GroupConfig
from streamrt.broker.group.state import GroupState
from streamrt.errors import ErrorCode
from tests.broker.group.context import TEST_CONFIG, CoordinatorTestContext, Pending

E = ErrorCode


def _all(codes: dict[tuple[str, int], ErrorCode]) -> ErrorCode:
    assert len(set(codes.values())) == 1, codes
    return next(iter(codes.values()))


def test_commit_to_unknown_group() -> None:
    ctx = CoordinatorTestContext()
    assert _all(ctx.commit("g", "m", 3, version=8)) is E.illegal_generation
    assert _all(ctx.commit("g", "m", 3, version=9)) is E.group_id_not_found
    assert _all(ctx.commit("g", generation_id=-1)) is E.none  # simple group created
    assert ctx.coordinator.groups["g"].state is GroupState.EMPTY


@pytest.mark.parametrize(
    ("member", "instance", "generation", "expected"),
    [
        ("current", "i1", 1, E.none),
        ("current", None, 1, E.none),
        ("current", "i1", 5, E.illegal_generation),
        ("stale", "i1", 5, E.fenced_instance_id),  # instance check before generation
        ("current", "unknown", 1, E.unknown_member_id),
        ("stale", None, 1, E.unknown_member_id),
        ("", None, -1, E.unknown_member_id),  # non-Empty group needs a member
    ],
)
def test_commit_validation_matrix_in_stable(
    member: str, instance: str | None, generation: int, expected: ErrorCode
) -> None:
    ctx = CoordinatorTestContext()
    ids = ctx.join_stable_group(instances=("i1",))
    member_id = {"current": ids["i1"], "stale": "i1-old", "": ""}[member]
    assert _all(ctx.commit("g", member_id, generation, instance)) is expected


def test_commit_in_completing_rebalance_and_empty() -> None:
    ctx = CoordinatorTestContext()
    pending = ctx.join(instance_id="i1")
    ctx.sleep(3000)
    member_id = pending.response.member_id
    assert _all(ctx.commit("g", member_id, 1, "i1")) is E.rebalance_in_progress
    ctx.leave("g", [("", "i1")])
    assert ctx.coordinator.groups["g"].state is GroupState.EMPTY
    assert _all(ctx.commit("g", member_id, 1, "i1")) is E.unknown_member_id
    assert _all(ctx.commit("g", "anything", -1, "x")) is E.none  # admin commit to Empty


def test_commit_in_preparing_rebalance_restarts_session() -> None:
    ctx = CoordinatorTestContext()
    ids = ctx.join_stable_group(session_ms=10_000)
    group = ctx.coordinator.groups["g"]
    leader_instance = next(i for i, m in ids.items() if m == group.leader_id)
    follower_instance = next(i for i in ids if i != leader_instance)
    ctx.join(member_id=ids[leader_instance], instance_id=leader_instance)
    ctx.sleep(9_000)
    follower = ids[follower_instance]
    assert _all(ctx.commit("g", follower, 1, follower_instance)) is E.none
    ctx.sleep(9_000)  # without the commit, the session would have expired
    assert follower in group.members


def test_unknown_partition_and_large_metadata_are_per_partition() -> None:
    ctx = CoordinatorTestContext()
    ctx.known_partitions = {("t", 0)}
    codes = ctx.commit("g", offsets={("t", 0): 5, ("t", 7): 5, ("u", 0): 5})
    assert codes == {
        ("t", 0): E.none,
        ("t", 7): E.unknown_topic_or_partition,
        ("u", 0): E.unknown_topic_or_partition,
    }
    big = ctx.commit("g", offsets={("t", 0): 6}, metadata="x" * 4097)
    assert big == {("t", 0): E.offset_metadata_too_large}
    fetched = ctx.fetch("g", {"t": [0, 1]})
    rows = [(p.partition_index, p.committed_offset) for p in fetched.topics[0].partitions]
    assert rows == [(0, 5), (1, -1)]


def test_offset_fetch_all_topics_and_batched_groups() -> None:
    ctx = CoordinatorTestContext()
    ctx.commit("g", offsets={("a", 0): 1, ("b", 2): 3})
    everything = ctx.fetch("g", None)
    assert [(t.name, [p.committed_offset for p in t.partitions]) for t in everything.topics] == [
        ("a", [1]),
        ("b", [3]),
    ]
    request = ctx.request(
        9,
        8,
        groups=[{"group_id": "g", "topics": None}, {"group_id": "x", "topics": None}],
        require_stable=False,
    )
    pending = Pending()
    ctx.apply(ctx.coordinator.offset_fetch(ctx.ctx(9, 8), request), pending)
    assert [len(g.topics) for g in pending.response.groups] == [2, 0]


def test_offsets_retention_for_empty_groups() -> None:
    config = GroupConfig(
        min_session_timeout_ms=10,
        max_session_timeout_ms=600_000,
        initial_rebalance_delay_ms=3000,
        offsets_retention_ms=60_000,
        offsets_retention_check_interval_ms=10_000,
    )
    ctx = CoordinatorTestContext(config)
    ctx.apply(ctx.coordinator.on_loaded())
    ids = ctx.join_stable_group(instances=("i1",))
    assert _all(ctx.commit("g", ids["i1"], 1, "i1")) is E.none
    for _ in range(20):  # an active group keeps its offsets past the retention
        ctx.sleep(5_000)
        assert ctx.heartbeat("g", ids["i1"], 1, "i1") is E.none
    assert ctx.fetch("g", {"t": [0]}).topics[0].partitions[0].committed_offset == 1
    ctx.sleep(10_000)  # the session expires: the group becomes Empty
    assert ctx.coordinator.groups["g"].state is GroupState.EMPTY
    ctx.sleep(50_000)
    assert ctx.fetch("g", {"t": [0]}).topics[0].partitions[0].committed_offset == 1
    ctx.sleep(20_000)
    assert ctx.fetch("g", {"t": [0]}).topics[0].partitions[0].committed_offset == -1
    assert "g" not in ctx.coordinator.groups


def test_describe_list_and_delete(context: CoordinatorTestContext) -> None:
    unknown = context.describe("nope")
    assert (unknown.error_code, unknown.group_state, unknown.members) == (E.none, "Dead", ())
    ids = context.join_stable_group(instances=("i1",))
    described = context.describe("g")
    assert (described.group_state, described.protocol_type, described.protocol_data) == (
        "Stable",
        "consumer",
        "range",
    )
    assert described.members[0].group_instance_id == "i1"
    old = context.describe("g", version=3)
    assert not hasattr(old.members[0], "group_instance_id")
    context.commit("other", offsets={("t", 0): 1})

    def list_groups(states: list[str]) -> list[tuple[str, str]]:
        request = context.request(16, 5, states_filter=states, types_filter=[])
        pending = Pending()
        context.apply(context.coordinator.list_groups(context.ctx(16, 5), request), pending)
        return [(g.group_id, g.group_state) for g in pending.response.groups]

    assert list_groups([]) == [("g", "Stable"), ("other", "Empty")]
    assert list_groups(["stable"]) == [("g", "Stable")]

    def delete(*names: str) -> list[ErrorCode]:
        request = context.request(42, 2, groups_names=list(names))
        pending = Pending()
        context.apply(context.coordinator.delete_groups(context.ctx(42, 2), request), pending)
        return [ErrorCode(r.error_code) for r in pending.response.results]

    assert delete("g", "other", "missing") == [E.non_empty_group, E.none, E.group_id_not_found]
    assert "other" not in context.coordinator.groups
    assert context.fetch("other", {"t": [0]}).topics[0].partitions[0].committed_offset == -1
    assert ids["i1"] in context.coordinator.groups["g"].members


def test_test_config_is_kafkas_java_test_config() -> None:
    assert TEST_CONFIG.min_session_timeout_ms == 10
    assert TEST_CONFIG.max_session_timeout_ms == 600_000
