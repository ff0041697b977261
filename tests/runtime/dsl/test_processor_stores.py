"""Processor-API stores as Kafka's (issue 38): declared with ``Stores``, connected with
``add_state_store``/``process(supplier, name)``, read with Kafka's bounds and order; and old
values sent where a re-grouping's subtractor needs them (windowed aggregations, suppress).

Through the test driver (the differential suite compares the same against Kafka Streams
4.3.1); the end-to-end test with the embedded broker is in test_processor_stores_broker.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from streamrt.errors import ConfigError
from streamrt.runtime import (
    BufferConfig,
    Processor,
    SessionWindows,
    Stores,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
    ValueAndTimestamp,
    Windowed,
)
from streamrt.runtime.processors.suppress import BufferedSerde
from streamrt.runtime.stores import StoreSpec
from streamrt.serde import serde_for
from streamrt.testing import TopologyTestDriver

KEYS = ["a", "b", "ba", "c", "d", "e"]


class PutAll(Processor):
    """Puts each record into the store ``kv`` and forwards nothing."""

    def process(self, key: Any, value: Any) -> None:
        self.context.get_store("kv").put(key, value)


def drive(builder: StreamsBuilder, config: dict[str, Any] | None = None) -> TopologyTestDriver:
    return TopologyTestDriver(builder, {"application.id": "procstores", **(config or {})})


def fill(driver: TopologyTestDriver, keys: list[str] = KEYS) -> None:
    source = driver.create_input_topic("in", "str", "json")
    for i, key in enumerate(keys):
        source.pipe_input(key, key.upper(), timestamp=i)


def test_range_includes_both_bounds_through_the_store_spec_path() -> None:
    """The path that existed before ``Stores``: ``range(from, to)`` lost ``to``. (The driver
    runs without a record cache; the cached store's range is checked on the broker.)"""
    b = StreamsBuilder()
    b.topology.add_store(StoreSpec("kv", serde_for("str"), serde_for("json")))
    b.stream("in", key_serde="str", value_serde="json").process(PutAll, "kv")
    with drive(b) as d:
        fill(d)
        kv = d.get_key_value_store("kv")
        assert [k for k, _ in kv.range("b", "d")] == ["b", "ba", "c", "d"]
        assert [k for k, _ in kv.range(None, "b")] == ["a", "b"]
        assert [k for k, _ in kv.range("d", None)] == ["d", "e"]
        assert list(kv.range("d", "b")) == []  # from > to: nothing, as Kafka (no error)
        assert [k for k, _ in kv.reverse_range("b", "d")] == ["d", "c", "ba", "b"]
        assert [k for k, _ in kv.prefix_scan("b")] == ["b", "ba"]
        assert [k for k, _ in kv.reverse_all()] == KEYS[::-1]


def test_writes_answer_as_kafkas_delete_put_if_absent_put_all() -> None:
    """Ported code reads these answers: ``delete`` returns the old value (it returned None),
    ``put_if_absent`` the existing one."""
    b = StreamsBuilder()
    b.topology.add_store(StoreSpec("kv", serde_for("str"), serde_for("json")))
    b.stream("in", key_serde="str", value_serde="json").process(PutAll, "kv")
    with drive(b) as d:
        fill(d, ["a", "b"])
        kv = d.get_key_value_store("kv")
        assert kv.delete("a") == "A"
        assert kv.delete("a") is None
        assert kv.put_if_absent("b", "new") == "B" and kv.get("b") == "B"
        assert kv.put_if_absent("c", "C") is None and kv.get("c") == "C"
        kv.put_all([("d", "D"), ("e", "E")])
        assert [k for k, _ in kv.all()] == ["b", "c", "d", "e"]
        assert kv.approximate_num_entries() == 4


def test_stores_builders_and_add_state_store_connect_a_processor() -> None:
    """``Stores`` suppliers and builders, ``StreamsBuilder.add_state_store`` +
    ``process(supplier, name)`` and ``Topology.add_state_store(builder, processor)``."""

    class Writer(Processor):
        def process(self, key: Any, value: Any) -> None:
            ts = self.context.timestamp
            self.context.get_store("tkv").put(key, ValueAndTimestamp(value, ts + 100))
            self.context.get_store("win").put(key, value, ts)  # window start = ts
            self.context.get_store("ses").put(Windowed(key, ts, ts), value)  # Kafka's put
            self.context.get_store("ver").put(key, value, ts)

    b = StreamsBuilder()
    b.add_state_store(
        Stores.timestamped_key_value_store_builder(
            Stores.in_memory_key_value_store("tkv"), "str", "json"
        ).with_caching_enabled()
    )
    b.add_state_store(
        Stores.window_store_builder(Stores.in_memory_window_store("win", 1000, 10), "str", "json")
    )
    b.add_state_store(
        Stores.session_store_builder(Stores.persistent_session_store("ses", 1000), "str", "json")
    )
    b.add_state_store(
        Stores.versioned_key_value_store_builder(
            Stores.persistent_versioned_key_value_store("ver", 1000), "str", "json"
        )
    )
    stream = b.stream("in", key_serde="str", value_serde="json")
    stream.process(Writer, "tkv", "win", "ses", "ver")
    with drive(b, {"statestore.cache.max.bytes": 1 << 20}) as d:
        src = d.create_input_topic("in", "str", "json")
        src.pipe_input("a", "x", timestamp=5)
        src.pipe_input("a", "y", timestamp=20)
        assert d.get_state_store("tkv").get_with_timestamp("a") == ValueAndTimestamp("y", 120)
        win = d.get_window_store("win")
        assert win.fetch("a", 0, 20) == [(5, 15, "x"), (20, 30, "y")]
        assert win.backward_fetch_all(0, 20) == [
            (Windowed("a", 20, 30), "y"),
            (Windowed("a", 5, 15), "x"),
        ]
        ses = d.get_session_store("ses")
        assert [(s.start, s.value) for s in ses.backward_find_sessions("a", 0, 20)] == [
            (20, "y"),
            (5, "x"),
        ]
        assert ses.fetch_session("a", 5, 5) == "x"
        assert d.get_state_store("ver").get_as_of("a", 10) == ValueAndTimestamp("x", 5)
    # the Topology form connects an existing processor by name
    t = StreamsBuilder().topology
    t.add_processor("P", PutAll)
    t.add_state_store(Stores.key_value_store_builder(Stores.persistent_key_value_store("kv")), "P")
    assert t.nodes["P"].stores == ["kv"]  # type: ignore[union-attr]
    assert t.stores["kv"].kind == "rocksDB" and not t.stores["kv"].caching


def test_store_declarations_refuse_what_they_cannot_do() -> None:
    supplier = Stores.in_memory_key_value_store("kv")
    with pytest.raises(ConfigError, match="window"):
        Stores.window_store_builder(supplier)
    with pytest.raises(ConfigError, match="without a changelog"):
        Stores.key_value_store_builder(supplier).with_logging_disabled()
    with pytest.raises(ConfigError, match="retention"):
        Stores.persistent_window_store("w", retention=5, window_size=10)
    t = StreamsBuilder().topology
    with pytest.raises(ConfigError, match="no processor named 'nope'"):
        t.add_state_store(Stores.key_value_store_builder(supplier), "nope")
    assert "kv" not in t.stores  # refused before anything changed
    b = StreamsBuilder()
    b.add_state_store(Stores.key_value_store_builder(supplier))
    with pytest.raises(ConfigError, match="defined twice"):
        b.add_state_store(Stores.key_value_store_builder(supplier))


def totals(builder: StreamsBuilder, records: list[tuple[str, Any, int]]) -> list[Any]:
    with drive(builder, {"statestore.cache.max.bytes": 0}) as d:
        src = d.create_input_topic("in", "str", "json")
        out = d.create_output_topic("out", "str", "json")
        for key, value, ts in records:
            src.pipe_input(key, value, timestamp=ts)
        return [(r.key, r.value) for r in out.read_records_to_list()]


def test_windowed_table_regrouped_with_a_subtractor_gives_kafkas_totals() -> None:
    """Hopping counts re-keyed by the record key and summed: each window's old count is
    subtracted before its new one is added (the totals used to only grow: 1, 3, 6)."""
    b = StreamsBuilder()
    (
        b.stream("in", key_serde="str", value_serde="json")
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(10, 100).advance_by(5))
        .count(store="counts")
        .group_by(lambda w, v: (w.key, v), key_serde="str", value_serde="int")
        .reduce(lambda a, v: a + v, lambda a, v: a - v, store="totals")
        .to_stream()
        .to("out", key_serde="str", value_serde="json")
    )
    got = totals(b, [("a", "x", 1), ("a", "x", 2), ("a", "x", 7)])
    # ts 7 is in [0, 10) (count 2 -> 3) and in the new [5, 15) (count 1)
    assert got == [("a", 1), ("a", 2), ("a", 3), ("a", 4)]


