"""The sessions fold's per-click path without the clients: ``StreamTask.process`` for source
-> ``group_by_key().aggregate`` (RocksDB store, cache off) -> ``to_stream`` -> sink, clicks
per CPU second (``time.process_time``: a loaded machine's waiting is left out). The producer,
its delivery reports and the consumer are left out, so what moves here is the runtime's own
Python per click (issue 40 item 1: the sessions fold against Quix Streams).

    PYTHONPATH=<checkout> .venv/bin/python bench/session_fold_path.py [clicks] [rounds]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from _peers_workloads import generate

from streamrt.examples.session_profiles import add_click, new_profile
from streamrt.runtime import App
from streamrt.runtime.engine.tasks.task import StreamTask, TaskId


class _Count:
    """A collector that only counts what is sent (changelog and sink records)."""

    def __init__(self) -> None:
        self.n = 0

    def send(self, *_args: object, **_kwargs: object) -> None:
        self.n += 1


def run(inputs: list[tuple[bytes, bytes]]) -> float:
    app = App({"application.id": "bench", "statestore.cache.max.bytes": 0})
    (
        app.stream("in", key_serde="str", value_serde="json")
        .group_by_key()
        .aggregate(new_profile, add_click, store="profiles")
        .to_stream()
        .to("out", value_serde="json")
    )
    sub = app.topology.subtopologies("bench")[0]
    with tempfile.TemporaryDirectory() as d:
        sent = _Count()
        task = StreamTask(TaskId(0, 0), sub, app.topology, "bench", Path(d), sent)  # type: ignore[arg-type]
        task.open()
        start = time.process_time()
        for i, (key, value) in enumerate(inputs):
            task.process("in", i, i, key, value)
        elapsed = time.process_time() - start
        task.close()
    assert sent.n == 2 * len(inputs), sent.n  # a changelog and a sink record per click
    return len(inputs) / elapsed


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    inputs = list(generate("sessions", n))  # the peers' input: users = clicks / 5
    rates = [run(inputs) for _ in range(rounds)]
    print(
        f"{n} clicks x {rounds}: median {statistics.median(rates):,.0f} clicks per CPU-s "
        f"({min(rates):,.0f}-{max(rates):,.0f})"
    )


if __name__ == "__main__":
    main()
