"""Joins through the public DSL and the test driver, and their build/start-time errors."""

from __future__ import annotations

from typing import Any

import pytest

from streamrt.errors import ConfigError
from streamrt.runtime import App
from streamrt.runtime.dsl import JoinWindows
from streamrt.runtime.graph.copartition import (
    CopartitionError,
    repartition_counts,
    validate_copartitioning,
)
from streamrt.testing import TopologyTestDriver


def pair(left: Any, right: Any) -> str:
    return f"{left}+{right}"


# -- KStream-KTable --------------------------------------------------------------------------


@pytest.mark.parametrize("left", [False, True])
def test_stream_table_join_only_stream_records_emit(left: bool) -> None:
    a = App({"application.id": "j"})
    table = a.table("users", key_serde="str", value_serde="str")
    stream = a.stream("clicks", key_serde="str", value_serde="str")
    joined = stream.left_join(table, pair) if left else stream.join(table, pair)
    joined.to("out", key_serde="str", value_serde="str")
    with TopologyTestDriver(a) as d:
        users = d.create_input_topic("users", "str", "str")
        clicks = d.create_input_topic("clicks", "str", "str")
        out = d.create_output_topic("out", "str", "str")
        clicks.pipe_input("u1", "c0", timestamp=1)  # no user yet
        users.pipe_input("u1", "ann", timestamp=2)  # a table update emits nothing
        clicks.pipe_input("u1", "c1", timestamp=7, headers=[("h", b"1")])
        users.pipe_input("u1", None, timestamp=8)
        clicks.pipe_input("u1", "c2", timestamp=9)
        clicks.pipe_input("u1", None, timestamp=9)  # null value: dropped
        records = out.read_records_to_list()
    expected = [("u1", "c1+ann", 7)]
    if left:
        expected = [("u1", "c0+None", 1), ("u1", "c1+ann", 7), ("u1", "c2+None", 9)]
    assert [(r.key, r.value, r.timestamp) for r in records] == expected
    assert [r.headers for r in records if r.value == "c1+ann"] == [(("h", b"1"),)]


def test_stream_table_join_repartitions_a_rekeyed_stream() -> None:
    a = App({"application.id": "j"})
    table = a.table("users", key_serde="str", value_serde="str")
    a.stream("clicks", value_serde="json").select_key(
        lambda _k, v: v["user"], key_serde="str"
    ).join(table, lambda click, name: f"{name}:{click['page']}").to(
        "out", key_serde="str", value_serde="str"
    )
    repartition = a.topology.repartition_topics("j")
    assert len(repartition) == 1
    subs = a.topology.subtopologies("j")
    assert any(set(s.source_topics) == {"users", repartition[0]} for s in subs)
    with TopologyTestDriver(a) as d:
        d.create_input_topic("users", "str", "str").pipe_input("u7", "eve")
        d.create_input_topic("clicks", value_serde="json").pipe_input(
            None, {"user": "u7", "page": "/x"}
        )
        assert d.create_output_topic("out", "str", "str").read_key_values_to_list() == [
            ("u7", "eve:/x")
        ]


# -- KStream-KStream -------------------------------------------------------------------------


def stream_join_app(kind: str, windows: JoinWindows) -> App:
    a = App({"application.id": "ss"})
    left = a.stream("left", key_serde="str", value_serde="str")
    right = a.stream("right", key_serde="str", value_serde="str")
    joined = getattr(left, {"inner": "join", "left": "left_join", "outer": "outer_join"}[kind])(
        right, pair, windows=windows
    )
    joined.to("out", key_serde="str", value_serde="str")
    return a


def run(a: App, steps: list[tuple[str, str, str, int]]) -> list[tuple[str, str, int]]:
    with TopologyTestDriver(a) as d:
        topics = {t: d.create_input_topic(t, "str", "str") for t in ("left", "right")}
        for topic, key, value, ts in steps:
            topics[topic].pipe_input(key, value, timestamp=ts)
        out = d.create_output_topic("out", "str", "str").read_records_to_list()
    return [(r.key, r.value, r.timestamp) for r in out]


