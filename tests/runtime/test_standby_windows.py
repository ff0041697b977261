"""A standby of a task with a window store keeps it in the active task's (segmented) layout,
so the active task that opens the same directory later finds the windows the standby applied.

Real tasks and real RocksDB stores on disk; the changelog rows are the ones the active task
sent, applied through the standby's own path (``StandbyTask.apply``).
"""

from __future__ import annotations

from pathlib import Path

from streamrt.runtime import App, TimeWindows, Windowed
from streamrt.runtime.engine.restore.standby import StandbyTask
from streamrt.runtime.engine.restore_consumer import ChangelogBatch
from streamrt.topic_partition import TopicPartition
from tests.runtime.test_task import ListCollector, make_task

CHANGELOG = TopicPartition("app-per-window-changelog", 0)


def windowed_app() -> App:
    app = App({"application.id": "app"})
    (
        app.stream("clicks", key_serde="str")
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(10_000, 60_000))
        .count(store="per-window")
    )
    return app


def test_a_standby_window_store_is_readable_by_the_active_task(tmp_path: Path) -> None:
    """Before: the standby registered the window store without its segments, so it wrote a
    plain key-value store (and its changelog offset) into the directory where the active task
    keeps a segmented one: the active task opened at the standby's offset, restored nothing,
    and its windows were empty (lost counts after a standby became active)."""
    app = windowed_app()
    collector = ListCollector()
    source = make_task(app, 0, 0, tmp_path / "elsewhere", collector)
    source.open()
    for offset, ts in enumerate([1_000, 2_000, 12_000]):
        source.process("clicks", offset, ts, b"u", b"x")
    source.flush_cache()
    source.close()
    rows = [(k, v, ts) for t, k, v, _p, ts in collector.sent if t == CHANGELOG.topic]
    assert rows

    sub = app.topology.subtopologies("app")[0]
    standby = StandbyTask("0_0", sub, app.topology, "app", tmp_path / "here")
    standby.open()
    standby.apply(CHANGELOG, ChangelogBatch(rows, len(rows), 0))
    standby.close()

    active = make_task(app, 0, 0, tmp_path / "here", ListCollector())
    assert active.open() == {CHANGELOG: len(rows)}  # nothing left to restore
    try:
        counts = dict(active.stores["per-window"].items())
    finally:
        active.close()
    assert counts == {Windowed("u", 0, 10_000): 2, Windowed("u", 10_000, 20_000): 1}
