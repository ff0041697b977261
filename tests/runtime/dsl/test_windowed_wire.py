"""Windowed keys on the wire as Kafka Streams 4.3.1 writes them (issue 38), on the embedded
broker: a windowed count written with ``to()`` and no key serde is read back raw and decoded
by hand from Kafka's layout (``WindowKeySchema``: inner key + 8-byte start; ``SessionKeySchema``:
inner key + 8-byte end + 8-byte start), each in the partition of murmur2(inner key) (Kafka's
``WindowedStreamPartitioner``), the one its key's input went to; ``metadata_for_key`` takes a
partitioner as Kafka's ``queryMetadataForKey(store, key, StreamPartitioner)``."""

from __future__ import annotations

import struct
import time
from pathlib import Path
from typing import Any

import pytest
from aiokafka.partitioner import DefaultPartitioner
from confluent_kafka import Producer

from streamrt.runtime import (
    App,
    SessionWindowedSerde,
    SessionWindows,
    SlidingWindows,
    TimeWindowedSerde,
    TimeWindows,
    Windowed,
)
from streamrt.runtime.graph.topology import SinkNode
from streamrt.runtime.graph.windowed_serdes import WindowedStreamPartitioner
from streamrt.serde import StrSerde
from tests.kafka_helpers import create_topic, read_all, wait_until

PARTITIONS = 4
USERS = [f"user-{i}" for i in range(8)]
WINDOW_MS = 10_000
# record times near now (the broker's retention deletes older ones), on a window boundary
BASE = int(time.time() * 1000) // 60_000 * 60_000 - 60_000


def by_hash(key: bytes) -> int:
    every = list(range(PARTITIONS))
    return int(DefaultPartitioner()(key, every, every))


def produce_clicks(bootstrap: str, topic: str) -> dict[str, int]:
    """Two clicks per user (windows BASE and BASE + 10 000), written by librdkafka's Java-compatible
    murmur2 partitioner; the partition each user's clicks went to."""
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    placed: dict[str, int] = {}

    def delivered(err: Any, msg: Any) -> None:
        assert err is None, err
        placed[msg.key().decode()] = msg.partition()

    for user in USERS:
        for ts in (BASE + 1_000, BASE + 12_000):
            producer.produce(topic, b"click", user.encode(), timestamp=ts, on_delivery=delivered)
    assert producer.flush(30) == 0
    return placed


def windowed_app(bootstrap: str, state: Path) -> App:
    app = App(
        {
            "application.id": "winwire",
            "bootstrap.servers": bootstrap,
            "state.dir": str(state),
            "commit.interval.ms": "100",
            "statestore.cache.max.bytes": "0",
            "session.timeout.ms": "6000",
            "heartbeat.interval.ms": "500",
        }
    )
    grouped = app.stream("ww-clicks", key_serde="str", value_serde="str").group_by_key()
    counts = grouped.windowed_by(TimeWindows.of_size_and_grace(WINDOW_MS, 86_400_000))
    counts.count(store="ww-counts").to_stream().to("ww-counts-out", value_serde="int")
    sessions = grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(60_000, 86_400_000))
    sessions.count(store="ww-sessions").to_stream().to("ww-sessions-out", value_serde="int")
    return app


def decoded(bootstrap: str, topic: str, suffix: int) -> dict[tuple[bytes, int, int], Any]:
    """Latest value per raw windowed key: (inner key, the trailing longs, partition)."""
    out: dict[tuple[bytes, int, int], Any] = {}
    for r in read_all(bootstrap, topic):
        inner, tail = r.key[:-suffix], r.key[-suffix:]
        longs = struct.unpack(f">{suffix // 8}q", tail)
        value = None if r.value is None else struct.unpack(">q", r.value)[0]
        out[(inner, longs, r.partition)] = value  # type: ignore[index]
    return out


def settled(got: Any, want: dict[Any, Any], what: str) -> None:
    """Wait for ``got() == want``; on timeout show both (a wrong layout or partition)."""
    try:
        wait_until(lambda: got() == want, what=what)
    except AssertionError:
        assert got() == want, what


def test_windowed_results_carry_kafkas_bytes_in_the_inner_keys_partition(
    broker, tmp_path: Path
) -> None:
    bootstrap = broker.bootstrap
    for topic in ("ww-clicks", "ww-counts-out", "ww-sessions-out"):
        create_topic(bootstrap, topic, PARTITIONS)
    input_partition = produce_clicks(bootstrap, "ww-clicks")
    app = windowed_app(bootstrap, tmp_path)
    app.start()
    try:
        want_windows = {
            (u.encode(), (BASE + start,), input_partition[u]): 1
            for u in USERS
            for start in (0, 10_000)
        }
        windows = lambda: decoded(bootstrap, "ww-counts-out", 8)  # noqa: E731
        settled(windows, want_windows, "time-windowed counts as inner key + start")
        # sessions: the second click (11 s later, gap 60 s) merges the first one's session
        ends_starts = (BASE + 12_000, BASE + 1_000)
        want_sessions = {(u.encode(), ends_starts, input_partition[u]): 2 for u in USERS}

        def sessions() -> dict[tuple[bytes, int, int], Any]:
            return {k: v for k, v in decoded(bootstrap, "ww-sessions-out", 16).items() if v}

        settled(sessions, want_sessions, "session counts as inner key + end + start")
        assert all(input_partition[u] == by_hash(u.encode()) for u in USERS)

        # queryMetadataForKey(store, key, StreamPartitioner): the partitioner picks the task
        sub = app.queries.task_for_key("ww-counts", "user-0").split("_")[0]
        assert app.queries.task_for_key("ww-counts", "user-0") == f"{sub}_{by_hash(b'user-0')}"
        elsewhere = (by_hash(b"user-0") + 1) % PARTITIONS
        moved = app.queries.task_for_key(
            "ww-counts", "user-0", lambda t, k, v, n: {(by_hash(k.encode()) + 1) % n}
        )
        assert moved == f"{sub}_{elsewhere}"
        owner = app.metadata_for_key("ww-counts", "user-0", partitioner=lambda t, k, v, n: None)
        assert owner is not None and f"{sub}_{by_hash(b'user-0')}" in owner.tasks
        with pytest.raises(ValueError, match="one partition"):
            app.metadata_for_key("ww-counts", "user-0", partitioner=lambda t, k, v, n: {0, 1})
        with pytest.raises(ValueError, match="one partition"):
            app.metadata_for_key("ww-counts", Windowed("user-0", 0, 1), lambda *_: {PARTITIONS})
    finally:
        app.stop()
    assert app.fatal_error is None


