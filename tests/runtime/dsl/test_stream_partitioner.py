"""``StreamPartitioner`` through the test driver (issue 38): as Kafka's driver, every topic has
one partition and partition numbers are not checked, so a record multicast to n partitions is
read n times and one sent to none is dropped; a partitioner's bad answer fails the record
through the production handler with a message saying what to return."""

from __future__ import annotations

from typing import Any

import pytest

from streamrt.errors import ConfigError
from streamrt.runtime.dsl import Produced, StreamsBuilder, TableJoined
from streamrt.runtime.engine.tasks.sink_writer import chosen_partitions, fixed_counts
from streamrt.testing import TopologyTestDriver


def by_value(topic: str, key: Any, value: Any, count: int) -> Any:
    del topic, key, count
    return {"none": None, "drop": set(), "two": {0, 1}, "int": 3}[value]


def test_driver_multicasts_and_drops() -> None:
    b = StreamsBuilder()
    b.stream("in", key_serde="str", value_serde="str").to(
        "out", Produced.stream_partitioner(by_value)
    )
    with TopologyTestDriver(b) as driver:
        source = driver.create_input_topic("in", "str", "str")
        out = driver.create_output_topic("out", "str", "str")
        for i, value in enumerate(["none", "drop", "two"]):
            source.pipe_input(f"k{i}", value)
        assert out.read_key_values_to_list() == [("k0", "none"), ("k2", "two"), ("k2", "two")]


def test_an_int_answer_fails_with_the_fix() -> None:
    b = StreamsBuilder()
    b.stream("in", key_serde="str", value_serde="str").to("out", partitioner=by_value)
    with TopologyTestDriver(b) as driver:
        source = driver.create_input_topic("in", "str", "str")
        with pytest.raises(Exception, match=r"returned 3: return None .* or a set of partitions"):
            source.pipe_input("k", "int")


def test_partition_out_of_range_is_refused_on_a_broker() -> None:
    strict = fixed_counts(2, checks_range=True)
    assert chosen_partitions(lambda *a: [1, 1, 0], "t", "k", "v", strict) == (0, 1)
    assert chosen_partitions(lambda *a: None, "t", "k", "v", strict) == (None,)
    with pytest.raises(ConfigError, match=r"chose partition 2; the topic has 2 partitions"):
        chosen_partitions(lambda *a: {2}, "t", "k", "v", strict)
    with pytest.raises(ConfigError, match=r"does it exist"):
        chosen_partitions(lambda *a: {0}, "t", "k", "v", fixed_counts(0, checks_range=True))


def test_foreign_key_partitioner_must_pick_one_partition() -> None:
    b = StreamsBuilder()
    left = b.table("orders", key_serde="str", value_serde="str")
    right = b.table("customers", key_serde="str", value_serde="str")
    both = lambda t, k, v, n: {0, 1}  # noqa: E731
    left.join(
        right, lambda a, c: f"{a}/{c}", foreign_key=lambda v: v, other_partitioner=both
    ).to_stream().to("out")
    with TopologyTestDriver(b) as driver:
        orders = driver.create_input_topic("orders", "str", "str")
        with pytest.raises(Exception, match=r"must return None or one partition"):
            orders.pipe_input("o1", "c1")


def test_partitioners_only_on_foreign_key_joins() -> None:
    b = StreamsBuilder()
    left = b.table("a", key_serde="str", value_serde="str")
    right = b.table("b", key_serde="str", value_serde="str")
    with pytest.raises(ConfigError, match="for a foreign-key join"):
        left.join(right, lambda x, y: x, table_joined=TableJoined.with_(by_value, None))


def test_a_bad_answer_goes_to_the_production_handler() -> None:
    """With ``production.exception.handler=continue`` the record is skipped, the next goes."""
    b = StreamsBuilder()
    b.stream("in", key_serde="str", value_serde="str").to("out", partitioner=by_value)
    config = {"production.exception.handler": "continue"}
    with TopologyTestDriver(b, config) as driver:
        source = driver.create_input_topic("in", "str", "str")
        out = driver.create_output_topic("out", "str", "str")
        source.pipe_input("k1", "int")  # 3: not a set
        source.pipe_input("k2", "none")
        assert out.read_key_values_to_list() == [("k2", "none")]
