"""Metadata the runtime publishes: per local thread, and per instance of the whole cluster.

The REST layer reads these from ``App.metadata_for_all_clients()`` and
``App.metadata_for_local_threads()``; the cluster view comes from the assignment user data.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ("StreamsMetadata", "ThreadMetadata", "ThreadState")


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


@dataclass(frozen=True, slots=True)
class StreamsMetadata:
    """One instance of the application, as every instance sees it (Kafka's StreamsMetadata)."""

    instance_id: str
    host: str | None
    port: int | None
    thread_instance_ids: tuple[str, ...]
    tasks: tuple[str, ...]
    topic_partitions: tuple[tuple[str, int], ...]
    state_store_names: tuple[str, ...]
