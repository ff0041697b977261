"""The sink's share of the per-record path: ``StreamTask.process`` for source -> map_values ->
sink, records per CPU second (``time.process_time``, so a loaded machine's waiting is left
out). Issue 38 put the topic-extractor check on this path (``to(extractor)``).

    PYTHONPATH=<checkout> .venv/bin/python bench/sink_path.py [records]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from streamrt.runtime import App
from streamrt.runtime.engine.tasks.task import StreamTask, TaskId


class _Count:
    """A collector that only counts what the sink sends."""

    def __init__(self) -> None:
        self.n = 0

    def send(self, *_args: object, **_kwargs: object) -> None:
        self.n += 1


def main(records: int) -> float:
    app = App({"application.id": "bench"})
    app.stream("in", key_serde="str", value_serde="str").map_values(str.upper).to("out")
    sub = app.topology.subtopologies("bench")[0]
    with tempfile.TemporaryDirectory() as d:
        sent = _Count()
        task = StreamTask(TaskId(0, 0), sub, app.topology, "bench", Path(d), sent)  # type: ignore[arg-type]
        task.open()
        start = time.process_time()
        for i in range(records):
            task.process("in", i, i, b"k", b"value")
        elapsed = time.process_time() - start
        task.close()
    assert sent.n == records
    return records / elapsed


if __name__ == "__main__":
    print(f"{main(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000):.0f}")
