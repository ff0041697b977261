"""Word count end to end on both brokers (embedded, Apache Kafka): real aiokafka, real RocksDB."""

from __future__ import annotations

import struct
from pathlib import Path

from streamrt.runtime import App, TimeWindows
from streamrt.runtime.dsl import TimeWindowedSerde
from streamrt.serde import StrSerde
from tests.kafka_helpers import create_topic, latest_by_key, produce, read_all, wait_until

LINES = ["the quick brown fox", "the lazy dog", "The fox"]
EXPECTED = {"the": 3, "quick": 1, "brown": 1, "fox": 2, "lazy": 1, "dog": 1}


def wordcount_app(bootstrap: str, state_dir: Path, **settings: str) -> App:
    app = App(
        {
            "application.id": "wc",
            "bootstrap.servers": bootstrap,
            "state.dir": str(state_dir),
            "commit.interval.ms": "200",
            "session.timeout.ms": "6000",
            "heartbeat.interval.ms": "500",
            **settings,
        }
    )
    (
        app.stream("lines", key_serde="str", value_serde="str")
        .flat_map(lambda _k, line: [(w, w) for w in line.lower().split()], key_serde="str")
        .group_by_key(name="words")
        .count(store="counts")
        .to_stream()
        .to("counts-out", value_serde="int")
    )
    return app


def counts(bootstrap: str) -> dict[str, int]:
    return {
        k.decode(): struct.unpack(">q", v)[0]
        for k, v in latest_by_key(read_all(bootstrap, "counts-out")).items()
    }


def wait_for_counts(app: App, bootstrap: str, expected: dict[str, int]) -> None:
    """Wait for ``expected`` in the sink; a timeout says what the app was doing (its state,
    each thread's tasks) and what the sink held, not just that the counts never came."""
    try:
        wait_until(lambda: counts(bootstrap) == expected, what="word counts")
    except AssertionError as exc:
        threads = [
            (
                t.thread_instance_id,
                t.state.name,
                t.active_tasks,
                t.restoring_tasks,
                t.records_processed,
            )
            for t in app.metadata_for_local_threads()
        ]
        raise AssertionError(
            f"{exc}; app {app.state.name}, fatal={app.fatal_error!r}, threads {threads}, "
            f"sink {counts(bootstrap)}"
        ) from None


def test_word_count_gives_exact_counts(any_broker, tmp_path: Path) -> None:
    create_topic(any_broker.bootstrap, "lines", 2)
    create_topic(any_broker.bootstrap, "counts-out", 2)
    produce(any_broker.bootstrap, "lines", [(None, line.encode()) for line in LINES])
    app = wordcount_app(any_broker.bootstrap, tmp_path / "state", **{"group.instance.id": "wc-1"})
    app.start()
    try:
        wait_for_counts(app, any_broker.bootstrap, EXPECTED)
        threads = app.metadata_for_local_threads()
        assert [t.thread_instance_id for t in threads] == ["wc-1-thread-1"]
        assert (tmp_path / "state" / "wc" / "1_0" / "counts").is_dir()
    finally:
        app.stop()
    assert app.fatal_error is None


def test_windowed_count_gives_exact_results(any_broker, tmp_path: Path) -> None:
    # 1970 timestamps: keep them (else the broker rolls the segment by time and deletes it)
    create_topic(any_broker.bootstrap, "clicks", 1, **{"retention.ms": "-1"})
    create_topic(any_broker.bootstrap, "clicks-per-window", 1, **{"retention.ms": "-1"})
    produce(
        any_broker.bootstrap,
        "clicks",
        [(b"u", b"x")] * 3 + [(b"v", b"x")],
        timestamps=[1_000, 9_000, 11_000, 12_000],
    )
    app = App(
        {
            "application.id": "win",
            "bootstrap.servers": any_broker.bootstrap,
            "state.dir": str(tmp_path / "state"),
            "commit.interval.ms": "200",
        }
    )
    (
        app.stream("clicks", key_serde="str")
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(10_000, 86_390_000))
        .count(store="clicks-windowed")
        .to_stream()
        .to("clicks-per-window", value_serde="int")
    )
    serde = TimeWindowedSerde(StrSerde(), 10_000)

    def results() -> dict[tuple[str, int], int]:
        latest = latest_by_key(read_all(any_broker.bootstrap, "clicks-per-window"))
        out = {}
        for k, v in latest.items():
            w = serde.deserialize(k)
            out[(w.key, w.start)] = struct.unpack(">q", v)[0]
        return out

    app.start()
    try:
        wait_until(
            lambda: results() == {("u", 0): 2, ("u", 10_000): 1, ("v", 10_000): 1},
            what="windowed counts",
        )
    finally:
        app.stop()


