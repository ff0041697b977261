"""Issue 38's operators through the public DSL and streamrt's TopologyTestDriver: ``to()``
with a topic-name extractor, ``KTable.to_stream(key_mapper)``, ``windowed_by`` on a cogrouped
stream, and the ``Joined``/``Repartitioned``/``Branched`` option objects (each also has a
differential scenario against Kafka Streams in tests/differential/scenarios/operators)."""

from __future__ import annotations

import io
from typing import Any

import pytest

from streamrt.errors import ConfigError
from streamrt.runtime import (
    App,
    Branched,
    Joined,
    Repartitioned,
    SessionWindows,
    SlidingWindows,
    TimeWindows,
    ValueMapperWithKey,
    Windowed,
)
from streamrt.runtime.exception_handlers import RecordFailedError
from streamrt.testing import TopologyTestDriver


def app() -> App:
    return App({"application.id": "ops"})


def test_to_with_a_topic_extractor_routes_each_record_and_sees_the_record_context() -> None:
    a = app()
    seen: list[tuple[str, int]] = []

    def by_key(key: str, _value: Any, context: Any) -> str:
        seen.append((context.topic, context.timestamp))
        return f"out-{key[0]}"

    a.stream("in", key_serde="str", value_serde="str").to(by_key)
    with TopologyTestDriver(a) as d:
        i = d.create_input_topic("in", "str", "str")
        i.pipe_input("a1", "x", timestamp=5)
        i.pipe_input("b1", "y", timestamp=6)
        assert d.create_output_topic("out-a", "str", "str").read_key_values_to_list() == [
            ("a1", "x")
        ]
        assert d.create_output_topic("out-b", "str", "str").read_key_values_to_list() == [
            ("b1", "y")
        ]
    assert seen == [("in", 5), ("in", 6)]


def test_a_topic_extractor_returning_no_topic_is_a_clear_error() -> None:
    a = app()
    a.stream("in", key_serde="str", value_serde="str").to(lambda _k, _v, _c: None)
    failed = r"production handler fail.*topic extractor of sink \S+ returned None"
    with TopologyTestDriver(a) as d, pytest.raises(RecordFailedError, match=failed):
        d.create_input_topic("in", "str", "str").pipe_input("k", "v")
    with pytest.raises(ConfigError, match="topic name or a topic extractor"):
        app().stream("in").to(42)  # type: ignore[arg-type]


def test_table_to_stream_with_a_key_mapper_rekeys_and_regroups() -> None:
    a = app()
    t = a.table("in", key_serde="str", value_serde="str")
    s = t.to_stream(lambda _k, v: v[0], key_serde="str")
    s.to("out", value_serde="str")
    s.group_by_key().count(store="by-first").to_stream().to("counts", value_serde="int")
    with TopologyTestDriver(a) as d:
        i = d.create_input_topic("in", "str", "str")
        for key, value in (("k1", "apple"), ("k2", "avocado"), ("k1", "banana")):
            i.pipe_input(key, value)
        assert d.create_output_topic("out", "str", "str").read_key_values_to_list() == [
            ("a", "apple"),
            ("a", "avocado"),
            ("b", "banana"),
        ]
        counts = d.create_output_topic("counts", "str", "int").read_key_values_to_list()
        assert counts == [("a", 1), ("a", 2), ("b", 1)]


def _cogrouped(a: App) -> Any:
    first = a.stream("in", key_serde="str", value_serde="str").group_by_key()
    second = a.stream("in2", key_serde="str", value_serde="str").group_by_key()
    concat = lambda _k, v, agg: agg + v  # noqa: E731
    return first.cogroup(concat).cogroup(second, concat)


def test_cogroup_windowed_by_time_windows_aggregates_both_streams_per_window() -> None:
    a = app()
    windows = TimeWindows.of_size_and_grace(10, 100)
    table = _cogrouped(a).windowed_by(windows).aggregate(str, store="cw")
    table.to_stream().map(lambda w, v: (f"{w.key}@{w.start}", v), key_serde="str").to("out")
    with TopologyTestDriver(a) as d:
        d.create_input_topic("in", "str", "str").pipe_input("k", "a", timestamp=1)
        d.create_input_topic("in2", "str", "str").pipe_input("k", "B", timestamp=2)
        d.create_input_topic("in", "str", "str").pipe_input("k", "c", timestamp=12)
        out = d.create_output_topic("out", "str", "str").read_key_values_to_list()
        assert out == [("k@0", "a"), ("k@0", "aB"), ("k@10", "c")]
        assert d.get_window_store("cw").fetch("k", 0, 20) == [(0, 10, "aB"), (10, 20, "c")]


