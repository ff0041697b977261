"""Log compaction: keep only the latest record of each key in the non-active segments.

Kafka's cleaner, simplified for one broker:

- Cleanable range: the non-active segments, up to the first one whose newest record is younger
  than ``min.compaction.lag.ms``. It is cleaned when its dirty part (segments at or after the
  checkpointed first dirty offset) is at least ``min.cleanable.dirty.ratio`` of it, or when a
  tombstone kept by an earlier pass has outlived ``delete.retention.ms``.
- A record is kept if it is the latest of its key in the range (records without a key are
  always kept). A tombstone (null value) is dropped once its timestamp is older than
  ``delete.retention.ms``; it is the newest of its key, so no older value can come back.
- Kept records keep their offset, timestamp, key, value and headers. An untouched batch is copied
  byte for byte; a thinned one is rebuilt with the same base offset, last offset delta, producer
  id/epoch/base sequence (so producer state rebuilt from headers is unchanged) and codec
  (uncompressed if the codec is unavailable). A batch left empty is dropped. Control batches are
  copied.
- Transactions: nothing at or past the last stable offset is cleaned; batches of aborted
  transactions (per the aborted-transaction index) are removed whatever their keys, and do not
  count as a key's latest value. A marker is kept while any batch of its transaction is, and
  for ``delete.retention.ms`` after (so a consumer mid-way still sees the transaction end),
  then dropped, as Kafka does.
- Consecutive segments are merged up to ``segment.bytes`` and swapped in crash-safely
  (:mod:`streamrt.broker.log.swap`). Segments are read without the log's lock (they are
  immutable once rolled); the lock is held only for the swap.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streamrt.broker.log.batch import (
    ATTR_LOG_APPEND_TIME,
    BatchHeader,
    parse_header,
    recompute_crc,
    set_base_offset,
    set_log_append_time,
)
from streamrt.broker.log.codec import Record, build_batch, read_records, rebuilt
from streamrt.broker.log.segment import LogSegment
from streamrt.broker.log.swap import commit_swap, finish_swap, fsync_dir, write_atomically
from streamrt.broker.log.txn_index import AbortedTracker, AbortedTxn
from streamrt.logs import fields

if TYPE_CHECKING:
    from streamrt.broker.log.partition_log import PartitionLog

__all__ = ("CleanStats", "CleanerCheckpoint", "clean_log")

logger = logging.getLogger(__name__)

CHECKPOINT = "cleaner-offset-checkpoint.json"
_LAST_OFFSET_DELTA_POS = 23
_MAX_RELATIVE_OFFSET = 2**31 - 1
_NO_DEADLINE = -1


@dataclasses.dataclass(frozen=True)
class CleanerCheckpoint:
    """Where the dirty part starts, and when the earliest kept tombstone may go."""

    first_dirty_offset: int = 0
    tombstone_deadline_ms: int = _NO_DEADLINE

    @classmethod
    def read(cls, directory: Path) -> CleanerCheckpoint:
        try:
            doc = json.loads((directory / CHECKPOINT).read_text())
            return cls(int(doc["first_dirty_offset"]), int(doc["tombstone_deadline_ms"]))
        except (OSError, ValueError, KeyError, TypeError):
            return cls()

    def write(self, directory: Path) -> None:
        write_atomically(directory / CHECKPOINT, json.dumps(dataclasses.asdict(self)).encode())


@dataclasses.dataclass(frozen=True)
class CleanStats:
    segments_before: int
    segments_after: int
    bytes_before: int
    bytes_after: int
    records_removed: int


def clean_log(log: PartitionLog, now_ms: int) -> CleanStats | None:
    """Compact ``log`` if its policy and dirty ratio call for it; ``None`` if nothing was done."""
    with log.lock:
        if log.closed or "compact" not in log.config["cleanup.policy"]:
            return None
        config = dict(log.config)
        cleanable = _cleanable(log.segments, now_ms, config["min.compaction.lag.ms"])
        lso = log.last_stable_offset
        cleanable = [s for s in cleanable if s.next_offset <= lso]
        if not cleanable:
            return None
        aborted = log.aborted_transactions()
        checkpoint = CleanerCheckpoint.read(log.directory)
        end_offset = log.segments[len(cleanable)].base_offset
        if not _should_clean(cleanable, checkpoint, now_ms, config):
            return None
    cleaning = _Pass(
        _latest_offsets(cleanable, aborted),
        now_ms - config["delete.retention.ms"],
        AbortedTracker(aborted),
    )
    new_segments: list[LogSegment] = []
    for group in _groups(cleanable, config["segment.bytes"]):
        cleaned = _write_cleaned(log, group, cleaning, config["index.interval.bytes"])
        with log.lock:
            if log.closed or any(all(s is not t for t in log.segments) for s in group):
                cleaned.delete()
                return None
            new_segments.append(_swap_in(log, group, cleaned, config["index.interval.bytes"]))
    with log.lock:
        if not log.closed:
            new_segments = _drop_empty(log, new_segments)
    deadline = (
        min(cleaning.kept_tombstone_ts) + config["delete.retention.ms"]
        if cleaning.kept_tombstone_ts
        else _NO_DEADLINE
    )
    CleanerCheckpoint(end_offset, deadline).write(log.directory)
    stats = CleanStats(
        len(cleanable),
        len(new_segments),
        sum(s.size for s in cleanable),
        sum(s.size for s in new_segments),
        cleaning.removed,
    )
    logger.info(
        "compacted log",
        extra=fields(topic=log.topic, partition=log.partition, **dataclasses.asdict(stats)),
    )
    return stats


def _drop_empty(log: PartitionLog, cleaned: list[LogSegment]) -> list[LogSegment]:
    """Delete cleaned segments left empty, except the first (it anchors the log start offset).

    An empty segment holds no data, so deleting it needs no swap; reads of offsets in the gap
    continue in the next segment.
    """
    kept: list[LogSegment] = []
    for seg in cleaned:
        if seg.size == 0 and seg is not log.segments[0] and seg is not log.segments[-1]:
            log.segments.remove(seg)
            seg.delete()
        else:
            kept.append(seg)
    if len(kept) < len(cleaned):
        fsync_dir(log.directory)
    return kept


def _cleanable(segments: Sequence[LogSegment], now_ms: int, lag_ms: int) -> list[LogSegment]:
    out: list[LogSegment] = []
    for seg in segments[:-1]:
        if seg.max_timestamp >= 0 and now_ms - seg.max_timestamp < lag_ms:
            break
        out.append(seg)
    return out


def _should_clean(
    cleanable: Sequence[LogSegment],
    checkpoint: CleanerCheckpoint,
    now_ms: int,
    config: dict[str, Any],
) -> bool:
    if (
        checkpoint.tombstone_deadline_ms != _NO_DEADLINE
        and now_ms >= checkpoint.tombstone_deadline_ms
    ):
        return True
    total = sum(s.size for s in cleanable)
    dirty = sum(s.size for s in cleanable if s.base_offset >= checkpoint.first_dirty_offset)
    return total > 0 and dirty > 0 and dirty / total >= config["min.cleanable.dirty.ratio"]


def _records(data: bytes) -> list[Record] | None:
    """The records of a batch, or ``None`` if they cannot be decoded (then it is kept whole)."""
    try:
        return read_records(data)
    except Exception:  # unknown codec or malformed records: never drop what we cannot read
        logger.warning("cannot decode batch during compaction; keeping it", exc_info=True)
        return None


def _latest_offsets(
    segments: Iterable[LogSegment], aborted: Sequence[AbortedTxn]
) -> dict[bytes, int]:
    latest: dict[bytes, int] = {}
    tracker = AbortedTracker(aborted)
    for seg in segments:
        for h, data in seg.batches():
            dropped = _aborted(tracker, h)
            if h.is_control or dropped:
                continue
            for r in _records(data) or ():
                if r.key is not None:
                    latest[bytes(r.key)] = r.offset
    return latest


def _groups(segments: Sequence[LogSegment], max_bytes: int) -> list[list[LogSegment]]:
    groups: list[list[LogSegment]] = []
    for seg in segments:
        g = groups[-1] if groups else None
        # An empty segment (everything in it cleaned away earlier) always joins its neighbour.
        if (
            g is not None
            and (seg.size == 0 or sum(s.size for s in g) + seg.size <= max_bytes)
            and seg.next_offset - g[0].base_offset <= _MAX_RELATIVE_OFFSET
        ):
            g.append(seg)
        else:
            groups.append([seg])
    return groups


@dataclasses.dataclass
class _Pass:
    """What one cleaning pass decides batch by batch, and what it carries across batches:
    ``with_data`` holds the producers whose current transaction kept a batch so far (its
    marker must stay), ``kept_tombstone_ts`` the timestamps of what must be cleaned again."""

    latest: dict[bytes, int]
    horizon_ms: int
    tracker: AbortedTracker
    with_data: set[int] = dataclasses.field(default_factory=set)
    kept_tombstone_ts: list[int] = dataclasses.field(default_factory=list)
    removed: int = 0

    def retained(self, h: BatchHeader, data: bytes) -> bytes | None:
        """The bytes of ``h``'s batch to keep (itself or thinned), or ``None`` to drop it."""
        if _aborted(self.tracker, h):
            self.removed += h.record_count
            return None
        if h.is_control:
            return data if self._keep_marker(h) else None
        records = _records(data)
        if records is None:  # unreadable: never drop what we cannot read
            if h.is_transactional:
                self.with_data.add(h.producer_id)
            return data
        keep = [r for r in records if self._keep_record(r)]
        self.removed += len(records) - len(keep)
        if not keep:
            return None
        if h.is_transactional:
            self.with_data.add(h.producer_id)
        return data if len(keep) == len(records) else bytes(_rebuild_batch(h, keep))

    def _keep_marker(self, h: BatchHeader) -> bool:
        if h.producer_id in self.with_data:  # its transaction still has data here
            self.with_data.discard(h.producer_id)
        elif h.max_timestamp <= self.horizon_ms:
            self.removed += h.record_count
            return False
        else:
            self.kept_tombstone_ts.append(h.max_timestamp)  # clean again at the horizon
        return True

    def _keep_record(self, r: Record) -> bool:
        key = None if r.key is None else bytes(r.key)
        if key is not None and self.latest.get(key) != r.offset:
            return False
        if key is not None and r.value is None:
            if r.timestamp <= self.horizon_ms:
                return False
            self.kept_tombstone_ts.append(r.timestamp)
        return True


