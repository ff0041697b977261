"""Tasks with the real topology, operators and RocksDB, fed by a fake record source."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from streamrt.clock import ManualClock
from streamrt.runtime import App, Branched, Processor, TimeWindows, Windowed
from streamrt.runtime.engine.tasks.sink_writer import fixed_counts
from streamrt.runtime.engine.tasks.task import (
    DeserializationError,
    StreamTask,
    TaskId,
    TopicPartition,
)
from streamrt.state import StateLockedError


class ListCollector:
    """Records what a task sends, as the producer would receive it."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any, Any, int | None, int]] = []

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        timestamp_ms: int,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> None:
        self.sent.append((topic, key, value, partition, timestamp_ms))

    def to(self, topic: str) -> list[tuple[Any, Any]]:
        return [(k, v) for t, k, v, _p, _ts in self.sent if t == topic]


def make_task(
    app: App, sub: int, partition: int, state_dir: Path, collector: ListCollector, **kw: Any
) -> StreamTask:
    subs = app.topology.subtopologies("app")
    # one partition per topic, as the test driver: to() partitions windowed keys by their
    # inner key (Kafka's WindowedStreamPartitioner), which asks for the topic's count
    kw.setdefault("partition_counts", fixed_counts(1, checks_range=False))
    return StreamTask(
        TaskId(sub, partition), subs[sub], app.topology, "app", state_dir, collector, **kw
    )


def wordcount(app: App) -> None:
    (
        app.stream("lines", value_serde="str")
        .flat_map(lambda _k, line: [(w, w) for w in line.split()], key_serde="str")
        .group_by_key(name="words")
        .count(store="counts")
        .to_stream()
        .to("out", value_serde="int")
    )


def test_wordcount_splits_at_the_repartition_topic_and_counts(tmp_path: Path) -> None:
    app = App({"application.id": "app"})
    wordcount(app)
    subs = app.topology.subtopologies("app")
    assert [s.source_topics for s in subs] == [("lines",), ("app-words-repartition",)]
    assert subs[1].stores == ("counts",)
    first, second = ListCollector(), ListCollector()
    split = make_task(app, 0, 0, tmp_path, first)
    split.open()
    split.process("lines", 0, 1000, None, b"a b a")
    repartitioned = first.to("app-words-repartition")
    assert repartitioned == [(b"a", b"a"), (b"b", b"b"), (b"a", b"a")]
    counter = make_task(app, 1, 0, tmp_path, second)
    assert counter.open() == {TopicPartition("app-counts-changelog", 0): None}
    for offset, (k, v) in enumerate(repartitioned):
        counter.process("app-words-repartition", offset, 1000, k, v)
    out = [(k, struct.unpack(">q", v)[0]) for k, v in second.to("out")]
    assert out == [(b"a", 1), (b"b", 1), (b"a", 2)]
    changelog = [(t, k, p) for t, k, _v, p, _ts in second.sent if t.endswith("changelog")]
    assert changelog == [
        ("app-counts-changelog", b"a", 0),
        ("app-counts-changelog", b"b", 0),
        ("app-counts-changelog", b"a", 0),
    ]
    assert counter.take_offsets() == {TopicPartition("app-words-repartition", 0): 3}
    counter.flush_state({TopicPartition("app-counts-changelog", 0): 3})
    counter.close()
    split.close()
    reopened = make_task(app, 1, 0, tmp_path, ListCollector())
    assert reopened.open() == {TopicPartition("app-counts-changelog", 0): 3}
    assert dict(reopened.stores["counts"].items()) == {"a": 2, "b": 1}
    reopened.close()


def test_task_directory_is_locked_against_a_second_task(tmp_path: Path) -> None:
    app = App({"application.id": "app"})
    wordcount(app)
    task = make_task(app, 1, 0, tmp_path, ListCollector())
    task.open()
    with pytest.raises(StateLockedError):
        make_task(app, 1, 0, tmp_path, ListCollector()).open()
    task.close()


def test_hopping_windowed_count(tmp_path: Path) -> None:
    app = App({"application.id": "app"})
    (
        app.stream("clicks", key_serde="str")
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(10_000, 86_390_000).advance_by(5_000))
        .count(store="per-window")
        .to_stream()
        .to("out", value_serde="int")
    )
    collector = ListCollector()
    task = make_task(app, 0, 0, tmp_path, collector)
    task.open()
    for offset, ts in enumerate([1_000, 6_000, 12_000]):
        task.process("clicks", offset, ts, b"u", b"x")
    counts = dict(task.stores["per-window"].items())
    task.close()
    assert counts == {
        Windowed("u", 0, 10_000): 2,
        Windowed("u", 5_000, 15_000): 2,
        Windowed("u", 10_000, 20_000): 1,
    }


def test_branch_filter_map_values_merge_and_table(tmp_path: Path) -> None:
    app = App({"application.id": "app"})
    branches = (
        app.stream("nums", key_serde="str", value_serde="int")
        .split(name="n-")
        .branch(lambda _k, v: v < 10, Branched.as_("small"))
        .branch(lambda _k, v: v >= 10, Branched.as_("big"))
        .no_default_branch()
    )
    small, big = branches["n-small"], branches["n-big"]
    small.map_values(lambda v: v * 100).merge(big.filter(lambda _k, v: v % 2 == 0)).to(
        "out", value_serde="json"
    )
    app.table("users", store="users", key_serde="str", value_serde="json")
    collector = ListCollector()
    task = make_task(app, 0, 0, tmp_path, collector)
    task.open()
    for offset, value in enumerate([1, 11, 12]):
        task.process("nums", offset, 0, b"k", struct.pack(">q", value))
    assert collector.to("out") == [(b"k", b"100"), (b"k", b"12")]
    task.close()
    table = make_task(app, 1, 0, tmp_path, ListCollector())
    table.open()
    table.process("users", 0, 0, b"u1", b'{"name":"x"}')
    table.process("users", 1, 0, b"u2", b'{"name":"y"}')
    table.process("users", 2, 0, b"u1", None)
    assert dict(table.stores["users"].items()) == {"u2": {"name": "y"}}
    table.close()


