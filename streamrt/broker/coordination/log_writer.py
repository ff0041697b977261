"""What a coordinator service needs from the broker's logs (Kafka's ``PartitionWriter``).

The service reads ``__consumer_offsets`` at load and appends record batches to it; these
protocols name exactly that, so the service depends on an interface, not on ``LogManager``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Protocol

__all__ = ("CoordinatorLogs", "LogChunk", "PartitionWriter", "TopicView")


class LogChunk(Protocol):
    """Whole record batches read from a partition."""

    @property
    def records(self) -> bytes: ...


class PartitionWriter(Protocol):
    """One partition of ``__consumer_offsets``: read it at load, append to it after."""

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    def read(self, offset: int, max_bytes: int) -> LogChunk: ...

    def append(self, records: bytes, now_ms: int, *, coordinator: bool = False) -> object:
        """Append RecordBatch v2 bytes; fsyncs when the broker's policy is ``always``.

        ``coordinator=True``: a transactional offset commit (epochs checked, not sequences).
        Raises ``KafkaError`` for a refused batch and ``OSError`` for a storage failure.
        """
        ...

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        now_ms: int,
    ) -> int:
        """A COMMIT/ABORT control batch ending ``producer_id``'s transaction; its offset."""
        ...


class TopicView(Protocol):
    @property
    def num_partitions(self) -> int: ...

    @property
    def topic_id(self) -> uuid.UUID: ...


class CoordinatorLogs(Protocol):
    """The topic table and partition logs, as the coordinator service uses them."""

    def topics(self) -> Mapping[str, TopicView]: ...

    def create_topic(
        self,
        name: str,
        num_partitions: int,
        configs: Mapping[str, str] | None = None,
        *,
        internal: bool = False,
    ) -> object: ...

    def log(self, topic: str, partition: int) -> PartitionWriter: ...
