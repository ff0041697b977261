"""Stateless operators, time and headers through the public DSL and the test driver."""

from __future__ import annotations

from typing import Any

import pytest

from streamrt.errors import ConfigError
from streamrt.runtime import App, Processor
from streamrt.runtime.processor import PunctuationType
from streamrt.runtime.timestamps import ConsumedRecord
from streamrt.testing import TestRecord, TopologyTestDriver


def app() -> App:
    return App({"application.id": "ops"})


def test_foreach_peek_select_key_flat_map_values() -> None:
    a = app()
    seen: list[tuple[Any, Any]] = []
    peeked: list[Any] = []
    (
        a.stream("in", key_serde="str", value_serde="str")
        .peek(lambda k, v: peeked.append(v))
        .flat_map_values(lambda v: v.split())
        .select_key(lambda _k, v: v[0], key_serde="str")
        .foreach(lambda k, v: seen.append((k, v)))
    )
    with TopologyTestDriver(a) as d:
        d.create_input_topic("in", "str", "str").pipe_input("k", "apple banana avocado")
    assert peeked == ["apple banana avocado"]
    assert seen == [("a", "apple"), ("b", "banana"), ("a", "avocado")]


def test_split_with_default_branch_takes_what_no_predicate_matched() -> None:
    a = app()
    branches = (
        a.stream("in", value_serde="int")
        .split()
        .branch(lambda _k, v: v < 10)
        .branch(lambda _k, v: v < 100)
        .default_branch()
    )
    small, big, rest = branches.values()  # the split's name + 1, 2, then 0 (the default)
    small.to("small", value_serde="int")
    big.to("big", value_serde="int")
    rest.to("rest", value_serde="int")
    with TopologyTestDriver(a) as d:
        i = d.create_input_topic("in", value_serde="int")
        for v in (5, 50, 500, 7):
            i.pipe_input(None, v)
        assert d.create_output_topic("small", value_serde="int").read_values_to_list() == [5, 7]
        assert d.create_output_topic("big", value_serde="int").read_values_to_list() == [50]
        assert d.create_output_topic("rest", value_serde="int").read_values_to_list() == [500]


def test_split_without_default_drops_unmatched() -> None:
    a = app()
    (only,) = (
        a.stream("in", value_serde="int")
        .split()
        .branch(lambda _k, v: v < 10)
        .no_default_branch()
        .values()
    )
    only.to("out", value_serde="int")
    with TopologyTestDriver(a) as d:
        i = d.create_input_topic("in", value_serde="int")
        i.pipe_input(None, 500)
        assert d.create_output_topic("out", value_serde="int").is_empty()


def test_repartition_with_explicit_partitions_goes_through_an_internal_topic() -> None:
    a = app()
    a.stream("in", key_serde="str", value_serde="str").select_key(
        lambda _k, v: v, key_serde="str"
    ).repartition(partitions=4, name="by-value").to("out")
    src = a.topology.nodes["by-value-repartition-source"]
    assert src.partitions == 4  # type: ignore[union-attr]
    assert a.topology.repartition_topics("ops") == ["ops-by-value-repartition"]
    subs = a.topology.subtopologies("ops")
    assert [s.source_topics for s in subs] == [("in",), ("ops-by-value-repartition",)]
    with TopologyTestDriver(a) as d:
        d.create_input_topic("in", "str", "str").pipe_input("k", "v", timestamp=5)
        assert d.create_output_topic("out", "str", "str").read_record() == TestRecord("v", "v", 5)
    with pytest.raises(ConfigError):
        a.stream("x").repartition(partitions=0)


def test_headers_are_readable_forwarded_and_written() -> None:
    a = app()
    read: list[Any] = []

    class Stamp(Processor):
        def process(self, key: Any, value: Any) -> None:
            read.append(self.context.headers)
            self.context.forward(key, value, headers=(*self.context.headers, ("seen", b"1")))

    a.stream("in", value_serde="str").map_values(str.upper).process(Stamp).to(
        "out", value_serde="str"
    )
    with TopologyTestDriver(a) as d:
        d.create_input_topic("in", value_serde="str").pipe_input(
            None, "x", headers=[("trace", b"abc")]
        )
        record = d.create_output_topic("out", value_serde="str").read_record()
    assert read == [(("trace", b"abc"),)]
    assert record.value == "X"
    assert record.headers == (("trace", b"abc"), ("seen", b"1"))


