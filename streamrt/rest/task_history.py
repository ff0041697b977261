"""TaskHistory: per-task lag and throughput of this instance over the last minutes.

Sampled from the threads' metadata every ``interval_s`` seconds on a grid (times rounded down
to a multiple of the interval), so the series of every instance line up and the console can
merge them without arithmetic in the browser. Throughput is records/s between two samples of
the same task on the same thread (a task that moved starts a new series).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from streamrt.runtime.metadata import ThreadMetadata

__all__ = ("TaskHistory", "TaskSample")


@dataclass(frozen=True, slots=True)
class TaskSample:
    lag: int | None
    records: int
    rate: float | None  # records/s since the previous sample; None: first sample here


class TaskHistory:
    def __init__(
        self,
        threads: Callable[[], Iterable[ThreadMetadata]],
        interval_s: float = 2.0,
        window_s: float = 300.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.threads = threads
        self.interval_s = interval_s
        self.clock = clock
        self._samples: deque[tuple[float, dict[str, TaskSample]]] = deque(
            maxlen=max(int(window_s / interval_s), 2)
        )

    def sample(self) -> bool:
        """Take a sample if this grid slot has none yet; True if one was taken."""
        slot = self.clock() // self.interval_s * self.interval_s
        if self._samples and self._samples[-1][0] >= slot:
            return False
        previous = self._samples[-1] if self._samples else None
        now: dict[str, TaskSample] = {}
        for t in self.threads():
            for task, records in t.task_records.items():
                key = f"{task}@{t.thread_name}"
                rate = None
                if previous is not None and key in previous[1]:
                    delta = records - previous[1][key].records
                    rate = round(max(delta, 0) / (slot - previous[0]), 2)
                now[key] = TaskSample(t.task_lags.get(task), records, rate)
        self._samples.append((slot, now))
        return True

    def series(self) -> dict[str, Any]:
        """``{"interval_s", "t": [...], "tasks": {task: {"thread", "lag": [...], "rate": [...]}}}``
        with one value (or null) per time in ``t``."""
        samples = list(self._samples)
        times = [t for t, _ in samples]
        keys = sorted({k for _, s in samples for k in s})
        tasks: dict[str, Any] = {}
        for key in keys:
            task, _, thread = key.partition("@")
            points = [s.get(key) for _, s in samples]
            tasks[key] = {
                "task": task,
                "thread": thread,
                "lag": [None if p is None else p.lag for p in points],
                "rate": [None if p is None else p.rate for p in points],
            }
        return {"interval_s": self.interval_s, "t": times, "tasks": tasks}