def test_inner_stream_join_matches_within_the_window_with_max_timestamp() -> None:
    w = JoinWindows.of_time_difference_with_no_grace(10)
    got = run(
        stream_join_app("inner", w),
        [
            ("left", "k", "L1", 100),
            ("right", "k", "R1", 105),  # within 10: joins, ts = 105
            ("right", "k", "R2", 111),  # 11 after L1: no
            ("left", "k", "L2", 112),  # joins R1 (105 >= 102) and R2
            ("right", "x", "R3", 112),  # other key
        ],
    )
    assert got == [("k", "L1+R1", 105), ("k", "L2+R1", 112), ("k", "L2+R2", 112)]


def test_asymmetric_windows_before_and_after() -> None:
    w = JoinWindows.of_time_difference_with_no_grace(0).after(10)  # right up to 10 ms later
    got = run(
        stream_join_app("inner", w),
        [("left", "k", "L", 100), ("right", "k", "early", 95), ("right", "k", "late", 110)],
    )
    assert got == [("k", "L+late", 110)]


def test_left_stream_join_emits_unmatched_when_the_window_closes() -> None:
    w = JoinWindows.of_time_difference_and_grace(10, 5)
    got = run(
        stream_join_app("left", w),
        [
            ("left", "a", "A", 100),  # waits: a partner may come until 110 (+5 grace)
            ("left", "b", "B", 101),
            ("right", "b", "RB", 104),  # B matched: never emitted as unmatched
            ("right", "z", "Z", 115),  # 100 + 10 + 5 = 115, not < 115: still open
            ("right", "z", "Z2", 116),  # A's window closed: A+None with A's timestamp
        ],
    )
    assert got == [("b", "B+RB", 104), ("a", "A+None", 100)]


def test_outer_stream_join_emits_both_sides_unmatched() -> None:
    w = JoinWindows.of_time_difference_with_no_grace(10)
    got = run(
        stream_join_app("outer", w),
        [
            ("left", "a", "A", 100),
            ("right", "b", "B", 102),
            ("left", "c", "C", 200),  # closes both windows
            ("right", "c", "RC", 201),
        ],
    )
    assert got == [("a", "A+None", 100), ("b", "None+B", 102), ("c", "C+RC", 201)]


def test_outer_join_out_of_order_record_emits_at_once() -> None:
    w = JoinWindows.of_time_difference_and_grace(10, 100)
    got = run(
        stream_join_app("left", w),
        [("left", "a", "A", 200), ("left", "b", "B", 50)],  # 50 + 10 < 200: no partner can come
    )
    assert got == [("b", "B+None", 50)]


def test_stream_join_records_expire_after_retention() -> None:
    w = JoinWindows.of_time_difference_and_grace(10, 0)
    got = run(
        stream_join_app("inner", w),
        # the left buffer's time moves to 1000: "old" is past its retention (10 ms)
        [("left", "k", "old", 0), ("left", "x", "tick", 1000), ("right", "k", "late", 5)],
    )
    assert got == []


def test_join_windows_are_validated_at_build_time() -> None:
    with pytest.raises(ConfigError, match="time difference"):
        JoinWindows.of_time_difference_with_no_grace(-1)
    with pytest.raises(ConfigError, match="grace"):
        JoinWindows.of_time_difference_and_grace(10, -1)
    with pytest.raises(ConfigError, match="before \\+ after"):
        JoinWindows.of_time_difference_with_no_grace(5).before(-10)
    a = App({"application.id": "j"})
    s = a.stream("l")
    with pytest.raises(ConfigError, match="windows"):
        s.join(a.stream("r"), pair)
    with pytest.raises(ConfigError, match="outer_join"):
        s.outer_join(a.table("t"), pair, windows=JoinWindows(1, 1))  # type: ignore[arg-type]


