"""Records/s of one StreamTask (RocksDB stores in a temporary directory, no broker) for the
three processors that keep their stream time in a store (branch ``review9``): a left
stream-stream join, a stream-table join with a grace period and a time-limit suppress; and
the changelog records written per input record. Five runs each; prints median, min, max.

    .venv/bin/python bench/stateful_times.py
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from streamrt.runtime import App
from streamrt.runtime.dsl import BufferConfig, JoinWindows, Suppressed
from streamrt.runtime.engine.tasks.task import StreamTask, TaskId
from streamrt.runtime.graph.materialized import Materialized

N = 20_000
Case = Callable[[], tuple[App, Callable[[int], str]]]


class Counting:
    """A collector counting what it is sent, and how much of it goes to changelogs."""

    def __init__(self) -> None:
        self.logged = 0

    def send(self, topic: str, *_args: object) -> None:
        self.logged += topic.endswith("-changelog")


def stream_join() -> tuple[App, Callable[[int], str]]:
    app = App({"application.id": "b"})
    left = app.stream("left", key_serde="str", value_serde="str")
    right = app.stream("right", key_serde="str", value_serde="str")
    windows = JoinWindows.of_time_difference_and_grace(1000, 0)
    left.left_join(right, lambda x, y: f"{x}{y}", windows=windows).to(
        "out", key_serde="str", value_serde="str"
    )
    return app, lambda i: "left" if i % 2 else "right"


def grace_join() -> tuple[App, Callable[[int], str]]:
    app = App({"application.id": "b"})
    versioned = Materialized.as_versioned("tv", 100_000)
    table = app.table("t", key_serde="str", value_serde="str", store=versioned)
    stream = app.stream("s", key_serde="str", value_serde="str")
    stream.left_join(table, lambda x, y: f"{x}{y}", grace=1000).to(
        "out", key_serde="str", value_serde="str"
    )
    return app, lambda i: "s" if i % 2 else "t"


def suppress() -> tuple[App, Callable[[int], str]]:
    app = App({"application.id": "b"})
    limit = Suppressed.until_time_limit(1000, BufferConfig.unbounded())
    (
        app.stream("in", key_serde="str", value_serde="str")
        .group_by_key()
        .count(store="c")
        .suppress(limit)
        .to_stream()
        .to("out", key_serde="str", value_serde="int")
    )
    return app, lambda i: "in"


def run(case: Case) -> tuple[float, float]:
    app, topic = case()
    sub = app.topology.subtopologies("b")[0]
    collector = Counting()
    with tempfile.TemporaryDirectory() as d:
        task = StreamTask(TaskId(0, 0), sub, app.topology, "b", Path(d), collector)
        task.open()
        start = time.perf_counter()
        for i in range(N):
            task.process(topic(i), i, i * 10, f"k{i % 100}".encode(), b"v")
        elapsed = time.perf_counter() - start
        task.close()
    return N / elapsed, collector.logged / N


def main() -> None:
    cases = {"stream-stream left join": stream_join, "grace join": grace_join, "suppress": suppress}
    for name, case in cases.items():
        runs = [run(case) for _ in range(5)]
        rates = [rate for rate, _ in runs]
        print(
            f"{name}: median {statistics.median(rates):.0f} rec/s "
            f"(min {min(rates):.0f}, max {max(rates):.0f}); changelog/record {runs[0][1]:.2f}"
        )


if __name__ == "__main__":
    main()
