"""The server assignors: balance, stickiness (a member keeps what it has when others join or
leave), range's contiguous per-topic split, heterogeneous subscriptions."""

from __future__ import annotations

from streamrt.broker.consumer_group.assignors import MemberSpec, range_assign, uniform_assign


def _count(assignment: dict[str, dict[str, frozenset[int]]], member: str) -> int:
    return sum(len(p) for p in assignment[member].values())


def test_uniform_spreads_evenly_and_covers_every_partition() -> None:
    members = {m: MemberSpec(frozenset({"a", "b"})) for m in ("m1", "m2", "m3")}
    out = uniform_assign(members, {"a": 4, "b": 3})
    assert sorted(_count(out, m) for m in members) == [2, 2, 3]
    every = [(t, p) for a in out.values() for t, ps in a.items() for p in ps]
    assert sorted(every) == [("a", p) for p in range(4)] + [("b", p) for p in range(3)]


def test_uniform_is_sticky_when_a_member_joins() -> None:
    before = uniform_assign({"m1": MemberSpec(frozenset({"t"}))}, {"t": 6})
    assert before["m1"] == {"t": frozenset(range(6))}
    two = {
        "m1": MemberSpec(frozenset({"t"}), before["m1"]),
        "m2": MemberSpec(frozenset({"t"})),
    }
    after = uniform_assign(two, {"t": 6})
    assert len(after["m1"]["t"]) == 3 and after["m1"]["t"] <= before["m1"]["t"]
    three = {
        "m1": MemberSpec(frozenset({"t"}), after["m1"]),
        "m2": MemberSpec(frozenset({"t"}), after["m2"]),
        "m3": MemberSpec(frozenset({"t"})),
    }
    final = uniform_assign(three, {"t": 6})
    # nobody gains a partition another still-present member keeps; each gives up one
    assert final["m1"]["t"] <= after["m1"]["t"] and final["m2"]["t"] <= after["m2"]["t"]
    assert [len(final[m]["t"]) for m in ("m1", "m2", "m3")] == [2, 2, 2]


def test_uniform_keeps_survivors_partitions_when_a_member_leaves() -> None:
    current = {"m1": {"t": frozenset({0, 1})}, "m2": {"t": frozenset({2, 3})}}
    out = uniform_assign({"m1": MemberSpec(frozenset({"t"}), current["m1"])}, {"t": 4})
    assert out["m1"]["t"] == frozenset(range(4))
    out = uniform_assign(
        {
            "m1": MemberSpec(frozenset({"t"}), current["m1"]),
            "m2": MemberSpec(frozenset({"t"}), current["m2"]),
            "m3": MemberSpec(frozenset({"t"})),
        },
        {"t": 4},
    )
    assert out["m1"]["t"] <= current["m1"]["t"] and out["m2"]["t"] <= current["m2"]["t"]


def test_uniform_heterogeneous_subscriptions_only_assign_subscribed_topics() -> None:
    out = uniform_assign(
        {"m1": MemberSpec(frozenset({"a"})), "m2": MemberSpec(frozenset({"a", "b"}))},
        {"a": 2, "b": 2},
    )
    assert set(out["m1"]) <= {"a"}
    assert out["m2"]["b"] == frozenset({0, 1})


def test_range_gives_contiguous_ranges_per_topic() -> None:
    members = {m: MemberSpec(frozenset({"a", "b"})) for m in ("m1", "m2")}
    out = range_assign(members, {"a": 5, "b": 2})
    assert out["m1"] == {"a": frozenset({0, 1, 2}), "b": frozenset({0})}
    assert out["m2"] == {"a": frozenset({3, 4}), "b": frozenset({1})}
