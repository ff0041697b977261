"""Stateful DSL processors across a clean close and reopen (a static restart) and across a
restore from the changelog on another instance: each must go on exactly as the live task
would have (same output), with real StreamTasks on RocksDB stores in ``tmp_path``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from streamrt.runtime import App
from streamrt.runtime.dsl import BufferConfig, JoinWindows, Suppressed
from streamrt.runtime.engine.tasks.task import StreamTask, TaskId
from streamrt.runtime.graph.materialized import Materialized

Sent = tuple[str, bytes | None, bytes | None, int]


class Collector:
    """Every record a task sends: output topics and changelogs alike."""

    def __init__(self) -> None:
        self.sent: list[Sent] = []

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        timestamp_ms: int,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> None:
        self.sent.append((topic, key, value, timestamp_ms))

    def output(self) -> list[tuple[bytes | None, bytes | None, int]]:
        return [(k, v, ts) for topic, k, v, ts in self.sent if topic == "out"]


def suppressed_counts() -> App:
    app = App({"application.id": "app"})
    (
        app.stream("in", key_serde="str", value_serde="str")
        .group_by_key()
        .count(store="counts")
        .suppress(Suppressed.until_time_limit(10_000, BufferConfig.unbounded()).with_name("sup"))
        .to_stream()
        .to("out", key_serde="str", value_serde="int")
    )
    return app


def new_task(app: App, state_dir: Path, collector: Collector) -> StreamTask:
    sub = app.topology.subtopologies("app")[0]
    task = StreamTask(TaskId(0, 0), sub, app.topology, "app", state_dir, collector)
    task.open()
    return task


def feed(task: StreamTask, records: list[tuple[str, int]], first_offset: int) -> None:
    for i, (key, ts) in enumerate(records):
        task.process("in", first_offset + i, ts, key.encode(), b"v")


def commit_and_close(task: StreamTask) -> None:
    task.flush_cache()
    task.flush_state({tp: 0 for tp in task.changelogs.values()})
    task.close()


BEFORE = [("a", 1_000), ("a", 20_000)]  # a goes out at 20000; stream time is 20000
AFTER = [("b", 5_000), ("c", 6_000)]  # late: due at once (5000 <= 20000 - 10000)


def run_live(
    app_of: Callable[[], App], tmp_path: Path
) -> list[tuple[bytes | None, bytes | None, int]]:
    collector = Collector()
    task = new_task(app_of(), tmp_path / "live", collector)
    feed(task, BEFORE, 0)
    feed(task, AFTER, len(BEFORE))
    task.close()
    return collector.output()


def restore(task: StreamTask, old_owner: Collector) -> None:
    """Rebuild ``task``'s stores from the changelog records ``old_owner`` was sent."""
    for tp in task.changelogs.values():
        logged = [(k or b"", v, ts) for topic, k, v, ts in old_owner.sent if topic == tp.topic]
        task.state.restore_batch(tp, logged, len(logged))
        task.state.mark_restored(tp, len(logged))


def test_suppress_keeps_its_stream_time_across_a_reopen(tmp_path: Path) -> None:
    live = run_live(suppressed_counts, tmp_path)
    collector = Collector()
    first = new_task(suppressed_counts(), tmp_path / "static", collector)
    feed(first, BEFORE, 0)
    commit_and_close(first)
    second = new_task(suppressed_counts(), tmp_path / "static", collector)
    feed(second, AFTER, len(BEFORE))
    second.close()
    assert [k for k, _, _ in live] == [b"a", b"b", b"c"]
    assert collector.output() == live


def test_suppress_keeps_its_stream_time_across_a_restore(tmp_path: Path) -> None:
    live = run_live(suppressed_counts, tmp_path)
    collector = Collector()
    first = new_task(suppressed_counts(), tmp_path / "old-owner", collector)
    feed(first, BEFORE, 0)
    commit_and_close(first)
    moved = Collector()
    second = new_task(suppressed_counts(), tmp_path / "new-owner", moved)
    restore(second, collector)
    feed(second, AFTER, len(BEFORE))
    second.close()
    assert collector.output() + moved.output() == live


