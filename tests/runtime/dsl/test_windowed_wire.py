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

from streamrt.runtime import App, SessionWindows, TimeWindows, Windowed
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
