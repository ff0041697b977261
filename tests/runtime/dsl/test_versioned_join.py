"""Versioned tables (KIP-914) and the stream-table join with a grace period (KIP-923/960),
through the public DSL and the test driver; build-time errors."""

from __future__ import annotations

from typing import Any

import pytest

from streamrt.errors import ConfigError
from streamrt.runtime import App
from streamrt.runtime.dsl import JoinWindows
from streamrt.runtime.graph.materialized import Materialized
from streamrt.runtime.processors.grace_buffer import BufferedRecord, GraceBuffer
from streamrt.serde import StrSerde
from streamrt.state import InMemoryStore
from streamrt.testing import TopologyTestDriver


def pair(left: Any, right: Any) -> str:
    return f"{left}+{right}"


def join_app(grace: int | None, history: int = 100, in_memory: bool = True) -> App:
    a = App({"application.id": "vj"})
    table = a.table(
        "users",
        key_serde="str",
        value_serde="str",
        store=Materialized.as_versioned("users-v", history, in_memory=in_memory),
    )
    stream = a.stream("clicks", key_serde="str", value_serde="str")
    stream.left_join(table, pair, grace=grace).to("out", key_serde="str", value_serde="str")
    return a


@pytest.mark.parametrize("in_memory", [True, False])
def test_a_versioned_table_is_joined_as_of_the_stream_record(in_memory: bool) -> None:
    with TopologyTestDriver(join_app(None, in_memory=in_memory)) as d:
        users = d.create_input_topic("users", "str", "str")
        clicks = d.create_input_topic("clicks", "str", "str")
        out = d.create_output_topic("out", "str", "str")
        users.pipe_input("u", "v1", timestamp=1)
        users.pipe_input("u", "v3", timestamp=10)
        users.pipe_input("u", "v2", timestamp=5)  # out of order: a version in between
        clicks.pipe_input("u", "c0", timestamp=0)
        clicks.pipe_input("u", "c1", timestamp=4)
        clicks.pipe_input("u", "c2", timestamp=7)
        clicks.pipe_input("u", "c3", timestamp=20)
        assert out.read_key_values_to_list() == [
            ("u", "c0+None"),
            ("u", "c1+v1"),
            ("u", "c2+v2"),
            ("u", "c3+v3"),
        ]
        store = d.get_state_store("users-v")
        assert store.get("u") == "v3"
        assert store.get_as_of("u", 6).value == "v2"


def test_grace_holds_stream_records_until_late_table_updates_are_in() -> None:
    with TopologyTestDriver(join_app(grace=10)) as d:
        users = d.create_input_topic("users", "str", "str")
        clicks = d.create_input_topic("clicks", "str", "str")
        out = d.create_output_topic("out", "str", "str")
        clicks.pipe_input("u", "c1", timestamp=5, headers=[("h", b"1")])
        clicks.pipe_input("w", "w1", timestamp=5)
        users.pipe_input("u", "late", timestamp=3)  # arrives after the click it belongs to
        assert out.read_records_to_list() == []
        clicks.pipe_input("u", "c2", timestamp=14)  # stream time 14: nothing due before 4
        assert out.read_records_to_list() == []
        clicks.pipe_input("u", "c3", timestamp=15)  # due: both records at 5, by key
        records = out.read_records_to_list()
        assert [(r.key, r.value, r.timestamp, r.headers) for r in records] == [
            ("u", "c1+late", 5, (("h", b"1"),)),
            ("w", "w1+None", 5, ()),
        ]
        clicks.pipe_input("u", "c0", timestamp=1)  # later than the grace: joined at once
        assert out.read_key_values_to_list() == [("u", "c0+None")]


def test_a_table_update_beyond_the_history_is_dropped() -> None:
    a = App({"application.id": "vt"})
    a.table("t", key_serde="str", value_serde="str", versioned_history_ms=5).to_stream().to(
        "out", key_serde="str", value_serde="str"
    )
    with TopologyTestDriver(a) as d:
        t = d.create_input_topic("t", "str", "str")
        out = d.create_output_topic("out", "str", "str")
        t.pipe_input("k", "new", timestamp=10)
        t.pipe_input("k", "old", timestamp=4)  # 10 - 5 > 4: beyond the history
        t.pipe_input("k", "ok", timestamp=5)
        assert out.read_key_values_to_list() == [("k", "new"), ("k", "ok")]
        assert d.get_state_store("t-table").get("k") == "new"


def test_grace_needs_a_versioned_table_and_fits_its_history() -> None:
    a = App({"application.id": "e"})
    plain = a.table("plain", key_serde="str", value_serde="str")
    stream = a.stream("s", key_serde="str", value_serde="str")
    with pytest.raises(ConfigError, match="versioned table"):
        stream.join(plain, pair, grace=5)
    short = a.table("short", key_serde="str", value_serde="str", versioned_history_ms=3)
    with pytest.raises(ConfigError, match="history retention"):
        stream.join(short, pair, grace=5)
    with pytest.raises(ConfigError, match="grace="):
        stream.join(stream, pair, windows=JoinWindows.of_time_difference_with_no_grace(5), grace=1)
    with pytest.raises(ValueError, match="history retention"):
        Materialized.as_versioned("x", -1)


def test_grace_buffer_restored_after_init_keeps_held_records_and_their_order() -> None:
    store = InMemoryStore("buffer")
    store.open()
    # ``again`` is made (processor init) before the store is restored (``first`` writes it)
    again = GraceBuffer(store, StrSerde(), StrSerde())  # type: ignore[arg-type]
    first = GraceBuffer(store, StrSerde(), StrSerde())  # type: ignore[arg-type]
    first.put("k", "held", 5, (("h", b"1"),))
    again.put("k", "new", 5, ())  # same time and key: must not overwrite the held record
    again.put("a", "sooner", 4, ())
    out: list[BufferedRecord] = []
    again.evict_until(4, out.append)
    again.evict_until(5, out.append)
    assert [(r.key, r.value, r.timestamp, r.headers) for r in out] == [
        ("a", "sooner", 4, ()),
        ("k", "held", 5, (("h", b"1"),)),
        ("k", "new", 5, ()),
    ]
    assert list(store.items()) == []


def test_out_of_order_versions_reach_to_stream_but_not_joins_or_groupings() -> None:
    a = App({"application.id": "vl"})
    t = a.table("t", key_serde="str", value_serde="str", versioned_history_ms=100)
    u = a.table("u", key_serde="str", value_serde="str")
    t.to_stream().to("all", key_serde="str", value_serde="str")
    t.join(u, pair).to_stream().to("joined", key_serde="str", value_serde="str")
    grouped = t.group_by(lambda k, v: (v, k), key_serde="str", value_serde="str")
    grouped.count(store="c").to_stream().to("counts", key_serde="str", value_serde="int")
    with TopologyTestDriver(a) as d:
        d.create_input_topic("u", "str", "str").pipe_input("k", "U", timestamp=1)
        t_in = d.create_input_topic("t", "str", "str")
        t_in.pipe_input("k", "new", timestamp=10)
        t_in.pipe_input("k", "older", timestamp=5)  # stored as a version, not the latest
        assert d.create_output_topic("all", "str", "str").read_values_to_list() == [
            "new",
            "older",
        ]
        assert d.create_output_topic("joined", "str", "str").read_values_to_list() == ["new+U"]
        assert d.create_output_topic("counts", "str", "int").read_key_values_to_list() == [
            ("new", 1)
        ]
