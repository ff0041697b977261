"""Window semantics at the task level (real topology, operators and stores; no broker):
grace and late records, retention and segment expiry, sliding and session windows, suppress.

Each test builds an App topology, drives one StreamTask with (key, timestamp) records and
reads what the task sent to ``out`` and its changelogs; easy to port to a test driver.
"""

from __future__ import annotations

import itertools
import random
import struct
from pathlib import Path
from typing import Any

import pytest
import rocksdict

from streamrt.errors import ConfigError
from streamrt.runtime import (
    App,
    BufferConfig,
    BufferFullError,
    SessionWindows,
    SlidingWindows,
    Suppressed,
    TimeWindows,
    Windowed,
)
from streamrt.runtime.engine.tasks.task import StreamTask
from streamrt.runtime.exception_handlers import RecordFailedError
from streamrt.runtime.graph.topology import SinkNode
from streamrt.runtime.instance.internal_topics import changelog_config
from streamrt.state import IN_MEMORY
from streamrt.topic_partition import TopicPartition
from tests.runtime.test_task import ListCollector, make_task


class Driver:
    """One task of sub-topology 0, fed records of ``topic`` with string keys."""

    def __init__(self, app: App, tmp: Path, topic: str = "in", **kw: Any) -> None:
        self.app, self.tmp, self.topic, self.kw = app, tmp, topic, kw
        self.collector = ListCollector()
        self.task: StreamTask = make_task(app, 0, 0, tmp, self.collector, **kw)
        self.task.open()
        self.offset = 0

    def pipe(self, key: str, ts: int, value: bytes = b"x") -> None:
        self.task.process(self.topic, self.offset, ts, key.encode(), value)
        self.offset += 1

    def out(self) -> list[tuple[Windowed, int | None]]:
        """Everything sent to ``out``, decoded with the sink's own key serde (Kafka's
        windowed layout for the windows at hand), then forgotten."""
        sinks = self.app.topology.nodes.values()
        serde = next(n.key_serde for n in sinks if isinstance(n, SinkNode) and n.topic == "out")
        got = [
            (serde.deserialize(k), None if v is None else struct.unpack(">q", v)[0])
            for k, v in self.collector.to("out")
        ]
        self.collector.sent = [s for s in self.collector.sent if s[0] != "out"]
        return got

    def changelog(self) -> list[tuple[str, bytes, bytes | None]]:
        return [(t, k, v) for t, k, v, _p, _ts in self.collector.sent if t.endswith("changelog")]

    def store(self, name: str) -> dict[Windowed, Any]:
        return dict(self.task.stores[name].items())

    def commit_and_close(self) -> list[tuple[str, bytes, bytes | None]]:
        logged = self.changelog()
        ends: dict[TopicPartition, int] = {}
        for topic, _k, _v in logged:
            tp = TopicPartition(topic, 0)
            ends[tp] = ends.get(tp, 0) + 1
        self.task.flush_state(ends)
        self.task.close()
        return logged

    def restart(self, *, restore_changelog: bool = False) -> None:
        """Commit, close and reopen the task (in-memory stores: replay their changelogs)."""
        logged = self.commit_and_close()
        self.reopen(logged if restore_changelog else [])

    def reopen(self, logged: list[tuple[str, bytes, bytes | None]]) -> None:
        self.task = make_task(self.app, 0, 0, self.tmp, ListCollector(), **self.kw)
        positions = self.task.open()
        if logged:
            for tp in positions:
                records = [(k, v) for t, k, v in logged if t == tp.topic]
                self.task.state.restore_batch(tp, records, len(records))
        self.collector = self.task.collector  # type: ignore[assignment]


def windowed_count(windows: Any, **kw: Any) -> App:
    app = App({"application.id": "app"})
    table = (
        app.stream("in", key_serde="str").group_by_key().windowed_by(windows).count(store="w", **kw)
    )
    table.to_stream().to("out", value_serde="int")
    return app