def test_cogroup_windowed_by_sliding_and_session_windows() -> None:
    a = app()
    sliding = _cogrouped(a).windowed_by(SlidingWindows.of_time_difference_and_grace(5, 100))
    sliding.aggregate(str, store="sw").to_stream().foreach(lambda _k, _v: None)
    b = app()
    sessions = _cogrouped(b).windowed_by(SessionWindows.of_inactivity_gap_and_grace(5, 100))
    merged = sessions.aggregate(str, lambda _k, x, y: x + y, store="ss")
    out: list[tuple[Windowed, str]] = []
    merged.to_stream().foreach(lambda k, v: out.append((k, v)))
    with TopologyTestDriver(a) as d:
        d.create_input_topic("in", "str", "str").pipe_input("k", "a", timestamp=10)
        d.create_input_topic("in2", "str", "str").pipe_input("k", "B", timestamp=13)
        assert d.get_window_store("sw").fetch("k", 0, 20) == [
            (5, 10, "a"),
            (8, 13, "aB"),
            (11, 16, "B"),
        ]
    with TopologyTestDriver(b) as d:
        d.create_input_topic("in", "str", "str").pipe_input("k", "a", timestamp=1)
        d.create_input_topic("in", "str", "str").pipe_input("k", "c", timestamp=11)
        d.create_input_topic("in2", "str", "str").pipe_input("k", "B", timestamp=6)
    assert out[-1] == (Windowed("k", 1, 11), "acB")  # B bridged the sessions: merged, then added


def test_joined_names_the_repartition_and_carries_the_grace() -> None:
    a = app()
    users = a.table("users", key_serde="str", value_serde="str")
    clicks = a.stream("clicks", key_serde="str", value_serde="str").select_key(
        lambda _k, v: v, key_serde="str"
    )
    joined = Joined.with_("str", "str", "str").with_name("enrich")
    clicks.left_join(users, lambda c, u: f"{c}+{u}", joined=joined).to("out")
    assert "ops-enrich-left-repartition" in a.topology.repartition_topics("ops")
    with TopologyTestDriver(a) as d:
        d.create_input_topic("users", "str", "str").pipe_input("x", "X")
        d.create_input_topic("clicks", "str", "str").pipe_input("k", "x")
        assert d.create_output_topic("out", "str", "str").read_values_to_list() == ["x+X"]
    with pytest.raises(ConfigError, match="grace= is for a stream-table join"):
        s = app().stream("a")
        s.join(s, lambda x, y: x, joined=Joined.as_("j").with_grace_period(5))


def test_repartitioned_carries_name_partitions_and_serdes() -> None:
    a = app()
    r = Repartitioned.as_("by-value").with_number_of_partitions(3).with_key_serde("str")
    a.stream("in", key_serde="str", value_serde="str").select_key(lambda _k, v: v).repartition(
        r
    ).to("out")
    assert a.topology.nodes["by-value-repartition-source"].partitions == 3  # type: ignore[union-attr]
    with TopologyTestDriver(a) as d:
        d.create_input_topic("in", "str", "str").pipe_input("k", "v")
        assert d.create_output_topic("out", "str", "str").read_key_values_to_list() == [("v", "v")]


