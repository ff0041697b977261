"""Issue 38 item 4: one spelling on every operator (``store=`` a name or a ``Materialized``,
``name=``, durations as ms or ``timedelta``), and each removed spelling fails with a message
that names its replacement."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from streamrt.runtime import (
    App,
    JoinWindows,
    Materialized,
    SessionWindows,
    TimeWindows,
)
from streamrt.testing import TopologyTestDriver


def grouped() -> Any:
    return App({"application.id": "one"}).stream("in", key_serde="str", value_serde="int")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: grouped().group_by_key().count("c"), r"count\(\).*pass store="),
        (lambda: grouped().group_by_key().reduce(max, "r"), r"reduce\(\).*pass store="),
        (
            lambda: grouped().group_by_key().aggregate(int, max, "a"),
            r"aggregate\(\).*pass store=",
        ),
        (lambda: grouped().to_table("t"), r"to_table\(\).*pass store="),
        (
            lambda: grouped().group_by_key().cogroup(max).aggregate(int, "c"),
            r"CogroupedKStream.aggregate\(\).*pass store=",
        ),
        (
            lambda: (
                grouped()
                .group_by_key()
                .windowed_by(TimeWindows.of_size_with_no_grace(5))
                .count("w")
            ),
            r"count\(\).*pass store=",
        ),
        (lambda: grouped().filter(bool, named="f"), r"named= \(use name=\)"),
        (lambda: grouped().map_values(abs, named="m"), r"named= \(use name=\)"),
        (lambda: grouped().process(object, stores=("s",)), r"stores= \(use positional"),
        (lambda: grouped().group_by_key().windowed_by(size_ms=10), r"size_ms= \(use windows="),
        (lambda: grouped().split(bool), r"split\(\).*branch\(predicate\)"),
        (lambda: grouped().repartition(4), r"Repartitioned or partitions="),
        (
            lambda: App({"application.id": "one"}).table("t", materialized="s"),
            r"materialized= \(use store=\)",
        ),
        (
            lambda: App({"application.id": "one"}).table("t").filter(bool, materialized="s"),
            r"materialized= \(use store=\)",
        ),
        (
            lambda: (
                App({"application.id": "one"})
                .table("t")
                .group_by(lambda k, v: (k, v))
                .count(materialized="s")
            ),
            r"materialized= \(use store=\)",
        ),
    ],
)
def test_a_removed_spelling_names_its_replacement(call: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        call()


def test_store_takes_a_name_or_a_materialized_and_name_names_the_processor() -> None:
    a = App({"application.id": "one"})
    s = a.stream("in", key_serde="str", value_serde="int")
    s.group_by_key().count(store="by-name", name="counter")
    s.group_by_key().aggregate(int, lambda _k, v, agg: agg + v, store=Materialized.as_("sum"))
    s.flat_map(lambda k, v: [(k, v)], name="fm").foreach(lambda _k, _v: None, name="each")
    s.merge(s, name="both").process_values(_Keep, name="keep")
    t = a.table("t", key_serde="str", value_serde="str")
    t.filter(lambda _k, v: bool(v), name="tf").map_values(str.upper, name="tm")
    s.to_table(name="tt")
    t.join(a.table("u", key_serde="str"), lambda x, y: x, name="tj")
    t.left_join(a.table("w", key_serde="str"), lambda x, y: x, foreign_key=str, name="fk")
    g = a.global_table("g", key_serde="str")
    s.join(g, lambda x, y: x, key_mapper=lambda k, _v: k, name="gj")
    nodes = a.topology.nodes
    s.group_by_key().cogroup(lambda _k, v, agg: agg + v).aggregate(int, name="cg")
    named = {"counter", "fm", "each", "both", "keep", "tf", "tm", "tt", "gj", "cg-cogroup-merge"}
    assert named <= set(nodes)
    assert any(n.startswith("tj") for n in nodes) and any(n.startswith("fk") for n in nodes)
    assert {"by-name", "sum"} <= set(a.topology.stores)
    with TopologyTestDriver(a) as d:
        d.create_input_topic("in", "str", "int").pipe_input("k", 3)
        d.create_input_topic("in", "str", "int").pipe_input("k", 4)
        assert d.get_key_value_store("sum").get("k") == 7  # the stream's int serde, as reduce


def test_aggregate_value_serde_defaults_to_the_streams_as_reduce() -> None:
    a = App({"application.id": "one"})
    table = (
        a.stream("in", key_serde="str", value_serde="str")
        .group_by_key()
        .aggregate(str, lambda _k, v, agg: agg + v, store="cat")
    )
    assert table.node.value_serde is a.topology.nodes["KSTREAM-SOURCE-0000000000"].value_serde  # type: ignore[union-attr]


def test_durations_take_ms_or_a_timedelta_everywhere() -> None:
    by_td = JoinWindows.of_time_difference_and_grace(timedelta(seconds=1), timedelta(seconds=2))
    assert by_td == JoinWindows.of_time_difference_and_grace(1_000, 2_000)
    assert by_td.before(timedelta(milliseconds=5)).before_ms == 5
    assert (
        JoinWindows.of_time_difference_with_no_grace(10).grace(timedelta(seconds=1)).grace_ms
        == 1_000
    )
    assert (
        SessionWindows.of_inactivity_gap_and_grace(timedelta(seconds=1), 0).inactivity_gap_ms
        == 1_000
    )
    a = App({"application.id": "one"})
    table = a.table(
        "t", key_serde="str", value_serde="str", versioned_history_ms=timedelta(seconds=1)
    )
    a.stream("s", key_serde="str", value_serde="str").join(
        table, lambda x, y: x + y, grace=timedelta(milliseconds=50)
    ).to("out")
    assert a.topology.stores["t-table"].versioned_history_ms == 1_000  # type: ignore[attr-defined]


class _Keep:
    """A key-keeping processor: forwards what it gets."""

    def init(self, context: Any) -> None:
        self.context = context

    def process(self, key: Any, value: Any) -> None:
        self.context.forward(key, value)

    def close(self) -> None:
        pass