def test_timestamp_zero_is_kept_and_extractor_reads_the_value() -> None:
    a = app()
    a.stream("plain", value_serde="json").to("out1", value_serde="json")
    a.stream(
        "events",
        value_serde="json",
        timestamp_extractor=lambda r: r.value["at"],
    ).to("out2", value_serde="json")
    with TopologyTestDriver(a) as d:
        d.create_input_topic("plain", value_serde="json").pipe_input(None, {}, timestamp=0)
        ev = d.create_input_topic("events", value_serde="json")
        ev.pipe_input(None, {"at": 1234}, timestamp=99)
        ev.pipe_input(None, {"at": -1}, timestamp=99)  # negative: dropped
        assert d.create_output_topic("out1", value_serde="json").read_record().timestamp == 0
        out2 = d.create_output_topic("out2", value_serde="json").read_records_to_list()
        assert [(r.value, r.timestamp) for r in out2] == [({"at": 1234}, 1234)]


def test_extractor_gets_partition_time() -> None:
    a = app()
    got: list[int] = []

    def extractor(record: ConsumedRecord) -> int:
        got.append(record.partition_time)
        return record.timestamp

    a.stream("in", timestamp_extractor=extractor).to("out")
    with TopologyTestDriver(a) as d:
        i = d.create_input_topic("in")
        for ts in (10, 5, 20):
            i.pipe_input(None, b"x", timestamp=ts)
    assert got == [-1, 10, 10]


def test_default_timestamp_extractor_config() -> None:
    a = App(
        {"application.id": "ops", "default.timestamp.extractor": "LogAndSkipOnInvalidTimestamp"}
    )
    a.stream("in").to("out")
    with TopologyTestDriver(a) as d:
        d.create_input_topic("in").pipe_input(None, b"x", timestamp=-5)
        assert d.create_output_topic("out").is_empty()
    with pytest.raises(ConfigError, match=r"default\.timestamp\.extractor"):
        TopologyTestDriver(a, {"default.timestamp.extractor": "NoSuchExtractor"})


class Punctuating(Processor):
    def __init__(self, log: list[tuple[str, int]]) -> None:
        self.log = log

    def init(self, context: Any) -> None:
        super().init(context)
        self.stream = context.schedule(10, PunctuationType.STREAM_TIME, self.on_stream)
        context.schedule(100, PunctuationType.WALL_CLOCK_TIME, self.on_wall)

    def on_stream(self, now: int) -> None:
        self.log.append(("stream", now))
        self.context.forward("tick", now)
        if now >= 30:
            self.stream.cancel()

    def on_wall(self, now: int) -> None:
        self.log.append(("wall", now))

    def process(self, key: Any, value: Any) -> None:
        pass


def test_stream_time_and_wall_clock_punctuation_cancellable() -> None:
    a = app()
    log: list[tuple[str, int]] = []
    a.stream("in").process(lambda: Punctuating(log)).to("out", key_serde="str", value_serde="int")
    with TopologyTestDriver(a, initial_wall_clock_ms=1_000) as d:
        i = d.create_input_topic("in")
        i.pipe_input(None, b"x", timestamp=3)  # first stream-time punctuation as soon as known
        i.pipe_input(None, b"x", timestamp=5)  # not due (next at 10)
        i.pipe_input(None, b"x", timestamp=25)  # 10 and 20 missed: one run, next at 30
        i.pipe_input(None, b"x", timestamp=2)  # stream time does not go back
        i.pipe_input(None, b"x", timestamp=31)  # runs and cancels itself
        i.pipe_input(None, b"x", timestamp=50)
        d.advance_wall_clock_time(99)
        d.advance_wall_clock_time(1)
        out = d.create_output_topic("out", "str", "int").read_records_to_list()
    assert log == [("stream", 3), ("stream", 25), ("stream", 31), ("wall", 1_100)]
    assert [(r.value, r.timestamp) for r in out] == [(3, 3), (25, 25), (31, 31)]
    assert [r.headers for r in out] == [(), (), ()]


def test_unknown_input_topic_is_refused() -> None:
    a = app()
    a.stream("in").to("out")
    with TopologyTestDriver(a) as d, pytest.raises(ConfigError, match="unknown input topic"):
        d.create_input_topic("nope")
