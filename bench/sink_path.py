"""The sink's share of the per-record path: ``StreamTask.process`` for source -> map_values ->
sink, records per CPU second (``time.process_time``, so a loaded machine's waiting is left
out). Issue 38 put the topic-extractor check on this path (``to(extractor)``), then the
``SinkWriter`` with its stream partitioner (``to(partitioner=)``): ``none`` (default), a
partitioner answering ``None`` (``default``) or one partition of 4 (``one``).

    PYTHONPATH=<checkout> .venv/bin/python bench/sink_path.py [records] [none|default|one]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from streamrt.runtime import App
from streamrt.runtime.engine.tasks.task import StreamTask, TaskId


class _Count:
    """A collector that only counts what the sink sends."""

    def __init__(self) -> None:
        self.n = 0

    def send(self, *_args: object, **_kwargs: object) -> None:
        self.n += 1


PARTITIONERS: dict[str, Any] = {
    "none": None,
    "default": lambda topic, key, value, count: None,
    "one": lambda topic, key, value, count: {len(value) % count},
}


def main(records: int, mode: str = "none") -> float:
    app = App({"application.id": "bench"})
    stream = app.stream("in", key_serde="str", value_serde="str").map_values(str.upper)
    kwargs = {} if mode == "none" else {"partitioner": PARTITIONERS[mode]}
    stream.to("out", **kwargs)
    sub = app.topology.subtopologies("bench")[0]
    with tempfile.TemporaryDirectory() as d:
        sent = _Count()
        extra = {} if mode == "none" else {"partition_counts": _four()}
        task = StreamTask(TaskId(0, 0), sub, app.topology, "bench", Path(d), sent, **extra)  # type: ignore[arg-type]
        task.open()
        start = time.process_time()
        for i in range(records):
            task.process("in", i, i, b"k", b"value")
        elapsed = time.process_time() - start
        task.close()
    assert sent.n == records
    return records / elapsed


def _four() -> Any:
    from streamrt.runtime.engine.tasks.sink_writer import fixed_counts

    return fixed_counts(4, checks_range=True)


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    print(f"{main(n, sys.argv[2] if len(sys.argv) > 2 else 'none'):.0f}")
