"""Metadata the instance publishes: its overall state, and every instance of the cluster.

The REST layer reads these from ``App.state`` and ``App.metadata_for_all_clients()`` (see
:mod:`streamrt.runtime.instance.queries`); the cluster view comes from the assignment user
data. Per-thread metadata is the engine's (:mod:`streamrt.runtime.metadata`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ("APP_ALLOWED_NEXT", "AppState", "StreamsMetadata")


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