def test_session_table_regrouped_subtracts_merged_sessions() -> None:
    b = StreamsBuilder()
    (
        b.stream("in", key_serde="str", value_serde="json")
        .group_by_key()
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(5, 100))
        .count(store="sessions")
        .group_by(lambda w, v: (w.key, v), key_serde="str", value_serde="int")
        .reduce(lambda a, v: a + v, lambda a, v: a - v, store="session-totals")
        .to_stream()
        .to("out", key_serde="str", value_serde="json")
    )
    # two sessions (1 record each), then a record joining them: one session of 3
    got = totals(b, [("a", "x", 0), ("a", "x", 10), ("a", "x", 5)])
    assert got[-1] == ("a", 3)


def test_suppressed_table_regrouped_subtracts_a_buffered_tombstone() -> None:
    b = StreamsBuilder()
    (
        b.table("in", store="in-store", key_serde="str", value_serde="json")
        .suppress(Suppressed.until_time_limit(10, BufferConfig.unbounded()))
        .group_by(lambda k, v: ("all", v), key_serde="str", value_serde="int")
        .reduce(lambda a, v: a + v, lambda a, v: a - v, store="all-total")
        .to_stream()
        .to("out", key_serde="str", value_serde="json")
    )
    got = totals(b, [("a", 1, 0), ("b", 2, 1), ("c", 4, 15), ("a", None, 20), ("d", 8, 40)])
    # a and b go out at 15, c and a's tombstone (buffered with prior value 1) at 40
    assert got == [("all", 1), ("all", 3), ("all", 7), ("all", 6)]


