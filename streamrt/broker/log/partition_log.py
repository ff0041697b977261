"""One partition's log: a list of segments, the last one active, plus idempotent-producer state.

Every public method takes the log's lock, because the event-loop thread appends and reads while a
maintenance thread rolls, deletes and swaps segments. Appends validate every batch of the request
before any byte is written, then write them in one go.
"""

from __future__ import annotations

import bisect
import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from streamrt.broker.log.assign import AppendPlan, plan_append
from streamrt.broker.log.batch import iter_headers, parse_header
from streamrt.broker.log.control import build_marker_batch
from streamrt.broker.log.loading import (
    PRODUCER_SNAPSHOT,
    TXN_INDEX,
    expired_segments,
    load_producer_state,
    read_start_offset,
)
from streamrt.broker.log.open_files import OpenFiles
from streamrt.broker.log.producer_state import ActiveProducer, ProducerStateManager
from streamrt.broker.log.recompress import CODECS, recompress
from streamrt.broker.log.results import AppendInfo, FetchSlice
from streamrt.broker.log.segment import LogSegment
from streamrt.broker.log.storage_errors import storage_errors
from streamrt.broker.log.swap import complete_interrupted_swap, fsync_dir, write_atomically
from streamrt.broker.log.time_lookup import max_timestamp_offset, offset_for_timestamp
from streamrt.broker.log.txn_index import AbortedTxn, TxnIndex
from streamrt.broker.log.validator import validate
from streamrt.errors import ErrorCode, KafkaError
from streamrt.logs import fields

__all__ = ("AppendInfo", "FetchSlice", "PartitionLog")

logger = logging.getLogger(__name__)

#: The log start offset moved by DeleteRecords (Kafka keeps it in ``log-start-offset-checkpoint``).
LOG_START_OFFSET_FILE = "log-start-offset"
_MAX_RELATIVE_OFFSET = 2**31 - 1