# -- time windows: grace and late records ------------------------------------------------


def test_tumbling_window_accepts_late_records_within_grace_and_drops_later(tmp_path) -> None:
    d = Driver(windowed_count(TimeWindows.of_size_and_grace(10_000, 5_000)), tmp_path)
    d.pipe("a", 1_000)
    d.pipe("a", 12_000)  # stream time 12 s: window [0, 10 s) closes at 15 s
    d.pipe("a", 3_000)  # late but within grace: counted
    d.pipe("a", 16_000)  # stream time 16 s: [0, 10 s) is closed now
    d.pipe("a", 4_000)  # too late: dropped
    assert d.out() == [
        (Windowed("a", 0, 10_000), 1),
        (Windowed("a", 10_000, 20_000), 1),
        (Windowed("a", 0, 10_000), 2),
        (Windowed("a", 10_000, 20_000), 2),
    ]
    assert d.task.dropped_records == 1
    assert d.store("w") == {Windowed("a", 0, 10_000): 2, Windowed("a", 10_000, 20_000): 2}
    d.task.close()


def test_hopping_window_drops_only_the_closed_windows_of_a_late_record(tmp_path) -> None:
    windows = TimeWindows.of_size_with_no_grace(10_000).advance_by(5_000)
    d = Driver(windowed_count(windows), tmp_path)
    d.pipe("a", 12_000)  # windows [5, 15) and [10, 20)
    d.pipe("a", 8_000)  # [0, 10) closed at 10 s (no grace); [5, 15) still open
    assert d.out() == [
        (Windowed("a", 5_000, 15_000), 1),
        (Windowed("a", 10_000, 20_000), 1),
        (Windowed("a", 5_000, 15_000), 2),
    ]
    assert d.task.dropped_records == 1
    d.task.close()


def test_windows_for_is_epoch_aligned() -> None:
    hopping = TimeWindows.of_size_with_no_grace(10).advance_by(3)
    assert hopping.windows_for(12) == [(3, 13), (6, 16), (9, 19), (12, 22)]
    assert hopping.windows_for(0) == [(0, 10)]
    assert TimeWindows.of_size_with_no_grace(5).windows_for(7) == [(5, 10)]


# -- retention and segments -----------------------------------------------------------------


def segments_on_disk(path: Path) -> set[int]:
    """Segment ids of the data keys (``<segment id: 8 bytes><key><start><end>``)."""
    options = rocksdict.Options(raw_mode=True)
    db = rocksdict.Rdict(str(path), options, column_families={"__metadata__": options})
    try:
        return {struct.unpack(">q", bytes(k)[:8])[0] for k in db.keys()}  # noqa: SIM118  # Rdict iterates items
    finally:
        db.close()


def test_retention_drops_whole_segments_from_rocksdb(tmp_path) -> None:
    # size 60 s, no grace: retention 60 s, segment interval max(30 s, 60 s) = 60 s
    d = Driver(windowed_count(TimeWindows.of_size_with_no_grace(60_000)), tmp_path)
    d.pipe("a", 1_000)
    d.pipe("b", 61_000)
    # [0, 60 s) of a is past retention for reads (start < 60 s - 60 s + 1) but its segment lives
    assert set(d.store("w")) == {Windowed("b", 60_000, 120_000)}
    d.commit_and_close()
    assert segments_on_disk(tmp_path / "app" / "0_0" / "w") == {0, 1}
    d.reopen([])
    d.pipe("c", 200_000)  # stream time 180 s: segments 0 and 1 are dropped whole
    assert set(d.store("w")) == {Windowed("c", 180_000, 240_000)}
    d.commit_and_close()
    assert segments_on_disk(tmp_path / "app" / "0_0" / "w") == {3}


