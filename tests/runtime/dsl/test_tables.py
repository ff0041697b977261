"""KTable operations: filter, map_values, group_by + aggregate/reduce/count, materialization."""

from __future__ import annotations

from streamrt.runtime import App
from streamrt.runtime.dsl import Materialized
from streamrt.testing import TopologyTestDriver


def test_filter_forwards_tombstones_and_map_values_maps_both() -> None:
    a = App({"application.id": "t"})
    t = a.table("prices", key_serde="str", value_serde="int")
    cheap = t.filter(lambda _k, v: v < 100, store="cheap")
    cheap.to_stream().to("cheap-out", key_serde="str", value_serde="int")
    cheap.map_values(lambda v: v * 2, value_serde="int").to_stream().to(
        "doubled", key_serde="str", value_serde="int"
    )
    with TopologyTestDriver(a) as d:
        i = d.create_input_topic("prices", "str", "int")
        i.pipe_input("a", 50)
        i.pipe_input("a", 500)  # leaves the filter: a tombstone
        i.pipe_input("b", 700)  # fails: a tombstone too (no old values sent, as Kafka)
        i.pipe_input("c", 10)
        i.pipe_input("c", None)  # deleted
        out = d.create_output_topic("cheap-out", "str", "int").read_key_values_to_list()
        assert out == [("a", 50), ("a", None), ("b", None), ("c", 10), ("c", None)]
        doubled = d.create_output_topic("doubled", "str", "int").read_key_values_to_list()
        assert doubled == [("a", 100), ("a", None), ("b", None), ("c", 20), ("c", None)]
        i.pipe_input("d", 1)
        assert dict(d.get_key_value_store("cheap").items()) == {"d": 1}


def test_filter_not_and_unmaterialized_getter_used_by_a_join() -> None:
    a = App({"application.id": "t"})
    users = a.table("users", key_serde="str", value_serde="json")
    active = users.filter_not(lambda _k, u: u.get("banned", False)).map_values(
        lambda u: u["name"], value_serde="str"
    )
    a.stream("clicks", key_serde="str", value_serde="str").join(
        active, lambda click, name: f"{name}:{click}"
    ).to("out", key_serde="str", value_serde="str")
    with TopologyTestDriver(a) as d:
        u = d.create_input_topic("users", "str", "json")
        c = d.create_input_topic("clicks", "str", "str")
        u.pipe_input("1", {"name": "ann"})
        u.pipe_input("2", {"name": "bob", "banned": True})
        c.pipe_input("1", "home")
        c.pipe_input("2", "home")
        assert d.create_output_topic("out", "str", "str").read_key_values_to_list() == [
            ("1", "ann:home")
        ]


def test_group_by_aggregate_subtracts_old_values_from_old_groups() -> None:
    a = App({"application.id": "t"})
    users = a.table("users", key_serde="str", value_serde="json")
    per_region = users.group_by(
        lambda _k, u: (u["region"], u["age"]), key_serde="str", value_serde="int", name="regions"
    )
    per_region.aggregate(
        lambda: 0,
        lambda _k, age, total: total + age,
        lambda _k, age, total: total - age,
        store=Materialized.as_("age-sum"),
        value_serde="int",
    ).to_stream().to("sums", key_serde="str", value_serde="int")
    per_region.count(store="region-count")
    with TopologyTestDriver(a) as d:
        u = d.create_input_topic("users", "str", "json")
        u.pipe_input("ann", {"region": "eu", "age": 30})
        u.pipe_input("bob", {"region": "eu", "age": 40})
        u.pipe_input("ann", {"region": "us", "age": 31})  # moves: -30 from eu, +31 to us
        u.pipe_input("bob", {"region": "eu", "age": 41})  # same group: one update
        u.pipe_input("bob", None)  # deleted: subtracted
        out = d.create_output_topic("sums", "str", "int").read_key_values_to_list()
        assert out == [("eu", 30), ("eu", 70), ("eu", 40), ("us", 31), ("eu", 41), ("eu", 0)]
        assert dict(d.get_key_value_store("region-count").items()) == {"eu": 0, "us": 1}
        assert dict(d.get_key_value_store("age-sum").items()) == {"eu": 0, "us": 31}


def test_grouped_table_reduce() -> None:
    a = App({"application.id": "t"})
    a.table("scores", key_serde="str", value_serde="int").group_by(
        lambda k, v: (k[0], v), key_serde="str", value_serde="int"
    ).reduce(lambda agg, v: agg + v, lambda agg, v: agg - v, store="by-initial")
    with TopologyTestDriver(a) as d:
        s = d.create_input_topic("scores", "str", "int")
        s.pipe_input("ann", 3)
        s.pipe_input("abe", 4)
        s.pipe_input("ann", 10)
        assert d.get_key_value_store("by-initial").get("a") == 14