def test_suppress_buffer_reads_entries_logged_without_a_prior_value() -> None:
    """A buffer changelog written before prior values were kept still restores."""
    serde = BufferedSerde(serde_for("json"))
    entry = (5, 7, {"n": 1}, {"n": 0})
    assert serde.deserialize(serde.serialize(entry)) == entry
    assert serde.deserialize(serde.serialize((5, 7, None, 3))) == (5, 7, None, 3)
    old_layout = (5).to_bytes(8, "big") + (7).to_bytes(8, "big") + b"\x01" + b'{"n": 1}'
    assert serde.deserialize(old_layout) == (5, 7, {"n": 1}, None)


def test_the_documented_dedup_example() -> None:
    """docs/dsl.md's processor-API store example, as written there."""
    from streamrt.runtime import App

    class Dedup(Processor):
        def init(self, context: Any) -> None:
            super().init(context)
            self.seen = context.get_store("seen")

        def process(self, key: Any, value: Any) -> None:
            if self.seen.get(key) is None:
                self.seen.put(key, value)
                self.context.forward(key, value)

    app = App({"application.id": "dedup"})
    app.add_state_store(
        Stores.key_value_store_builder(
            Stores.persistent_key_value_store("seen"), "str", "json"
        ).with_caching_enabled()
    )
    app.stream("events", key_serde="str", value_serde="json").process(Dedup, "seen").to(
        "unique", key_serde="str", value_serde="json"
    )
    with TopologyTestDriver(app) as d:
        src = d.create_input_topic("events", "str", "json")
        for key, value in [("a", 1), ("b", 2), ("a", 3)]:
            src.pipe_input(key, value)
        out = d.create_output_topic("unique", "str", "json")
        assert [(r.key, r.value) for r in out.read_records_to_list()] == [("a", 1), ("b", 2)]