def test_longer_retention_keeps_windows_and_fetch_filters_by_start(tmp_path) -> None:
    d = Driver(
        windowed_count(TimeWindows.of_size_with_no_grace(60_000), retention=600_000), tmp_path
    )
    for ts in (1_000, 61_000, 62_000, 200_000):
        d.pipe("a", ts)
    view = d.task.stores["w"]
    assert view.fetch("a", 0, 200_000) == [
        (0, 60_000, 1),
        (60_000, 120_000, 2),
        (180_000, 240_000, 1),
    ]
    assert view.fetch("a", 60_000, 60_000) == [(60_000, 120_000, 2)]
    assert view.fetch("a", 60_001, 179_999) == []
    assert view.fetch("b", 0, 10**9) == []
    d.restart()  # stream time - retention < 0: nothing may be dropped on flush
    d.pipe("b", 200_000)
    d.restart()  # a second flush, after data is on disk
    assert d.task.stores["w"].fetch("a", 0, 60_000) == [(0, 60_000, 1), (60_000, 120_000, 2)]
    d.task.close()


def test_in_memory_window_store_expires_and_restores_from_its_changelog(tmp_path) -> None:
    app = windowed_count(TimeWindows.of_size_with_no_grace(60_000), in_memory=True)
    d = Driver(app, tmp_path)
    d.pipe("a", 1_000)
    d.pipe("a", 2_000)
    d.pipe("b", 130_000)
    assert d.store("w") == {Windowed("b", 120_000, 180_000): 1}
    d.pipe("b", 131_000)
    d.restart(restore_changelog=True)  # expired changelog records are skipped on restore
    assert d.store("w") == {Windowed("b", 120_000, 180_000): 2}
    d.task.close()


def test_window_changelog_is_compacted_and_deleted_after_retention() -> None:
    app = windowed_count(TimeWindows.of_size_and_grace(60_000, 30_000))
    assert changelog_config(app.topology, "w", 86_400_000) == {
        "cleanup.policy": "compact,delete",
        "retention.ms": str(90_000 + 86_400_000),
    }
    plain = App({"application.id": "app"})
    plain.stream("in", key_serde="str").group_by_key().count(store="c")
    assert changelog_config(plain.topology, "c", 86_400_000) == {"cleanup.policy": "compact"}


# -- sliding windows ------------------------------------------------------------------------


def sliding_reference(timestamps: list[int], d: int) -> dict[tuple[int, int], int]:
    """Brute force of KIP-450: a window [t - d, t] per record and [t + 1, t + 1 + d] per
    record whenever it holds a record; value = records in the window (all ts >= d)."""
    out = {}
    for t in timestamps:
        for start in (t - d, t + 1):
            n = sum(1 for u in timestamps if start <= u <= start + d)
            if n:
                out[(start, start + d)] = n
    return out


def sliding_app(d: int, grace: int) -> App:
    return windowed_count(SlidingWindows.of_time_difference_and_grace(d, grace))


def test_sliding_windows_kip450_example(tmp_path) -> None:
    d = Driver(sliding_app(10, 100), tmp_path)
    for ts in (10, 15, 25):
        d.pipe("k", ts)
    assert {(w.start, w.end): n for w, n in d.store("w").items()} == {
        (0, 10): 1,
        (5, 15): 2,
        (15, 25): 2,
        (11, 21): 1,
        (16, 26): 1,
    }
    d.task.close()


@pytest.mark.parametrize("seed", range(6))
def test_sliding_windows_match_the_definition_in_any_order(tmp_path, seed: int) -> None:
    rng = random.Random(seed)
    stamps = rng.sample(range(20, 120), 12)
    d = Driver(sliding_app(10, 1_000), tmp_path / str(seed))
    for ts in stamps:
        d.pipe("k", ts)
    got = {(w.start, w.end): n for w, n in d.store("w").items()}
    assert got == sliding_reference(stamps, 10)
    d.task.close()