class PartitionLog:
    """Responsibilities: assign offsets and append, serve reads and timestamp lookups, roll
    segments, apply retention, and hand immutable segments to the cleaner.

    ``config`` is the typed effective topic config (``LogManager.effective_config``).
    """

    def __init__(
        self,
        directory: Path,
        topic: str,
        partition: int,
        config: Mapping[str, Any],
        fsync_policy: str,
        segments: list[LogSegment],
        producer_state: ProducerStateManager,
        files: OpenFiles,
        txn_index: TxnIndex | None = None,
    ) -> None:
        self.directory = directory
        self.files = files  # the broker's open-descriptor LRU, for new segments
        self.topic = topic
        self.partition = partition
        self.lock = threading.RLock()
        self.closed = False
        self.offline: str | None = None  # why a failed fsync took it offline
        self._config = dict(config)
        self._fsync_policy = fsync_policy
        self.segments = segments
        self.producer_state = producer_state
        self.txn_index = txn_index if txn_index is not None else TxnIndex()
        self._unflushed = False
        self._start_override = read_start_offset(directory / LOG_START_OFFSET_FILE)

    # ------------------------------------------------------------------------------- opening
    @classmethod
    def open(
        cls,
        directory: Path,
        topic: str,
        partition: int,
        config: Mapping[str, Any],
        fsync_policy: str,
        files: OpenFiles,
    ) -> PartitionLog:
        """Open (or create) the log in ``directory``: finish an interrupted compaction swap,
        recover the last segment's tail, and rebuild producer state."""
        directory.mkdir(parents=True, exist_ok=True)
        complete_interrupted_swap(directory)
        interval = config["index.interval.bytes"]
        bases = sorted(int(p.name.split(".")[0]) for p in directory.glob("*.log"))
        segments = [
            LogSegment.open(
                files, directory, b, recover=(i == len(bases) - 1), index_interval=interval
            )
            for i, b in enumerate(bases)
        ]
        if not segments:
            segments.append(LogSegment.create(files, directory, 0))
            fsync_dir(directory)
        state, txn_index = load_producer_state(directory, segments)
        return cls(
            directory, topic, partition, config, fsync_policy, segments, state, files, txn_index
        )

    def update_config(self, config: Mapping[str, Any]) -> None:
        with self.lock:
            self._config = dict(config)

    @property
    def config(self) -> dict[str, Any]:
        return self._config

    # ------------------------------------------------------------------------------- offsets
    @property
    def log_start_offset(self) -> int:
        """The first segment's base, or higher once DeleteRecords moved it (never past the end)."""
        with self.lock:
            return min(
                max(self.segments[0].base_offset, self._start_override),
                self.segments[-1].next_offset,
            )

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: make ``offset`` the log start offset (``-1``: the high watermark).

        The new start is persisted before it is answered, and segments wholly below it are
        deleted at once; fetches below it then get OFFSET_OUT_OF_RANGE. Returns the new start
        (Kafka's ``low_watermark``); a lower ``offset`` than the current start changes nothing.
        """
        with self.lock:
            self._check_open()
            end = self.log_end_offset
            if offset == -1:
                offset = end
            if offset < 0 or offset > end:
                raise KafkaError(
                    ErrorCode.offset_out_of_range,
                    f"cannot delete records before {offset}: {self.topic}-{self.partition} "
                    f"ends at {end}",
                )
            if offset > self.log_start_offset:
                write_atomically(self.directory / LOG_START_OFFSET_FILE, str(offset).encode())
                self._start_override = offset
                self._delete_segments_below_start()
                self.txn_index.drop_before(self.log_start_offset)
            return self.log_start_offset

    def _delete_segments_below_start(self) -> int:
        """Segments wholly below a DeleteRecords start (never the active one)."""
        start = self._start_override
        if start <= self.segments[0].base_offset:
            return 0  # nothing below it (an empty first segment anchors the start: keep it)
        doomed = 0
        while doomed < len(self.segments) - 1 and self.segments[doomed].next_offset <= start:
            doomed += 1
        for seg in self.segments[:doomed]:
            seg.delete()
        if doomed:
            del self.segments[:doomed]
            fsync_dir(self.directory)
        return doomed

    @property
    def log_end_offset(self) -> int:
        with self.lock:
            return self.segments[-1].next_offset

    def size_bytes(self) -> int:
        with self.lock:
            return sum(s.size for s in self.segments)

    @property
    def last_stable_offset(self) -> int:
        """Below it every transaction is decided (Kafka: min(first unstable offset, HW)); with one
        replica the high watermark is the log end offset."""
        with self.lock:
            end = self.segments[-1].next_offset
            unstable = self.producer_state.first_unstable_offset()
            if unstable is None:
                return end
            return max(min(unstable, end), self.log_start_offset)

    def active_producers(self) -> list[ActiveProducer]:
        """The idempotent/transactional producers known here (DescribeProducers)."""
        with self.lock:
            return self.producer_state.active()

    def aborted_transactions(self) -> list[AbortedTxn]:
        """A copy of the aborted-transaction index (for the cleaner)."""
        with self.lock:
            return list(self.txn_index.entries)

    # ------------------------------------------------------------------------------- append
    def append(self, records: bytes, now_ms: int, *, coordinator: bool = False) -> AppendInfo:
        """Validate every batch (:mod:`validator`), recompress for the topic's codec, assign
        offsets, write; a retried idempotent batch is not written again but answered with its
        original offsets (``duplicate=True``). Nothing is written unless every batch passed.

        ``coordinator=True`` is Kafka's coordinator append origin (transactional offset
        commits): producer epochs are checked, sequences are not."""
        with self.lock:
            self._check_open()
            compression = self._config.get("compression.type", "producer")
            batches = validate(
                records,
                self._config,
                now_ms,
                client=not coordinator,
                keep_plain=compression in CODECS,
            )
            headers = [v.header for v in batches]
            rewritten = recompress(records, batches, compression, self._config["max.message.bytes"])
            if rewritten is not None:
                records = rewritten
                headers = list(iter_headers(records, check_crc=False))
            log_append = self._config["message.timestamp.type"] == "LogAppendTime"
            plan = plan_append(
                records,
                headers,
                [v.max_timestamp for v in batches],
                self.log_end_offset,
                self.producer_state,
                now_ms,
                log_append=log_append,
                check_sequence=not coordinator,
            )
            if plan.duplicates:
                first, last = plan.duplicates[0], plan.duplicates[-1]
                append_time = first.timestamp if log_append else -1
                return AppendInfo(
                    first.base_offset,
                    last.last_offset,
                    append_time,
                    self.log_start_offset,
                    duplicate=True,
                )
            self._write(plan, now_ms)
            return AppendInfo(
                plan.kept[0].base_offset,
                plan.next_offset - 1,
                now_ms if log_append else -1,
                self.log_start_offset,
            )

    def _write(self, plan: AppendPlan, now_ms: int) -> None:
        with storage_errors(self.directory):  # a full disk: KAFKA_STORAGE_ERROR, nothing written
            self._maybe_roll(len(plan.buf), now_ms, plan.next_offset)
            self.segments[-1].append(plan.buf, plan.kept, self._config["index.interval.bytes"])
        self.producer_state.commit(plan.pending)
        self._unflushed = True
        if self._fsync_policy == "always":
            self.flush()

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        now_ms: int,
    ) -> int:
        """Write a COMMIT/ABORT control batch ending ``producer_id``'s transaction here (Kafka's
        WriteTxnMarkers append); return its offset. A marker of an older epoch than the
        producer's gets INVALID_PRODUCER_EPOCH; one for a producer with no open transaction is
        harmless (it only records the epoch), so a re-sent marker after a restart is safe."""
        with self.lock:
            self._check_open()
            self.producer_state.check_marker(producer_id, producer_epoch)
            offset = self.log_end_offset
            buf = build_marker_batch(
                offset, producer_id, producer_epoch, commit, coordinator_epoch, now_ms
            )
            h = parse_header(buf)
            with storage_errors(self.directory):
                self._maybe_roll(len(buf), now_ms, offset + 1)
                self.segments[-1].append(buf, [h], self._config["index.interval.bytes"])
            aborted = self.producer_state.complete_txn(
                producer_id, producer_epoch, offset, commit, now_ms
            )
            if aborted is not None:
                self.txn_index.append(aborted)
            self._unflushed = True
            if self._fsync_policy == "always":
                self.flush()
            return offset

    # ------------------------------------------------------------------------------- rolling
    def _maybe_roll(self, incoming: int, now_ms: int, next_offset: int) -> None:
        active = self.segments[-1]
        if active.size == 0:
            return
        full = active.size + incoming > self._config["segment.bytes"]
        overflow = next_offset - active.base_offset > _MAX_RELATIVE_OFFSET
        if full or overflow or self._roll_due(active, now_ms):
            self._roll()

    def _roll_due(self, active: LogSegment, now_ms: int) -> bool:
        base = active.roll_base_ms
        return base is not None and now_ms - base >= self._config["segment.ms"]

    def _roll(self) -> None:
        """Seal the active segment (fsync, index, producer snapshot) and start a new one."""
        old = self.segments[-1]
        old.flush()
        old.write_index()
        self.segments.append(LogSegment.create(self.files, self.directory, old.next_offset))
        fsync_dir(self.directory)
        self.producer_state.write_snapshot(self.directory / PRODUCER_SNAPSHOT, old.next_offset)
        self.txn_index.write(self.directory / TXN_INDEX, old.next_offset)
        logger.debug(
            "rolled segment",
            extra=fields(topic=self.topic, partition=self.partition, base=old.next_offset),
        )

    def roll_if_due(self, now_ms: int) -> None:
        """Roll a non-empty active segment older than ``segment.ms`` (maintenance)."""
        with self.lock:
            if (
                not self.closed
                and self.segments[-1].size
                and self._roll_due(self.segments[-1], now_ms)
            ):
                self._roll()

    # ------------------------------------------------------------------------------- reading
    def read(
        self, offset: int, max_bytes: int, *, min_one: bool = True, read_committed: bool = False
    ) -> FetchSlice:
        """Whole batches from the one containing ``offset`` (or the next one), from one segment.

        ``read_committed`` stops at the last stable offset and lists the aborted transactions
        overlapping the returned range (Kafka's ``FetchIsolation.TXN_COMMITTED``)."""
        with self.lock:
            self._check_open()
            start, end = self.log_start_offset, self.log_end_offset
            lso = self.last_stable_offset
            if offset < start or offset > end:
                raise KafkaError(
                    ErrorCode.offset_out_of_range,
                    f"offset {offset} outside [{start}, {end}] of {self.topic}-{self.partition}",
                )
            upper = lso if read_committed else end
            records = b""
            i = max(bisect.bisect_right([s.base_offset for s in self.segments], offset) - 1, 0)
            if offset < upper:
                for seg in self.segments[i:]:
                    h = seg.find_position(offset)
                    if h is not None:
                        if h.base_offset < upper:
                            records = seg.read_batches(h, max_bytes, min_one, max_offset=upper)
                        break
            aborted = None
            if read_committed:
                last = _last_offset(records)
                fetch_end = upper if last is None else last + 1
                aborted = tuple(
                    (e.producer_id, e.first_offset)
                    for e in self.txn_index.collect(offset, fetch_end)
                )
            return FetchSlice(records, end, start, lso, aborted)

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with the largest timestamp (KIP-734), from the
        log start; ``None`` for an empty log."""
        with self.lock:
            self._check_open()
            return max_timestamp_offset(self.segments, self.log_start_offset)

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= ``timestamp_ms`` (Kafka's
        ListOffsets); ``None`` if none."""
        with self.lock:
            self._check_open()
            return offset_for_timestamp(self.segments, timestamp_ms, self.log_start_offset)

    # ------------------------------------------------------------------------------- durability
    def flush(self) -> None:
        """fsync the active segment. A failed fsync takes the partition offline, as Kafka takes
        the log directory offline: the kernel may have dropped the unwritten pages, so a later
        fsync that succeeds proves nothing; a restart recovers the log from its files."""
        with self.lock:
            if self._unflushed and not self.closed and self.offline is None:
                with storage_errors(self.directory, on_error=self._take_offline):
                    self.segments[-1].flush()
                self._unflushed = False

    def _take_offline(self, reason: str) -> None:
        self.offline = reason

    @property
    def dirty(self) -> bool:
        return self._unflushed and self.offline is None  # an offline log is not fsynced again

    def close(self) -> None:
        with self.lock:
            if self.closed:
                return
            try:  # a failed write (full disk) still closes: the files are rebuilt at open
                self.flush()
                active = self.segments[-1]
                active.write_index()
                self.producer_state.write_snapshot(
                    self.directory / PRODUCER_SNAPSHOT, active.next_offset
                )
                self.txn_index.write(self.directory / TXN_INDEX, active.next_offset)
            finally:
                for seg in self.segments:
                    seg.close()
                self.closed = True

    def _check_open(self) -> None:
        if self.offline is not None:
            raise KafkaError(
                ErrorCode.kafka_storage_error,
                f"{self.topic}-{self.partition} is offline: fsync failed ({self.offline}); "
                "restart the broker to recover it from its files",
            )
        if self.closed:
            raise KafkaError(
                ErrorCode.not_leader_or_follower, f"{self.topic}-{self.partition} is closed"
            )

    # ------------------------------------------------------------------------------- retention
    def apply_retention(self, now_ms: int) -> int:
        """Delete the oldest non-active segments past ``retention.ms`` or ``retention.bytes``
        (``cleanup.policy`` with ``delete``); return how many were deleted."""
        with self.lock:
            if self.closed:
                return 0
            below_start = self._delete_segments_below_start()
            if "delete" not in self._config["cleanup.policy"]:
                return below_start
            doomed = self.segments[: expired_segments(self.segments, self._config, now_ms)]
            if doomed:
                del self.segments[: len(doomed)]
                for seg in doomed:
                    seg.delete()
                self.txn_index.drop_before(self.log_start_offset)
                fsync_dir(self.directory)
                logger.info(
                    "retention deleted segments",
                    extra=fields(
                        topic=self.topic,
                        partition=self.partition,
                        segments=len(doomed),
                        log_start_offset=self.segments[0].base_offset,
                    ),
                )
            return below_start + len(doomed)

    def expire_producers(self, now_ms: int, expiration_ms: int) -> None:
        with self.lock:
            self.producer_state.expire(now_ms, expiration_ms)

    def delete_files(self) -> None:
        """Close and remove every file of this log (topic deletion)."""
        with self.lock:
            for seg in self.segments:
                seg.close()
            self.closed = True
        for path in self.directory.iterdir():
            os.unlink(path)
        os.rmdir(self.directory)


def _last_offset(records: bytes) -> int | None:
    """Last offset of the last batch in ``records`` (headers only)."""
    last = None
    for h in iter_headers(records, check_crc=False):
        last = h.last_offset
    return last