def test_cached_range_merges_cached_puts_and_deletes_over_the_store() -> None:
    from streamrt.runtime.stores import CachingStore, ChangeLoggingStore, RecordCache, RecordContext
    from streamrt.state import TopicPartition
    from streamrt.state.memory import InMemoryStore
    from tests.runtime.test_task import ListCollector

    bytes_store = InMemoryStore("kv")
    bytes_store.open()
    spec = StoreSpec("kv", serde_for("str"), serde_for("json"), timestamped=True)
    context, collector = RecordContext(timestamp=5), ListCollector()
    logged = ChangeLoggingStore(
        spec, bytes_store, TopicPartition("kv-changelog", 0), collector, context
    )
    for key in ("a", "b", "c", "d"):
        logged.put(key, key.upper())
    cached = CachingStore(logged, RecordCache(1 << 20), context)
    cached.delete("c")  # in the cache only: the store still holds c
    cached.put("ba", "BA")
    cached.put("e", "E")
    assert len(collector.sent) == 4  # nothing of the cache's reached the changelog yet
    assert list(cached.range("b", "d")) == [("b", "B"), ("ba", "BA"), ("d", "D")]
    assert [k for k, _ in cached.reverse_range(None, "ba")] == ["ba", "b", "a"]
    assert [k for k, _ in cached.prefix_scan("b")] == ["b", "ba"]
    assert [k for k, _ in cached.all()] == ["a", "b", "ba", "d", "e"]
    assert list(cached.range("e", "a")) == []
    assert cached.approximate_num_entries() == 5
    assert cached.delete("e") == "E" and cached.delete("c") is None
    cached.flush_cache()
    assert [k for k, _ in logged.range(None, None)] == ["a", "b", "ba", "d"]


def _join_regroup_totals(materialized: str | None) -> list[Any]:
    """Orders joined with products by foreign key, the joined lengths summed per first letter
    of the order key with a subtractor."""
    b = StreamsBuilder()
    orders = b.table("orders", store="orders-store", key_serde="str", value_serde="json")
    products = b.table("products", store="products-store", key_serde="str", value_serde="json")
    joiner = lambda o, p: f"{o}+{p}"  # noqa: E731
    joined = orders.join(
        products, joiner, foreign_key=lambda v: v.split(":")[0], store=materialized
    )
    (
        joined.group_by(lambda k, v: (k[0], len(v)), key_serde="str", value_serde="int")
        .reduce(lambda a, v: a + v, lambda a, v: a - v, store="totals")
        .to_stream()
        .to("out", key_serde="str", value_serde="json")
    )
    with drive(b) as d:
        o = d.create_input_topic("orders", "str", "json")
        p = d.create_input_topic("products", "str", "json")
        p.pipe_input("p", "pen", timestamp=1)
        o.pipe_input("o1", "p:1", timestamp=2)
        p.pipe_input("p", "pencil", timestamp=3)
        o.pipe_input("o1", None, timestamp=4)
        out = d.create_output_topic("out", "str", "json")
        return [(r.key, r.value) for r in out.read_records_to_list()]


def test_foreign_key_join_results_regrouped_subtract_their_old_values() -> None:
    """A foreign-key join's result, unmaterialized or materialized, re-grouped with a
    subtractor: a replaced or deleted joined value is subtracted (the totals grew, 7 then 17,
    and the delete subtracted nothing)."""
    want = [("o", 7), ("o", 10), ("o", 0)]  # "p:1+pen", "p:1+pencil", then the delete
    assert _join_regroup_totals(None) == want
    assert _join_regroup_totals("joined") == want