def test_sliding_windows_early_records_share_the_first_window(tmp_path) -> None:
    d = Driver(sliding_app(10, 100), tmp_path)
    for ts in (2, 5, 14):
        d.pipe("k", ts)
    # [0, 10] holds 2 and 5; right windows of 2 and 5; left window of 14 is [4, 14]
    assert {(w.start, w.end): n for w, n in d.store("w").items()} == {
        (0, 10): 2,
        (3, 13): 1,
        (6, 16): 1,
        (4, 14): 2,
    }
    d.task.close()


def test_sliding_window_late_record_is_dropped_after_grace(tmp_path) -> None:
    d = Driver(sliding_app(10, 5), tmp_path)
    d.pipe("k", 100)
    d.pipe("k", 84)  # 84 + 10 < close time 100 - 5: dropped
    assert d.task.dropped_records == 1
    d.pipe("k", 86)  # 96 >= 95: not late as a record, but its window [76, 86] is closed
    assert d.task.dropped_records == 2
    assert d.store("w") == {Windowed("k", 90, 100): 1}
    d.task.close()


# -- session windows ------------------------------------------------------------------------


def session_app(gap: int, grace: int, **kw: Any) -> App:
    return windowed_count(SessionWindows.of_inactivity_gap_and_grace(gap, grace), **kw)


def test_sessions_grow_and_merge_with_tombstones_for_replaced_sessions(tmp_path) -> None:
    d = Driver(session_app(5, 100), tmp_path)
    for ts in (0, 3, 20, 12):
        d.pipe("k", ts)
    assert d.out() == [
        (Windowed("k", 0, 0), 1),
        (Windowed("k", 0, 0), None),
        (Windowed("k", 0, 3), 2),
        (Windowed("k", 20, 20), 1),
        (Windowed("k", 12, 12), 1),
    ]
    d.pipe("k", 16)  # bridges [12, 12] and [20, 20]
    assert d.out() == [
        (Windowed("k", 12, 12), None),
        (Windowed("k", 20, 20), None),
        (Windowed("k", 12, 20), 3),
    ]
    assert d.store("w") == {Windowed("k", 0, 3): 2, Windowed("k", 12, 20): 3}
    assert d.task.stores["w"].fetch("k", 4, 12) == [(12, 20, 3)]
    assert d.task.stores["w"].fetch("k", 0, 100) == [(0, 3, 2), (12, 20, 3)]
    d.task.close()


def test_session_late_record_is_dropped_after_gap_and_grace(tmp_path) -> None:
    d = Driver(session_app(5, 10), tmp_path)
    d.pipe("k", 0)
    d.pipe("k", 100)
    d.pipe("k", 1)  # would extend [0, 0] to [0, 1]; 1 < 100 - 10 - 5: dropped
    assert d.task.dropped_records == 1
    d.pipe("k", 90)  # 90 >= 85: a new session, still accepted
    assert d.store("w") == {Windowed("k", 100, 100): 1, Windowed("k", 90, 90): 1}
    d.task.close()


def test_session_reduce_and_aggregate_with_merger(tmp_path) -> None:
    app = App({"application.id": "app"})
    (
        app.stream("in", key_serde="str", value_serde="str")
        .group_by_key()
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(10, 100))
        .aggregate(
            list,
            lambda _k, v, agg: [*agg, v],
            lambda _k, a, b: a + b,
            store="pages",
            value_serde="json",
        )
    )
    d = Driver(app, tmp_path)
    d.pipe("u", 0, b"home")
    d.pipe("u", 20, b"cart")
    d.pipe("u", 10, b"search")  # within 10 of both sessions: bridges them
    assert d.store("pages") == {Windowed("u", 0, 20): ["home", "cart", "search"]}
    d.task.close()


# -- suppress ---------------------------------------------------------------------------------


def final_count_app(**kw: Any) -> App:
    app = App({"application.id": "app"})
    (
        app.stream("in", key_serde="str")
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(10, 5))
        .count(store="w", **kw)
        .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
        .to_stream()
        .to("out", value_serde="int")
    )
    return app