def test_stream_stream_join_repartitions_both_rekeyed_sides() -> None:
    a = App({"application.id": "ss"})
    left = a.stream("left", value_serde="str").select_key(lambda _k, v: v[0], key_serde="str")
    right = a.stream("right", value_serde="str").map(
        lambda _k, v: (v[0], v), key_serde="str", value_serde="str"
    )
    left.join(right, pair, windows=JoinWindows(5, 5), name="j").to(
        "out", key_serde="str", value_serde="str"
    )
    assert sorted(a.topology.repartition_topics("ss")) == [
        "ss-j-left-repartition",
        "ss-j-right-repartition",
    ]
    with TopologyTestDriver(a) as d:
        d.create_input_topic("left", value_serde="str").pipe_input(None, "apple", timestamp=1)
        d.create_input_topic("right", value_serde="str").pipe_input(None, "avocado", timestamp=2)
        assert d.create_output_topic("out", "str", "str").read_key_values_to_list() == [
            ("a", "apple+avocado")
        ]


# -- KTable-KTable ---------------------------------------------------------------------------


def table_join_app(kind: str) -> App:
    a = App({"application.id": "tt"})
    left = a.table("L", key_serde="str", value_serde="str")
    right = a.table("R", key_serde="str", value_serde="str")
    method = {"inner": "join", "left": "left_join", "outer": "outer_join"}[kind]
    getattr(left, method)(right, pair, store="joined").to_stream().to(
        "out", key_serde="str", value_serde="str"
    )
    return a


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("inner", [("k", "l1+r1"), ("k", "l2+r1"), ("k", None)]),
        ("left", [("k", "l1+None"), ("k", "l1+r1"), ("k", "l2+r1"), ("k", "l2+None"), ("k", None)]),
        (
            "outer",
            [
                ("k", "l1+None"),
                ("k", "l1+r1"),
                ("k", "l2+r1"),
                ("k", "l2+None"),
                ("k", None),
                ("k", "None+r2"),
            ],
        ),
    ],
)
def test_table_table_joins(kind: str, expected: list[tuple[str, Any]]) -> None:
    with TopologyTestDriver(table_join_app(kind)) as d:
        left = d.create_input_topic("L", "str", "str")
        right = d.create_input_topic("R", "str", "str")
        left.pipe_input("k", "l1")
        right.pipe_input("k", "r1")
        left.pipe_input("k", "l2")
        if kind == "inner":
            left.pipe_input("k", None)
        else:
            right.pipe_input("k", None)
            left.pipe_input("k", None)
        if kind == "outer":
            right.pipe_input("k", "r2")
        got = d.create_output_topic("out", "str", "str").read_key_values_to_list()
        store = dict(d.get_key_value_store("joined").items())
    assert got == expected
    assert store == ({"k": "None+r2"} if kind == "outer" else {})


# -- foreign key -----------------------------------------------------------------------------


@pytest.mark.parametrize("left", [False, True])
def test_foreign_key_join(left: bool) -> None:
    a = App({"application.id": "fk"})
    orders = a.table("orders", key_serde="str", value_serde="json")
    products = a.table("products", key_serde="str", value_serde="str")
    method = orders.left_join if left else orders.join
    method(
        products,
        lambda order, product: f"{order['qty']}x{product}",
        foreign_key=lambda order: order["product"],
        store="order-details",
        value_serde="str",
    ).to_stream().to("out", key_serde="str", value_serde="str")
    with TopologyTestDriver(a) as d:
        o = d.create_input_topic("orders", "str", "json")
        p = d.create_input_topic("products", "str", "str")
        out = d.create_output_topic("out", "str", "str")
        o.pipe_input("o1", {"product": "p1", "qty": 2})  # no product yet
        p.pipe_input("p1", "pen")  # fans out to subscribers
        o.pipe_input("o2", {"product": "p1", "qty": 5})
        p.pipe_input("p1", "blue pen")
        o.pipe_input("o1", {"product": "p2", "qty": 2})  # moves to a missing product
        p.pipe_input("p2", "ink")
        o.pipe_input("o2", None)  # deleted
        got = out.read_key_values_to_list()
        store = dict(d.get_key_value_store("order-details").items())
    head = [("o1", "2xNone")] if left else []
    moved = [("o1", "2xNone")] if left else [("o1", None)]
    assert got == [
        *head,
        ("o1", "2xpen"),
        ("o2", "5xpen"),
        ("o1", "2xblue pen"),
        ("o2", "5xblue pen"),
        *moved,
        ("o1", "2xink"),
        ("o2", None),
    ]
    assert store == {"o1": "2xink"}


