"""A stream thread's state and metadata: what each thread publishes about itself.

Shared by the engine (the stream thread moves through these states) and the instance (which
aggregates them; ``App.metadata_for_local_threads()``). The instance's own state and the
cluster view live in :mod:`streamrt.runtime.instance.metadata`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from streamrt.runtime.sensors import StreamsSnapshot

__all__ = ("ALLOWED_PREVIOUS", "ThreadMetadata", "ThreadState")


class ThreadState(enum.Enum):
    """A stream thread's life, as Kafka Streams' ``StreamThread.State``.

    CREATED → STARTING → PARTITIONS_ASSIGNED ⇄ RUNNING; any → PENDING_SHUTDOWN → DEAD.
    """

    CREATED = "CREATED"
    STARTING = "STARTING"
    PARTITIONS_ASSIGNED = "PARTITIONS_ASSIGNED"
    RUNNING = "RUNNING"
    PENDING_SHUTDOWN = "PENDING_SHUTDOWN"
    DEAD = "DEAD"


ALLOWED_PREVIOUS: dict[ThreadState, frozenset[ThreadState]] = {
    ThreadState.CREATED: frozenset(),
    ThreadState.STARTING: frozenset({ThreadState.CREATED}),
    ThreadState.PARTITIONS_ASSIGNED: frozenset(
        {ThreadState.STARTING, ThreadState.RUNNING, ThreadState.PARTITIONS_ASSIGNED}
    ),
    ThreadState.RUNNING: frozenset({ThreadState.STARTING, ThreadState.PARTITIONS_ASSIGNED}),
    ThreadState.PENDING_SHUTDOWN: frozenset(
        {
            ThreadState.CREATED,
            ThreadState.STARTING,
            ThreadState.PARTITIONS_ASSIGNED,
            ThreadState.RUNNING,
        }
    ),
    ThreadState.DEAD: frozenset(set(ThreadState) - {ThreadState.DEAD}),
}


@dataclass(frozen=True, slots=True)
class ThreadMetadata:
    """One local stream thread, with its counters."""

    thread_name: str
    thread_index: int
    thread_instance_id: str | None
    client_id: str
    state: ThreadState
    active_tasks: tuple[str, ...]
    restoring_tasks: tuple[str, ...]
    topic_partitions: tuple[tuple[str, int], ...]
    rebalances: int
    records_processed: int
    records_restored: int
    bytes_restored: int
    restore_time_ms: float
    member_id: str | None = None  # the consumer's member id in the group, once joined
    standby_tasks: tuple[str, ...] = ()  # warm-ups included
    standby_lags: Mapping[str, int] = field(default_factory=dict)  # task → records behind
    standby_records_applied: int = 0  # changelog records applied to standbys
    task_lags: Mapping[str, int] = field(default_factory=dict)  # active task → input records behind
    task_records: Mapping[str, int] = field(default_factory=dict)  # active task → records processed
    # restoring task → (changelog records applied, records to apply at most)
    restore_progress: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    streams: StreamsSnapshot | None = None  # what the Kafka-named metrics are computed from