def test_until_window_closes_emits_one_final_result_per_window_after_close(tmp_path) -> None:
    d = Driver(final_count_app(), tmp_path)
    for key, ts in [("a", 1), ("a", 2), ("b", 3), ("a", 12), ("a", 7), ("b", 14)]:
        d.pipe(key, ts)
    assert d.out() == []  # stream time 14 < window end 10 + grace 5
    d.pipe("c", 15)
    assert d.out() == [(Windowed("a", 0, 10), 3), (Windowed("b", 0, 10), 1)]
    d.pipe("a", 8)  # late for [0, 10): dropped upstream, nothing more is emitted
    d.pipe("c", 24)
    assert d.out() == []
    d.pipe("c", 25)
    assert d.out() == [
        (Windowed("a", 10, 20), 1),
        (Windowed("b", 10, 20), 1),
        (Windowed("c", 10, 20), 1),
    ]
    assert d.task.dropped_records == 1
    d.task.close()


@pytest.mark.parametrize("in_memory", [False, True])
def test_suppress_buffer_survives_a_restart_without_loss_or_duplicates(
    tmp_path, in_memory: bool
) -> None:
    kw = {"default_store": IN_MEMORY} if in_memory else {}
    d = Driver(final_count_app(), tmp_path, **kw)
    for key, ts in [("a", 1), ("b", 2), ("a", 9), ("a", 16)]:
        d.pipe(key, ts)
    assert d.out() == [(Windowed("a", 0, 10), 2), (Windowed("b", 0, 10), 1)]
    d.pipe("b", 17)  # buffered: [10, 20) of a and b
    d.restart(restore_changelog=in_memory)
    d.pipe("a", 19)
    assert d.out() == []
    d.pipe("z", 40)
    assert d.out() == [(Windowed("a", 10, 20), 2), (Windowed("b", 10, 20), 1)]
    d.task.close()


def test_emit_strategy_on_window_close_is_emit_final(tmp_path) -> None:
    app = App({"application.id": "app"})
    (
        app.stream("in", key_serde="str")
        .group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(10))
        .count(store="w", emit_strategy="on_window_close")
        .to_stream()
        .to("out", value_serde="int")
    )
    d = Driver(app, tmp_path)
    for ts in (1, 2, 3):
        d.pipe("a", ts)
    assert d.out() == []
    d.pipe("a", 10)
    assert d.out() == [(Windowed("a", 0, 10), 3)]
    assert d.store("w")[Windowed("a", 10, 20)] == 1  # the window store stays queryable
    d.task.close()


def test_session_emit_final_waits_for_gap_and_grace_and_skips_merged_sessions(tmp_path) -> None:
    d = Driver(session_app(5, 2, emit_strategy="on_window_close"), tmp_path)
    d.pipe("k", 0)
    d.pipe("k", 4)  # [0, 0] is replaced by [0, 4]: its buffered result becomes a tombstone
    d.pipe("x", 11)
    # Kafka (KIP-825): [0, 4] is emitted once its end is below stream time - gap 5 - grace 2
    assert d.out() == []
    d.pipe("x", 12)
    assert d.out() == [(Windowed("k", 0, 4), 2)]
    d.task.close()


def count_table_app(suppressed: Suppressed) -> App:
    app = App({"application.id": "app"})
    (
        app.stream("in", key_serde="str")
        .group_by_key()
        .count(store="c")
        .suppress(suppressed)
        .to_stream()
        .to("out", value_serde="int")
    )
    return app


def plain_out(d: Driver) -> list[tuple[str, int]]:
    got = [(k.decode(), struct.unpack(">q", v)[0]) for k, v in d.collector.to("out")]
    d.collector.sent = [s for s in d.collector.sent if s[0] != "out"]
    return got