# -- global table ----------------------------------------------------------------------------


@pytest.mark.parametrize("left", [False, True])
def test_stream_global_table_join_with_key_mapper(left: bool) -> None:
    a = App({"application.id": "g"})
    countries = a.global_table("countries", store="countries", key_serde="str", value_serde="str")
    stream = a.stream("visits", key_serde="str", value_serde="json")
    method = stream.left_join if left else stream.join
    method(countries, pair, key_mapper=lambda _k, v: v["cc"]).to(
        "out", key_serde="str", value_serde="str"
    )
    with TopologyTestDriver(a) as d:
        d.create_input_topic("countries", "str", "str").pipe_input("fr", "France")
        v = d.create_input_topic("visits", "str", "json")
        v.pipe_input("u1", {"cc": "fr"})
        v.pipe_input("u2", {"cc": "xx"})
        got = d.create_output_topic("out", "str", "str").read_key_values_to_list()
        assert d.get_key_value_store("countries").get("fr") == "France"
    expected = [("u1", "{'cc': 'fr'}+France")]
    if left:
        expected.append(("u2", "{'cc': 'xx'}+None"))
    assert got == expected
    with pytest.raises(ConfigError, match="key_mapper"):
        stream.join(countries, pair)


# -- co-partitioning -------------------------------------------------------------------------


def test_copartitioning_is_validated_with_topic_names_and_counts() -> None:
    a = App({"application.id": "cp"})
    table = a.table("users", key_serde="str")
    a.stream("clicks", key_serde="str").join(table, pair).to("out")
    subs = a.topology.subtopologies("cp")
    with pytest.raises(CopartitionError, match=r"clicks \(4 partitions\), users \(2 partitions\)"):
        validate_copartitioning(a.topology, "cp", {"clicks": 4, "users": 2})
    validate_copartitioning(a.topology, "cp", {"clicks": 3, "users": 3})
    assert repartition_counts(a.topology, "cp", subs, {"clicks": 3, "users": 3}) == {}


def test_repartition_topics_take_the_joined_tables_partition_count() -> None:
    a = App({"application.id": "cp"})
    table = a.table("users", key_serde="str")
    a.stream("clicks", value_serde="str").select_key(lambda _k, v: v, key_serde="str").join(
        table, pair, name="enrich"
    ).to("out")
    subs = a.topology.subtopologies("cp")
    counts = repartition_counts(a.topology, "cp", subs, {"clicks": 8, "users": 3})
    assert counts == {"cp-enrich-left-repartition": 3}
    validate_copartitioning(a.topology, "cp", {"clicks": 8, "users": 3, **counts})
    b = App({"application.id": "cp"})
    t2 = b.table("users", key_serde="str")
    b.stream("clicks").repartition(partitions=5, name="fixed").join(t2, pair).to("out")
    subs = b.topology.subtopologies("cp")
    counts = repartition_counts(b.topology, "cp", subs, {"clicks": 8, "users": 3})
    with pytest.raises(CopartitionError, match="cp-fixed-repartition \\(5 partitions\\)"):
        validate_copartitioning(b.topology, "cp", {"clicks": 8, "users": 3, **counts})
