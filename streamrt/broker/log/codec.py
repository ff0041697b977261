"""The record codec: the one broker module that reads and writes records inside batches.

The broker keeps client batches opaque (:mod:`batch` reads headers only); where it must see
records (validation, recompression, compaction, coordinator replay, timestamp lookups) it goes
through here. aiokafka's record codec (a C extension, strict about lengths and counts) does the
work; this module pins which parts of it are used and turns its exceptions into Kafka errors.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

from aiokafka.errors import UnsupportedCodecError
from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from aiokafka.record.memory_records import MemoryRecords

from streamrt.errors import ErrorCode, KafkaError

__all__ = (
    "LogBatch",
    "NewRecord",
    "Record",
    "build_batch",
    "iter_log_batches",
    "iter_records",
    "read_records",
    "rebuilt",
)

_BATCH_SIZE_UNBOUNDED = 2**31 - 1


class Record(Protocol):
    """One decoded record (aiokafka's record object, read-only)."""

    @property
    def offset(self) -> int: ...
    @property
    def timestamp(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...
    @property
    def headers(self) -> Sequence[tuple[str, bytes]]: ...


@dataclasses.dataclass(frozen=True, slots=True)
class NewRecord:
    """A record to write: its offset delta inside the new batch, and its fields."""

    offset_delta: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes]] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class LogBatch:
    """One stored batch as a coordinator replays it; :meth:`records` decodes it."""

    is_control: bool
    is_transactional: bool
    producer_id: int
    next_offset: int
    decoder: Any

    def records(self) -> list[Record]:
        """Its records; ``INVALID_RECORD`` (or ``UNSUPPORTED_COMPRESSION_TYPE``) if they
        cannot be decoded, so the replay can skip the batch and carry on at ``next_offset``."""
        try:
            return list(self.decoder)
        except UnsupportedCodecError as exc:
            raise KafkaError(ErrorCode.unsupported_compression_type, str(exc)) from None
        except Exception as exc:
            raise KafkaError(ErrorCode.invalid_record, f"cannot read records: {exc}") from None


def iter_records(batch: bytes | bytearray | memoryview) -> Iterator[Record]:
    """The records of one whole batch, one at a time (the caller keeps none it does not need).

    ``UNSUPPORTED_COMPRESSION_TYPE`` when the codec's library is missing, ``INVALID_RECORD``
    when the records do not match the header (count, lengths, trailing bytes).
    """
    try:
        yield from DefaultRecordBatch(bytes(batch))
    except UnsupportedCodecError as exc:
        raise KafkaError(ErrorCode.unsupported_compression_type, str(exc)) from None
    except Exception as exc:  # aiokafka's CorruptRecordException and the codecs' errors
        raise KafkaError(ErrorCode.invalid_record, f"cannot read records: {exc}") from None


def read_records(batch: bytes | bytearray | memoryview) -> list[Record]:
    """Every record of one whole batch (see :func:`iter_records`)."""
    return list(iter_records(batch))


def build_batch(
    records: Iterable[NewRecord],
    *,
    codec: int = 0,
    transactional: bool = False,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytearray:
    """A RecordBatch v2 at base offset 0 holding ``records`` (compressed with ``codec``)."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=int(transactional),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=_BATCH_SIZE_UNBOUNDED,
    )
    for r in records:
        builder.append(
            r.offset_delta, timestamp=r.timestamp, key=r.key, value=r.value, headers=list(r.headers)
        )
    try:
        built: bytearray = builder.build()
        return built
    except UnsupportedCodecError as exc:
        raise KafkaError(ErrorCode.unsupported_compression_type, str(exc)) from None


def rebuilt(records: Iterable[Record], base_offset: int) -> Iterator[NewRecord]:
    """Decoded records as records to write again (offset deltas from ``base_offset``)."""
    for r in records:
        yield NewRecord(r.offset - base_offset, r.timestamp, r.key, r.value, list(r.headers))


def iter_log_batches(buf: bytes) -> Iterator[LogBatch]:
    """The batches of a fetched chunk of a log, records decoded (coordinator replay).

    Batch headers were checked when the batch was appended; records are decoded on demand.
    """
    records = MemoryRecords(buf)
    while records.has_next():
        batch: Any = records.next_batch()
        if batch is None:
            return
        yield LogBatch(
            is_control=bool(batch.is_control_batch),
            is_transactional=bool(batch.is_transactional),
            producer_id=batch.producer_id,
            next_offset=batch.next_offset,
            decoder=batch,
        )