def test_until_time_limit_rate_limits_per_key(tmp_path) -> None:
    d = Driver(count_table_app(Suppressed.until_time_limit(10, BufferConfig.unbounded())), tmp_path)
    d.pipe("a", 0)
    d.pipe("a", 5)  # replaces a's value; a's timer still started at 0
    d.pipe("b", 6)
    assert plain_out(d) == []
    d.pipe("a", 10)
    assert plain_out(d) == [("a", 3)]
    d.pipe("c", 15)
    assert plain_out(d) == []
    d.pipe("c", 16)
    assert plain_out(d) == [("b", 1)]
    d.task.close()


def test_until_time_limit_zero_passes_through_and_eager_buffer_emits_early(tmp_path) -> None:
    d = Driver(count_table_app(Suppressed.until_time_limit(0, BufferConfig.unbounded())), tmp_path)
    d.pipe("a", 0)
    d.pipe("a", 1)
    assert plain_out(d) == [("a", 1), ("a", 2)]
    d.task.close()
    eager = Suppressed.until_time_limit(1_000, BufferConfig.max_records_of(2))
    e = Driver(count_table_app(eager), tmp_path / "eager")
    for key, ts in [("a", 0), ("b", 1), ("c", 2)]:
        e.pipe(key, ts)
    assert plain_out(e) == [("a", 1)]  # over capacity: the oldest is emitted early
    e.task.close()
    strict = Suppressed.until_time_limit(
        1_000, BufferConfig.max_records_of(1).shut_down_when_full()
    )
    s = Driver(count_table_app(strict), tmp_path / "strict")
    s.pipe("a", 0)
    # a full strict buffer fails the record; with the default processing handler (fail)
    # that is the thread's failure, carrying the buffer's error as its cause
    with pytest.raises(RecordFailedError) as failed:
        s.pipe("b", 1)
    assert isinstance(failed.value.cause, BufferFullError)
    s.task.close()


# -- bad input at build time ------------------------------------------------------------------


def test_bad_windows_and_suppress_are_refused_at_build_time() -> None:
    with pytest.raises(ConfigError, match="window size must be positive"):
        TimeWindows.of_size_with_no_grace(-5)
    with pytest.raises(ConfigError, match="grace period must not be negative"):
        TimeWindows.of_size_and_grace(10, -1)
    with pytest.raises(ConfigError, match="advance"):
        TimeWindows.of_size_with_no_grace(10).advance_by(11)
    with pytest.raises(ConfigError, match="inactivity gap must be positive"):
        SessionWindows.of_inactivity_gap_with_no_grace(0)
    with pytest.raises(ConfigError, match="time difference must be positive"):
        SlidingWindows.of_time_difference_and_grace(-1, 0)
    with pytest.raises(TypeError, match=r"size_ms= \(use windows=TimeWindows"):
        App({"application.id": "x"}).stream("in").group_by_key().windowed_by(size_ms=10)
    with pytest.raises(ConfigError, match="retention 1000 ms is shorter"):
        windowed_count(TimeWindows.of_size_and_grace(1_000, 500), retention=1_000)
    with pytest.raises(ConfigError, match="only defined for windowed computations"):
        count_table_app(Suppressed.until_window_closes(BufferConfig.unbounded()))
    with pytest.raises(ConfigError, match="strict buffer"):
        Suppressed.until_window_closes(BufferConfig.max_records_of(10))
    with pytest.raises(ConfigError, match="emit_strategy"):
        windowed_count(TimeWindows.of_size_with_no_grace(10), emit_strategy="sometimes")


def test_window_ids_stay_unique(tmp_path) -> None:
    """Two windowed aggregations in one topology get distinct stores and processors."""
    app = App({"application.id": "app"})
    grouped = app.stream("in", key_serde="str").group_by_key()
    grouped.windowed_by(TimeWindows.of_size_with_no_grace(10)).count(store="w1")
    grouped.windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(10)).count(store="w2")
    assert set(app.topology.stores) == {"w1", "w2"}
    assert len(list(itertools.chain(app.topology.subtopologies("app")))) == 1
