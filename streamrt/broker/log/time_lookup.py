"""Timestamp lookups over a partition's segments (ListOffsets by time, KIP-734's max
timestamp): the batch is found from headers and the time index, the record inside it by
decoding that one batch; undecodable records answer at batch granularity."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from streamrt.broker.log.batch import BatchHeader
from streamrt.broker.log.codec import Record, iter_records
from streamrt.broker.log.segment import LogSegment
from streamrt.errors import KafkaError

__all__ = ("max_timestamp_offset", "offset_for_timestamp")

logger = logging.getLogger(__name__)


def _first_record(
    seg: LogSegment, h: BatchHeader, match: Callable[[Record], bool]
) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record of batch ``h`` that matches; ``None`` if none
    does or the records cannot be decoded."""
    try:
        for r in iter_records(seg.pread(h.position, h.size)):
            if match(r):
                return r.offset, r.timestamp
    except KafkaError:
        logger.warning("cannot decode batch for a timestamp lookup", exc_info=True)
    return None


def max_timestamp_offset(segments: Sequence[LogSegment], start: int) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record at or after ``start`` with the largest
    timestamp; ``None`` for an empty log."""
    best: tuple[LogSegment, BatchHeader] | None = None
    for seg in segments:
        for h in seg.headers_from(0):
            if h.base_offset + h.last_offset_delta < start:
                continue
            if best is None or h.max_timestamp > best[1].max_timestamp:
                best = (seg, h)
    if best is None:
        return None
    seg, h = best
    found = _first_record(seg, h, lambda r: r.offset >= start and r.timestamp == h.max_timestamp)
    return found or (h.base_offset + h.last_offset_delta, h.max_timestamp)


def offset_for_timestamp(
    segments: Sequence[LogSegment], timestamp_ms: int, start: int
) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record at or after ``start`` with timestamp >=
    ``timestamp_ms``, via the first batch whose max timestamp is >= it; ``None`` if none."""
    for seg in segments:
        h = seg.find_timestamp(timestamp_ms)
        if h is None:
            continue
        found = _first_record(seg, h, lambda r: r.timestamp >= timestamp_ms and r.offset >= start)
        return found or (h.base_offset, h.max_timestamp)
    return None