def _write_cleaned(
    log: PartitionLog, group: Sequence[LogSegment], cleaning: _Pass, interval: int
) -> LogSegment:
    """Write the retained batches of ``group`` to ``.cleaned`` files and return them."""
    out = LogSegment.create(log.files, log.directory, group[0].base_offset, suffix=".cleaned")
    try:
        for seg in group:
            for h, data in seg.batches():
                kept = cleaning.retained(h, data)
                if kept is not None:
                    out.append(kept, [parse_header(kept)], interval)
        out.flush()
        out.write_index()
    except BaseException:
        out.delete()
        raise
    return out


def _aborted(tracker: AbortedTracker, h: BatchHeader) -> bool:
    return tracker.is_aborted(h.base_offset, h.producer_id, h.is_transactional, h.is_control)


def _build(h: BatchHeader, records: Sequence[Record], codec: int) -> bytearray:
    return build_batch(
        rebuilt(records, h.base_offset),
        codec=codec,
        transactional=h.is_transactional,
        producer_id=h.producer_id,
        producer_epoch=h.producer_epoch,
        base_sequence=h.base_sequence,
    )


def _rebuild_batch(h: BatchHeader, records: Sequence[Record]) -> bytearray:
    """A batch of ``records`` that keeps ``h``'s offsets, producer fields and timestamp type."""
    try:
        buf = _build(h, records, h.compression_type)
    except Exception:  # codec library missing: uncompressed is always readable
        logger.warning("rewriting compacted batch uncompressed", exc_info=True)
        buf = _build(h, records, 0)
    set_base_offset(buf, 0, h.base_offset, h.partition_leader_epoch)
    struct.pack_into(">i", buf, _LAST_OFFSET_DELTA_POS, h.last_offset_delta)
    if h.attributes & ATTR_LOG_APPEND_TIME:
        set_log_append_time(buf, parse_header(buf), h.max_timestamp)
    else:
        recompute_crc(buf, 0, len(buf))
    return buf


def _swap_in(
    log: PartitionLog, group: Sequence[LogSegment], cleaned: LogSegment, index_interval: int
) -> LogSegment:
    """Replace ``group`` by ``cleaned`` on disk and in ``log.segments`` (caller holds the lock)."""
    base = group[0].base_offset
    old_bases = [s.base_offset for s in group]
    cleaned.close()
    commit_swap(log.directory, base, old_bases)
    for seg in group:
        seg.close()
    finish_swap(log.directory, base, old_bases)
    opened = LogSegment.open(
        log.files, log.directory, base, recover=False, index_interval=index_interval
    )
    first = next(i for i, s in enumerate(log.segments) if s is group[0])
    log.segments[first : first + len(group)] = [opened]
    return opened
