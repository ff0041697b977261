"""Metadata the runtime publishes: per local thread, and per instance of the whole cluster.

The REST layer reads these from ``App.metadata_for_all_clients()`` and
``App.metadata_for_local_threads()`` (see :mod:`streamrt.runtime.queries`); the cluster view
comes from the assignment user data. ``AppState`` is the instance's overall state.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ("APP_ALLOWED_NEXT", "AppState", "StreamsMetadata", "ThreadMetadata", "ThreadState")


class AppState(enum.Enum):
    """An instance's life, as Kafka Streams' ``KafkaStreams.State``.

    CREATED → REBALANCING ⇄ RUNNING → PENDING_SHUTDOWN → NOT_RUNNING; on a fatal error
    REBALANCING/RUNNING → PENDING_ERROR → ERROR. RUNNING means every stream thread runs.
    """

    CREATED = "CREATED"
    REBALANCING = "REBALANCING"
    RUNNING = "RUNNING"
    PENDING_SHUTDOWN = "PENDING_SHUTDOWN"
    NOT_RUNNING = "NOT_RUNNING"
    PENDING_ERROR = "PENDING_ERROR"
    ERROR = "ERROR"

    @property
    def is_running_or_rebalancing(self) -> bool:
        return self in (AppState.RUNNING, AppState.REBALANCING)


APP_ALLOWED_NEXT: dict[AppState, frozenset[AppState]] = {
    AppState.CREATED: frozenset({AppState.REBALANCING, AppState.PENDING_SHUTDOWN}),
    AppState.REBALANCING: frozenset(
        {AppState.RUNNING, AppState.PENDING_SHUTDOWN, AppState.PENDING_ERROR}
    ),
    AppState.RUNNING: frozenset(
        {AppState.REBALANCING, AppState.PENDING_SHUTDOWN, AppState.PENDING_ERROR}
    ),
    # ERROR: a thread's fatal error found while shutting down
    AppState.PENDING_SHUTDOWN: frozenset({AppState.NOT_RUNNING, AppState.ERROR}),
    AppState.NOT_RUNNING: frozenset(),
    AppState.PENDING_ERROR: frozenset({AppState.ERROR}),
    AppState.ERROR: frozenset(),
}


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