# -- the serdes alone: Kafka's documented layouts, byte for byte ---------------------------


def test_time_windowed_serde_writes_inner_key_and_start_and_reads_end_from_the_size() -> None:
    serde = TimeWindowedSerde(StrSerde(), 5_000)
    data = serde.serialize(Windowed("k1", 10_000, 15_000))
    assert data == b"k1" + (10_000).to_bytes(8, "big")
    assert serde.deserialize(data) == Windowed("k1", 10_000, 15_000)
    # the end is rebuilt from the size given, not read: another size, another end
    assert TimeWindowedSerde(StrSerde(), 7).deserialize(data) == Windowed("k1", 10_000, 10_007)
    # Kafka truncates an end past Long.MAX to Long.MAX
    big = TimeWindowedSerde(StrSerde(), 2**62).deserialize(b"k" + (2**62).to_bytes(8, "big"))
    assert big == Windowed("k", 2**62, 2**63 - 1)


def test_session_windowed_serde_writes_inner_key_end_then_start() -> None:
    serde = SessionWindowedSerde(StrSerde())
    data = serde.serialize(Windowed("k1", 3, 9))
    assert data == b"k1" + (9).to_bytes(8, "big") + (3).to_bytes(8, "big")
    assert serde.deserialize(data) == Windowed("k1", 3, 9)


def test_windowed_serdes_refuse_bad_bytes_and_sizes_with_clear_errors() -> None:
    assert TimeWindowedSerde(StrSerde(), 5).deserialize(b"") is None  # Kafka: a null key
    assert SessionWindowedSerde(StrSerde()).deserialize(None) is None
    with pytest.raises(ValueError, match="at least 8 bytes"):
        TimeWindowedSerde(StrSerde(), 5).deserialize(b"abc")
    with pytest.raises(ValueError, match="at least 16 bytes"):
        SessionWindowedSerde(StrSerde()).deserialize(b"k" + bytes(8))
    with pytest.raises(TypeError, match="window size in ms"):
        TimeWindowedSerde(StrSerde(), None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="> 0"):
        TimeWindowedSerde(StrSerde(), 0)


def test_windowed_aggregations_pick_kafkas_serde_with_their_window_size() -> None:
    app = App({"application.id": "serdes"})
    grouped = app.stream("in", key_serde="str").group_by_key()
    tables = {
        "hopping": grouped.windowed_by(TimeWindows.of_size_with_no_grace(60).advance_by(20)),
        "sliding": grouped.windowed_by(SlidingWindows.of_time_difference_with_no_grace(30)),
        "session": grouped.windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(10)),
    }
    serdes = {name: w.count(store=name).to_stream().node.key_serde for name, w in tables.items()}
    assert (
        isinstance(serdes["hopping"], TimeWindowedSerde) and serdes["hopping"].window_size_ms == 60
    )
    assert (
        isinstance(serdes["sliding"], TimeWindowedSerde) and serdes["sliding"].window_size_ms == 30
    )
    assert isinstance(serdes["session"], SessionWindowedSerde)


def test_the_removed_windowed_serde_names_its_replacements() -> None:
    import streamrt.runtime.dsl as dsl

    with pytest.raises(AttributeError, match=r"TimeWindowedSerde.*SessionWindowedSerde"):
        dsl.WindowedSerde  # noqa: B018


def test_only_to_defaults_to_the_inner_key_partitioner_as_kafkas_stream_sink_node() -> None:
    app = App({"application.id": "sinks"})
    counts = (
        app.stream("in", key_serde="str")
        .group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(10))
        .count(store="c")
        .to_stream()
    )

    def mine(topic: str, key: Any, value: Any, count: int) -> set[int]:
        return {0}

    counts.to("windowed")
    counts.to("chosen", partitioner=mine)
    counts.repartition(name="moved").to("moved-out")  # a repartition: the producer's default
    counts.map(lambda w, v: (w.key, v), key_serde="str").to("plain")
    sinks = {n.topic: n.partitioner for n in app.topology.nodes.values() if isinstance(n, SinkNode)}
    assert isinstance(sinks.pop("windowed"), WindowedStreamPartitioner)
    assert isinstance(sinks.pop("moved-out"), WindowedStreamPartitioner)  # still windowed keys
    assert sinks == {"chosen": mine, "moved-repartition": None, "plain": None}
