"""Timestamp extractors: which time a record has for windows, joins and stream time.

An extractor is ``fn(record) -> ms`` over a :class:`ConsumedRecord` (deserialized key and
value, the broker timestamp and the partition time). A negative result drops the record, as
Kafka Streams does. ``default.timestamp.extractor`` names one of Kafka's built-ins or a
``module:function`` path.
"""

from __future__ import annotations

import importlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streamrt.errors import ConfigError, StreamrtError

__all__ = (
    "BUILT_IN_EXTRACTORS",
    "ConsumedRecord",
    "InvalidTimestampError",
    "TimestampExtractor",
    "fail_on_invalid_timestamp",
    "log_and_skip_on_invalid_timestamp",
    "resolve_extractor",
    "use_partition_time_on_invalid_timestamp",
    "wallclock_timestamp",
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ConsumedRecord:
    """What an extractor sees: the deserialized record and its partition's time so far."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: Any
    value: Any
    headers: tuple[tuple[str, bytes], ...]
    partition_time: int  # largest timestamp taken from this partition (-1: none yet)


TimestampExtractor = Callable[[ConsumedRecord], int]


class InvalidTimestampError(StreamrtError):
    """``FailOnInvalidTimestamp``: a record has a negative timestamp."""


def fail_on_invalid_timestamp(record: ConsumedRecord) -> int:
    """The default: the record's own timestamp; a negative one stops processing."""
    if record.timestamp < 0:
        raise InvalidTimestampError(
            f"record {record.topic}-{record.partition}@{record.offset} has invalid timestamp "
            f"{record.timestamp}; use another default.timestamp.extractor to skip or replace it"
        )
    return record.timestamp


def log_and_skip_on_invalid_timestamp(record: ConsumedRecord) -> int:
    """The record's timestamp; a negative one is returned as is, so the record is dropped."""
    if record.timestamp < 0:
        logger.warning(
            "skipping a record with an invalid timestamp",
            extra={"topic": record.topic, "offset": record.offset, "ts": record.timestamp},
        )
    return record.timestamp


def use_partition_time_on_invalid_timestamp(record: ConsumedRecord) -> int:
    """The record's timestamp, or the partition time if it is negative (fails if unknown)."""
    if record.timestamp >= 0:
        return record.timestamp
    if record.partition_time < 0:
        raise InvalidTimestampError(
            f"record {record.topic}-{record.partition}@{record.offset} has an invalid "
            "timestamp and no partition time is known yet"
        )
    return record.partition_time


def wallclock_timestamp(record: ConsumedRecord) -> int:
    """Processing time: the system clock when the record is processed."""
    del record
    return time.time_ns() // 1_000_000


BUILT_IN_EXTRACTORS: dict[str, TimestampExtractor] = {
    "FailOnInvalidTimestamp": fail_on_invalid_timestamp,
    "LogAndSkipOnInvalidTimestamp": log_and_skip_on_invalid_timestamp,
    "UsePartitionTimeOnInvalidTimestamp": use_partition_time_on_invalid_timestamp,
    "WallclockTimestampExtractor": wallclock_timestamp,
}


def resolve_extractor(name: str) -> TimestampExtractor:
    """A built-in by its Kafka class name (package prefix allowed) or ``module:function``."""
    short = name.rsplit(".", 1)[-1] if ":" not in name else name
    if short in BUILT_IN_EXTRACTORS:
        return BUILT_IN_EXTRACTORS[short]
    module, _, attr = name.partition(":")
    if not attr:
        raise ConfigError(
            f"default.timestamp.extractor {name!r} is neither a built-in "
            f"({', '.join(BUILT_IN_EXTRACTORS)}) nor module:function"
        )
    try:
        fn = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"default.timestamp.extractor {name!r}: {exc}") from exc
    if not callable(fn):
        raise ConfigError(f"default.timestamp.extractor {name!r} is not callable")
    return fn  # type: ignore[no-any-return]