def grace_join() -> App:
    app = App({"application.id": "app"})
    table = app.table(
        "users",
        key_serde="str",
        value_serde="str",
        store=Materialized.as_versioned("users-v", 100_000),
    )
    clicks = app.stream("clicks", key_serde="str", value_serde="str")
    clicks.left_join(table, lambda c, u: f"{c}+{u}", grace=10_000).to(
        "out", key_serde="str", value_serde="str"
    )
    return app


def click(task: StreamTask, key: str, ts: int, offset: int) -> None:
    task.process("clicks", offset, ts, key.encode(), f"c{ts}".encode())


@pytest.mark.parametrize("restored", [False, True], ids=["reopen", "restore"])
def test_grace_join_keeps_its_stream_time(tmp_path: Path, restored: bool) -> None:
    """A click older than stream time - grace is joined at once, also after a restart."""
    live_out = Collector()
    live = new_task(grace_join(), tmp_path / "live", live_out)
    click(live, "u", 20_000, 0)  # buffered: stream time 20000, deadline 10000
    click(live, "v", 5_000, 1)  # too late to wait: joined at once
    live.close()
    assert live_out.output() == [(b"v", b"c5000+None", 5_000)]

    collector = Collector()
    first = new_task(grace_join(), tmp_path / "first", collector)
    click(first, "u", 20_000, 0)
    commit_and_close(first)
    again = Collector()
    second = new_task(grace_join(), tmp_path / ("other" if restored else "first"), again)
    if restored:
        restore(second, collector)
    click(second, "v", 5_000, 1)
    second.close()
    assert collector.output() + again.output() == live_out.output()


def stream_join(kind: str = "join") -> App:
    app = App({"application.id": "app"})
    left = app.stream("left", key_serde="str", value_serde="str")
    right = app.stream("right", key_serde="str", value_serde="str")
    windows = JoinWindows.of_time_difference_and_grace(1_000, 0)
    joined = getattr(left, kind)(right, lambda a, b: f"{a}+{b}", windows=windows)
    joined.to("out", key_serde="str", value_serde="str")
    return app


def side(task: StreamTask, topic: str, value: str, ts: int, offset: int) -> None:
    task.process(topic, offset, ts, b"k", value.encode())


@pytest.mark.parametrize("restored", [False, True], ids=["reopen", "restore"])
def test_stream_join_keeps_both_records_of_one_key_and_time(tmp_path: Path, restored: bool) -> None:
    """Two left records with the same key and timestamp, a restart between them: a right
    record joins both, as on the live task (the second must not replace the first)."""
    collector = Collector()
    first = new_task(stream_join(), tmp_path / "first", collector)
    side(first, "left", "a", 5_000, 0)
    commit_and_close(first)
    again = Collector()
    second = new_task(stream_join(), tmp_path / ("other" if restored else "first"), again)
    if restored:
        restore(second, collector)
    side(second, "left", "b", 5_000, 1)
    side(second, "right", "r", 5_000, 0)
    second.close()
    assert sorted(v for _, v, _ in again.output()) == [b"a+r", b"b+r"]


def test_an_aborted_stream_join_leaves_no_stream_time_behind(tmp_path: Path) -> None:
    """A dirty close (exactly-once abort) drops what the aborted records did: the reopened
    task (same topology, same process) holds an unmatched left record as a fresh one does."""
    app = stream_join("left_join")
    collector = Collector()
    first = new_task(app, tmp_path, collector)
    side(first, "right", "late", 100_000, 0)  # aborted: must not move the join's stream time
    first.discard_uncommitted()
    first.close()
    again = Collector()
    second = new_task(app, tmp_path, again)
    side(second, "left", "a", 5_000, 0)  # no partner yet: waits for its window to close
    second.close()
    assert again.output() == []


@pytest.mark.parametrize("restored", [False, True], ids=["reopen", "restore"])
def test_stream_join_keeps_its_stream_time(tmp_path: Path, restored: bool) -> None:
    """An unmatched left record whose window closed long ago goes out at once, as on the live
    task, also after a restart in a new process (a new topology object)."""
    collector = Collector()
    first = new_task(stream_join("left_join"), tmp_path / "first", collector)
    side(first, "right", "r", 100_000, 0)
    commit_and_close(first)
    again = Collector()
    second = new_task(
        stream_join("left_join"), tmp_path / ("other" if restored else "first"), again
    )
    if restored:
        restore(second, collector)
    side(second, "left", "a", 5_000, 0)
    second.close()
    assert again.output() == [(b"k", b"a+None", 5_000)]