def test_threads_added_and_removed_keep_stable_ids_and_events_flow(any_broker, tmp_path) -> None:
    create_topic(any_broker.bootstrap, "lines", 4)
    create_topic(any_broker.bootstrap, "counts-out", 4)
    app = wordcount_app(any_broker.bootstrap, tmp_path / "state", **{"group.instance.id": "ev"})
    events: list[dict] = []
    app.on_event(events.append)
    app.start()
    try:
        wait_until(lambda: any(e["type"] == "assignment" for e in events), what="assignment")
        assert app.add_stream_thread() == 2
        assert app.remove_stream_thread() == 2
        assert app.add_stream_thread() == 2  # the lowest free index is reused
        wait_until(
            lambda: (
                [t.thread_instance_id for t in app.metadata_for_local_threads()]
                == ["ev-thread-1", "ev-thread-2"]
            ),
            what="two threads",
        )
        # the second thread's tasks come from the first: under cooperative rebalancing (the
        # default) that revocation happens once the new thread's join completes, not at once
        wait_until(
            lambda: all(t.active_tasks for t in app.metadata_for_local_threads()),
            what="both threads hold tasks",
        )
    finally:
        app.stop()
    event = next(e for e in events if e["type"] == "assignment")
    assert event["instance_id"] == "ev" and event["thread"] == 1
    assert {"partitions", "tasks"} <= set(event["fields"])
    assert {e["type"] for e in events} >= {"thread_state", "assignment", "revocation"}


def test_in_memory_stores_restore_fully_and_the_app_reports_its_state(any_broker, tmp_path) -> None:
    """``default.dsl.store=in_memory``: counts stay exact across a restart because the store
    is rebuilt from its changelog; the state listener sees REBALANCING → RUNNING → ... →
    NOT_RUNNING."""
    create_topic(any_broker.bootstrap, "lines", 2)
    create_topic(any_broker.bootstrap, "counts-out", 2)
    produce(any_broker.bootstrap, "lines", [(None, line.encode()) for line in LINES])
    settings = {"group.instance.id": "mem-1", "default.dsl.store": "in_memory"}
    app = wordcount_app(any_broker.bootstrap, tmp_path / "state", **settings)
    states: list[tuple[str, str]] = []
    app.set_state_listener(lambda new, old: states.append((old.name, new.name)))
    app.start()
    try:
        wait_for_counts(app, any_broker.bootstrap, EXPECTED)
        wait_until(lambda: app.state.name == "RUNNING", what="app RUNNING")
    finally:
        app.stop()
    assert states[0] == ("CREATED", "REBALANCING")
    assert ("REBALANCING", "RUNNING") in states
    assert states[-2:] == [(states[-2][0], "PENDING_SHUTDOWN"), ("PENDING_SHUTDOWN", "NOT_RUNNING")]
    assert not (tmp_path / "state" / "wc" / "1_0" / "counts").exists()  # nothing on disk

    produce(any_broker.bootstrap, "lines", [(None, b"fox")])
    again = wordcount_app(any_broker.bootstrap, tmp_path / "state", **settings)
    events: list[dict] = []
    again.on_event(events.append)
    again.start()
    try:
        wait_until(
            lambda: counts(any_broker.bootstrap) == {**EXPECTED, "fox": 3},
            what="counts after restart",
        )
    finally:
        again.stop()
    restored = sum(e["fields"]["records"] for e in events if e["type"] == "restore_complete")
    assert restored >= len(EXPECTED)  # the in-memory store came back from its changelog
    assert {"restore_check", "restore_ready"} <= {e["type"] for e in events}