def test_deserialization_handlers(tmp_path: Path) -> None:
    app = App({"application.id": "app"})
    app.stream("nums", value_serde="int").to("out")
    failing = make_task(app, 0, 0, tmp_path, ListCollector())
    failing.open()
    with pytest.raises(DeserializationError, match="nums-0@0"):
        failing.process("nums", 0, 0, None, b"bad")
    failing.close()
    collector = ListCollector()
    skipping = make_task(app, 0, 0, tmp_path, collector, deserialization_handler="log_and_continue")
    skipping.open()
    skipping.process("nums", 0, 0, None, b"bad")
    skipping.process("nums", 1, 0, None, struct.pack(">q", 4))
    assert len(collector.to("out")) == 1
    assert skipping.take_offsets() == {TopicPartition("nums", 0): 2}
    skipping.close()


class Buffering(Processor):
    """A processor-API processor: buffers in a store, emits on punctuation."""

    def init(self, context: Any) -> None:
        super().init(context)
        context.schedule(1000, self.emit)

    def process(self, key: Any, value: Any) -> None:
        store = self.context.get_store("buffer")
        store.put(key, (store.get(key) or 0) + 1)

    def emit(self, now_ms: int) -> None:
        store = self.context.get_store("buffer")
        for key, count in list(store.items()):
            self.context.forward(key, count)
            store.delete(key)


def test_processor_api_with_store_and_punctuation(tmp_path: Path) -> None:
    from streamrt.runtime.stores import StoreSpec
    from streamrt.serde import IntSerde, StrSerde

    app = App({"application.id": "app"})
    app.topology.add_store(StoreSpec("buffer", StrSerde(), IntSerde()))
    app.stream("in", key_serde="str").process(Buffering, "buffer").to("out", value_serde="int")
    collector = ListCollector()
    task = make_task(app, 0, 0, tmp_path, collector, clock=ManualClock(0))
    task.open()
    task.process("in", 0, 0, b"a", b"")
    task.process("in", 1, 0, b"a", b"")
    assert task.punctuate(999) == 0  # first due at schedule time + interval
    assert task.punctuate(1000) == 1
    assert collector.to("out") == [(b"a", struct.pack(">q", 2))]
    assert task.stores["buffer"].get("a") is None
    task.close()


def test_checkpoint_hint_reports_store_offsets_for_the_subscription(tmp_path) -> None:
    """The assignor's local-state offsets come from the hint written after the stores."""
    from streamrt.runtime.engine.rebalance.group_member import local_task_offsets
    from streamrt.state import read_checkpoint_hint, write_checkpoint_hint

    app_dir = tmp_path / "app"
    task_dir = app_dir / "0_3"
    (task_dir / "counts").mkdir(parents=True)
    (app_dir / "0_4" / "counts").mkdir(parents=True)  # state, never checkpointed
    (app_dir / "not-a-task").mkdir()
    write_checkpoint_hint(task_dir, {"counts": 120, "other": 5, "never": None})
    assert read_checkpoint_hint(task_dir) == {"counts": 120, "other": 5}
    assert local_task_offsets(app_dir) == {"0_3": 125, "0_4": 0}
    (task_dir / ".checkpoint").write_text("{garbage")
    assert local_task_offsets(app_dir) == {"0_3": 0, "0_4": 0}


def test_punctuation_follows_the_clock_it_is_given(tmp_path: Path) -> None:
    """The thread passes its injected clock's time; a manual clock drives punctuation."""
    from streamrt.clock import ManualClock

    fired: list[int] = []

    class Ticker(Processor):
        def init(self, context: Any) -> None:
            super().init(context)
            context.schedule(1_000, fired.append)

    app = App({"application.id": "app"})
    app.stream("in").process(Ticker)
    collector = ListCollector()
    clock = ManualClock(10_000)
    task = make_task(app, 0, 0, tmp_path, collector, clock=clock)
    task.open()  # scheduled at 10_000: first due at 11_000
    assert task.punctuate(clock.now_ms()) == 0
    clock.advance(999)
    assert task.punctuate(clock.now_ms()) == 0
    clock.advance(1)
    assert task.punctuate(clock.now_ms()) == 1
    clock.advance(2_500)
    assert task.punctuate(clock.now_ms()) == 1
    assert fired == [11_000, 13_500]
    clock.advance(499)  # missed slots are skipped, keeping the alignment: next due 14_000
    assert task.punctuate(clock.now_ms()) == 0
    clock.advance(1)
    assert task.punctuate(clock.now_ms()) == 1
    task.close()


def test_in_memory_store_selected_per_store(tmp_path: Path) -> None:
    app = App({"application.id": "app"})
    app.stream("in", key_serde="str").group_by_key().count(store="c", in_memory=True)
    task = make_task(app, 0, 0, tmp_path, ListCollector())
    task.open()
    task.process("in", 0, 1, b"a", b"x")
    task.flush_state({TopicPartition("app-c-changelog", 0): 1})
    assert dict(task.stores["c"].items()) == {"a": 1}
    assert not (task.directory / "c").exists()
    task.close()
