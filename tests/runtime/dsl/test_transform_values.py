"""``KTable.transform_values`` (Kafka's ``KTable.transformValues``, issue 38) through the public
API: a transformer with its own state store, materialized and queried, on the embedded broker;
and through the test driver what a transformer may not do (forward) and when it is closed.
Kafka's call pattern (old values, value getters) is compared with Kafka Streams itself in
``tests/differential/scenarios/transform/``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streamrt.runtime import App, Stores, ValueTransformerWithKey
from streamrt.runtime.dsl import StreamsBuilder
from streamrt.testing import TopologyTestDriver
from tests.kafka_helpers import create_topic, produce, read_all, wait_until


class Versioner(ValueTransformerWithKey):
    """``<value>@<n>``: n counts the updates of the key so far (kept in the store "seen")."""

    def transform(self, key: Any, value: Any) -> Any:
        if value is None:
            return None
        seen = self.context.get_store("seen")
        n = (seen.get(key) or 0) + 1
        seen.put(key, n)
        return f"{value}@{n}"


def test_transformer_with_a_store_on_the_broker(broker, tmp_path: Path) -> None:
    bootstrap, app_id = broker.bootstrap, "tvbroker"
    for topic in ("tv-in", "tv-out"):
        create_topic(bootstrap, topic, 2)
    a = App(
        {
            "application.id": app_id,
            "bootstrap.servers": bootstrap,
            "state.dir": str(tmp_path),
            "commit.interval.ms": "100",
            "statestore.cache.max.bytes": "0",  # every update reaches the transformer
            "session.timeout.ms": "6000",
            "heartbeat.interval.ms": "500",
        }
    )
    a.add_state_store(
        Stores.key_value_store_builder(Stores.persistent_key_value_store("seen"), "str", "int")
    )
    table = a.table("tv-in", key_serde="str", value_serde="str")
    versions = table.transform_values(Versioner, "seen", store="versions")
    versions.to_stream().to("tv-out", key_serde="str", value_serde="str")
    updates = [("a", "x"), ("b", "y"), ("a", "z"), ("b", None), ("a", "w")]
    produce(bootstrap, "tv-in", [(k.encode(), v and v.encode()) for k, v in updates])
    a.start()
    try:
        wait_until(
            lambda: a.fatal_error or len(read_all(bootstrap, "tv-out")) == 5,
            what="the transformed table",
        )
        wait_until(lambda: a.query_local("versions", "a") == "w@3", what="the materialized row")
        assert a.query_local("versions", "b") is None  # the delete's None result deleted it
    finally:
        a.stop()
    assert a.fatal_error is None
    out = [(r.key.decode(), r.value and r.value.decode()) for r in read_all(bootstrap, "tv-out")]
    assert sorted(out, key=str) == sorted(
        [("a", "x@1"), ("a", "z@2"), ("a", "w@3"), ("b", "y@1"), ("b", None)], key=str
    )
    changelog = read_all(bootstrap, f"{app_id}-seen-changelog")
    assert {r.key.decode() for r in changelog} == {"a", "b"}


class Forwarder(ValueTransformerWithKey):
    def transform(self, key: Any, value: Any) -> Any:
        self.context.forward(key, value)


class Closing(ValueTransformerWithKey):
    closed = 0

    def transform(self, key: Any, value: Any) -> Any:
        return value

    def close(self) -> None:
        Closing.closed += 1


def test_a_transformer_cannot_forward() -> None:
    b = StreamsBuilder()
    b.table("t", key_serde="str", value_serde="str").transform_values(Forwarder).to_stream().to(
        "out"
    )
    with TopologyTestDriver(b) as driver:
        source = driver.create_input_topic("t", "str", "str")
        with pytest.raises(Exception, match="cannot forward: return the new value"):
            source.pipe_input("k", "v")


def test_the_transformer_is_closed_with_the_task() -> None:
    b = StreamsBuilder()
    b.table("t", key_serde="str", value_serde="str").transform_values(Closing).to_stream().to("out")
    Closing.closed = 0
    with TopologyTestDriver(b) as driver:
        driver.create_input_topic("t", "str", "str").pipe_input("k", "v")
        assert driver.create_output_topic("out", "str", "str").read_value() == "v"
        assert Closing.closed == 0
    assert Closing.closed == 1


class Counted(ValueTransformerWithKey):
    """Upper-cases; records each instance made and how often each was closed."""

    made: list[Counted] = []

    def __init__(self) -> None:
        self.closes = 0
        Counted.made.append(self)

    def transform(self, key: Any, value: Any) -> Any:
        return None if value is None else value.upper()

    def close(self) -> None:
        self.closes += 1


def test_every_reader_transformer_is_closed_once_with_the_task() -> None:
    """The transformers a join's value getter makes (Kafka's KTableTransformValuesGetter) are
    closed with the task, as the processor's own one is: a table-table join (both sides read
    the other) and a stream-table join each read the unmaterialized transformed table."""
    b = StreamsBuilder()
    upper = b.table("t", key_serde="str", value_serde="str").transform_values(Counted)
    other = b.table("o", key_serde="str", value_serde="str")
    upper.join(other, lambda u, o: f"{u}+{o}").to_stream().to("joined")
    b.stream("s", key_serde="str", value_serde="str").join(upper, lambda s, u: f"{s}/{u}").to(
        "looked-up"
    )
    Counted.made = []
    with TopologyTestDriver(b) as driver:
        driver.create_input_topic("t", "str", "str").pipe_input("k", "v")
        driver.create_input_topic("o", "str", "str").pipe_input("k", "w")
        driver.create_input_topic("s", "str", "str").pipe_input("k", "x")
        assert driver.create_output_topic("joined", "str", "str").read_value() == "V+w"
        assert driver.create_output_topic("looked-up", "str", "str").read_value() == "x/V"
        # the processor's transformer, the join side reading the table, the stream lookup
        assert len(Counted.made) == 3
        assert [t.closes for t in Counted.made] == [0, 0, 0]
    assert [t.closes for t in Counted.made] == [1, 1, 1]


def test_a_foreign_key_joins_reader_transformers_are_closed_once_with_the_task() -> None:
    """Both sides of a foreign-key join read an unmaterialized transformed table: the
    subscription side the right table, the response side the left one."""
    b = StreamsBuilder()
    left = b.table("orders", key_serde="str", value_serde="str").transform_values(Counted)
    right = b.table("products", key_serde="str", value_serde="str").transform_values(Counted)
    joined = left.join(right, lambda o, p: f"{o}:{p}", foreign_key=lambda o: o.lower())
    joined.to_stream().to("fk-out")
    Counted.made = []
    with TopologyTestDriver(b) as driver:
        driver.create_input_topic("products", "str", "str").pipe_input("p", "pen")
        driver.create_input_topic("orders", "str", "str").pipe_input("o1", "p")
        assert driver.create_output_topic("fk-out", "str", "str").read_value() == "P:PEN"
        assert len(Counted.made) == 4  # two processors' own, two readers
        assert [t.closes for t in Counted.made] == [0, 0, 0, 0]
    assert [t.closes for t in Counted.made] == [1, 1, 1, 1]
