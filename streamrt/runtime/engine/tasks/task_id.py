"""TaskId: a task's name, ``<subtopology>_<partition>`` (its own module so the task's stays
one job; :mod:`.task` re-exports it)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ("TaskId",)


@dataclass(frozen=True, slots=True, order=True)
class TaskId:
    """``<subtopology>_<partition>``, as Kafka Streams names tasks."""

    subtopology: int
    partition: int

    def __str__(self) -> str:
        return f"{self.subtopology}_{self.partition}"

    @classmethod
    def parse(cls, text: str) -> TaskId:
        sub, _, part = text.partition("_")
        return cls(int(sub), int(part))
