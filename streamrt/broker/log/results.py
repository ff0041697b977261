"""What a partition log's append and read return (Kafka's LogAppendInfo and FetchDataInfo)."""

from __future__ import annotations

import dataclasses

__all__ = ("AppendInfo", "FetchSlice")


@dataclasses.dataclass(frozen=True)
class AppendInfo:
    base_offset: int
    last_offset: int
    log_append_time_ms: int  # -1 for CreateTime
    log_start_offset: int
    duplicate: bool = False


@dataclasses.dataclass(frozen=True)
class FetchSlice:
    records: bytes
    high_watermark: int
    log_start_offset: int
    last_stable_offset: int = -1
    #: (producer id, first offset) of aborted transactions in range; ``None`` unless
    #: read_committed (Kafka sends null to read_uncommitted fetches).
    aborted_transactions: tuple[tuple[int, int], ...] | None = None