def test_split_branches_by_name_with_functions_and_consumers() -> None:
    a = app()
    consumed: list[Any] = []
    branches = (
        a.stream("in", key_serde="str", value_serde="str")
        .split(name="s-")
        .branch(lambda _k, v: v.startswith("a"), Branched.as_("a"))
        .branch(
            lambda _k, v: len(v) > 3,
            Branched.with_function(lambda ks: ks.map_values(str.upper), "long"),
        )
        .branch(lambda _k, v: v == "xy", Branched.with_consumer(consumed.append))
        .default_branch()
    )
    assert sorted(branches) == ["s-0", "s-a", "s-long"]  # the consumer's branch is left out
    assert len(consumed) == 1
    for name, stream in branches.items():
        stream.to(name)
    with TopologyTestDriver(a) as d:
        i = d.create_input_topic("in", "str", "str")
        for v in ("abc", "long!", "xy", "zz"):
            i.pipe_input("k", v)
        got = {t: d.create_output_topic(t, "str", "str").read_values_to_list() for t in branches}
    assert got == {"s-a": ["abc"], "s-long": ["LONG!"], "s-0": ["zz"]}


def test_a_closed_split_and_duplicate_branch_names_are_refused() -> None:
    split = app().stream("in").split(name="s-")
    split.branch(lambda _k, _v: True, Branched.as_("x"))
    with pytest.raises(ConfigError, match="two branches named 's-x'"):
        split.branch(lambda _k, _v: True, Branched.as_("x"))
    split.no_default_branch()
    with pytest.raises(ConfigError, match="already closed"):
        split.default_branch()


def test_map_values_and_flat_map_values_with_key_keep_the_key() -> None:
    a = app()
    s = a.stream("in", key_serde="str", value_serde="str")
    s.map_values(ValueMapperWithKey(lambda k, v: f"{k}:{v}")).to("mapped")
    s.flat_map_values(ValueMapperWithKey(lambda k, v: [k, v])).group_by_key().count(
        store="n"
    ).to_stream().to("counts", value_serde="int")
    assert a.topology.repartition_topics("ops") == []  # the key did not change
    with TopologyTestDriver(a) as d:
        d.create_input_topic("in", "str", "str").pipe_input("k", "v")
        assert d.create_output_topic("mapped", "str", "str").read_values_to_list() == ["k:v"]
        assert d.create_output_topic("counts", "str", "int").read_values_to_list() == [1, 2]


def test_print_writes_label_key_and_value() -> None:
    a = app()
    lines = io.StringIO()
    s = a.stream("in", key_serde="str", value_serde="str")
    s.print(label="seen", file=lines)
    s.print(mapper=lambda k, v: f"{k}={v}", file=lines, name="p2")
    with TopologyTestDriver(a) as d:
        d.create_input_topic("in", "str", "str").pipe_input("k", "v")
    assert lines.getvalue().splitlines() == ["[seen]: k, v", "[KSTREAM-SOURCE-0000000000]: k=v"]


def test_table_map_values_with_key_maps_updates_and_reads() -> None:
    a = app()
    t = a.table("t", key_serde="str", value_serde="str")
    mapped = t.map_values(ValueMapperWithKey(lambda k, v: f"{k}:{v}"))
    mapped.to_stream().to("changes")
    a.stream("s", key_serde="str", value_serde="str").join(mapped, lambda s, m: f"{s}+{m}").to(
        "joined"
    )
    with TopologyTestDriver(a) as d:
        d.create_input_topic("t", "str", "str").pipe_input("k", "v")
        d.create_input_topic("s", "str", "str").pipe_input("k", "x")  # read through the getter
        assert d.create_output_topic("changes", "str", "str").read_values_to_list() == ["k:v"]
        assert d.create_output_topic("joined", "str", "str").read_values_to_list() == ["x+k:v"]


def test_foreign_key_join_with_a_key_aware_extractor() -> None:
    a = app()
    orders = a.table("orders", key_serde="str", value_serde="str")
    products = a.table("products", key_serde="str", value_serde="str")
    # KIP-1104: the foreign key from the order's key and value ("o1" + "p" -> "p1")
    fk = ValueMapperWithKey(lambda k, v: v + k[-1])
    orders.join(products, lambda o, p: f"{o}/{p}", foreign_key=fk).to_stream().to("out")
    with TopologyTestDriver(a) as d:
        d.create_input_topic("products", "str", "str").pipe_input("p1", "pen")
        d.create_input_topic("orders", "str", "str").pipe_input("o1", "p")
        assert d.create_output_topic("out", "str", "str").read_key_values_to_list() == [
            ("o1", "p/pen")
        ]
