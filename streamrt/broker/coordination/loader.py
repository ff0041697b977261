"""Replaying an internal topic's partition into a coordinator at start (Kafka's
``CoordinatorLoaderImpl``), where one bad record never stops the broker.

Every batch is read from the log start; control batches (transaction markers) go to
``on_marker``, every keyed record to ``on_record``. A batch whose records cannot be decoded,
or a record the coordinator cannot decode or apply, is logged with its topic, partition and
offset and skipped, as Kafka skips records of unknown types: the rest still loads.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable

from streamrt.broker.coordination.log_writer import PartitionWriter
from streamrt.broker.log.codec import LogBatch, iter_log_batches
from streamrt.errors import KafkaError
from streamrt.logs import fields

__all__ = ("LoadStats", "RecordSink", "replay_partition")

logger = logging.getLogger(__name__)

_READ_CHUNK = 1 << 20


#: What a coordinator does with a replayed record (key, value or ``None``, producer id of a
#: transactional batch or -1); it raises for a record it cannot decode.
RecordSink = Callable[[bytes, bytes | None, int], None]


@dataclasses.dataclass
class LoadStats:
    loaded: int = 0
    skipped: int = 0


@dataclasses.dataclass(frozen=True)
class _Where:
    topic: str
    partition: int

    def skip(self, what: str, offset: int, exc: BaseException) -> None:
        logger.warning(
            f"skipping {what} that cannot be loaded",
            extra=fields(
                topic=self.topic,
                partition=self.partition,
                offset=offset,
                error=f"{type(exc).__name__}: {exc}",
            ),
        )


def replay_partition(
    log: PartitionWriter,
    where: tuple[str, int],
    on_record: RecordSink,
    on_marker: Callable[[LogBatch], None] | None = None,
) -> LoadStats:
    """Replay ``log`` (partition ``where``) from its start; the counts loaded and skipped."""
    at = _Where(*where)
    stats = LoadStats()
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        chunk = log.read(offset, _READ_CHUNK)
        if not chunk.records:
            break
        for batch in iter_log_batches(chunk.records):
            if batch.is_control:
                if on_marker is not None:
                    _guarded(at, stats, batch.next_offset - 1, functools.partial(on_marker, batch))
            else:
                _replay_batch(at, stats, batch, offset, on_record)
            offset = max(offset, batch.next_offset)
    return stats


def _replay_batch(
    at: _Where, stats: LoadStats, batch: LogBatch, start: int, on_record: RecordSink
) -> None:
    try:
        records = batch.records()
    except KafkaError as exc:
        at.skip("a batch", batch.next_offset - 1, exc)
        stats.skipped += 1
        return
    pid = batch.producer_id if batch.is_transactional else -1
    for r in records:
        if r.key is None or r.offset < start:
            continue
        key, value = bytes(r.key), None if r.value is None else bytes(r.value)
        if _guarded(at, stats, r.offset, functools.partial(on_record, key, value, pid)):
            stats.loaded += 1


def _guarded(at: _Where, stats: LoadStats, offset: int, apply: Callable[[], None]) -> bool:
    try:
        apply()
    except Exception as exc:  # an undecodable key/value, an unknown version, a bad state
        at.skip("a record", offset, exc)
        stats.skipped += 1
        return False
    return True
