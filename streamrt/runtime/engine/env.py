"""ThreadEnv: what every stream thread of an instance shares (config, topology, events)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from streamrt.clock import Clock, SystemClock
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.exception_handlers import RecordErrorHandlers
from streamrt.runtime.graph.topology import SubTopology, Topology

__all__ = ("Emit", "ThreadEnv")

#: ``emit(type, **fields)``: one lifecycle event of one thread (the thread index is bound).
Emit = Callable[..., None]


@dataclass(frozen=True, slots=True)
class ThreadEnv:
    """What every thread of an instance shares."""

    config: StreamsConfig
    topology: Topology
    subtopologies: tuple[SubTopology, ...]
    instance_id: str
    static: bool
    emit: Callable[..., None]  # emit(type, thread_index, **fields)
    clock: Clock = field(default_factory=SystemClock)  # punctuation and commit interval
    errors: RecordErrorHandlers = field(default_factory=RecordErrorHandlers)  # shared counters
