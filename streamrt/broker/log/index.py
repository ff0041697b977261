"""A segment's sparse offset index and time index, kept in memory and persisted beside the log.

One entry is added every ``index.interval.bytes`` of appended batches. The offset index maps a
batch's offset (relative to the segment's base) to its byte position, so a read seeks there and
walks at most one interval of headers. The time index records, at the same batches, the largest
timestamp seen so far in the segment, so a timestamp lookup can skip every batch before it.

Files (as Kafka): ``.index`` holds ``>II`` (relative offset, position) entries and ``.timeindex``
holds ``>qI`` (max timestamp so far, relative offset). They are written when a segment stops being
active and at close; a missing, torn or inconsistent file is rebuilt from the log by the segment.
"""

from __future__ import annotations

import bisect
import os
import struct
from pathlib import Path

from streamrt.broker.log.writes import write_all

__all__ = ("SegmentIndex",)

_OFFSET_ENTRY = struct.Struct(">II")
_TIME_ENTRY = struct.Struct(">qI")


class SegmentIndex:
    """Parallel lists of (offset, position, running max timestamp), one per indexed batch."""

    def __init__(self, base_offset: int) -> None:
        self.base_offset = base_offset
        self.offsets: list[int] = []
        self.positions: list[int] = []
        self.max_timestamps: list[int] = []

    def __len__(self) -> int:
        return len(self.offsets)

    def add(self, offset: int, position: int, max_timestamp: int) -> None:
        self.offsets.append(offset)
        self.positions.append(position)
        self.max_timestamps.append(max_timestamp)

    def truncate_from_position(self, position: int) -> None:
        """Drop entries at or after ``position`` (the log was truncated there)."""
        keep = bisect.bisect_left(self.positions, position)
        del self.offsets[keep:], self.positions[keep:], self.max_timestamps[keep:]

    def position_for_offset(self, offset: int) -> int:
        """Position of the last indexed batch starting at or before ``offset`` (0 if none)."""
        i = bisect.bisect_right(self.offsets, offset) - 1
        return self.positions[i] if i >= 0 else 0

    def position_for_timestamp(self, timestamp: int) -> int:
        """Position from which a scan finds the first batch with max timestamp >= ``timestamp``.

        Entries whose running maximum is below ``timestamp`` cover batches that cannot match, so
        the scan starts at the last such entry's batch.
        """
        i = bisect.bisect_left(self.max_timestamps, timestamp) - 1
        return self.positions[i] if i >= 0 else 0

    def last_entry(self) -> tuple[int, int, int] | None:
        if not self.offsets:
            return None
        return self.offsets[-1], self.positions[-1], self.max_timestamps[-1]

    def write(self, offset_path: Path, time_path: Path) -> None:
        """Persist both files (fsynced); readers rebuild if a crash leaves them torn."""
        rel = [o - self.base_offset for o in self.offsets]
        pairs = zip(rel, self.positions, strict=True)
        offset_bytes = b"".join(_OFFSET_ENTRY.pack(r, p) for r, p in pairs)
        stamps = zip(self.max_timestamps, rel, strict=True)
        time_bytes = b"".join(_TIME_ENTRY.pack(t, r) for t, r in stamps)
        for path, data in ((offset_path, offset_bytes), (time_path, time_bytes)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)

    @classmethod
    def load(
        cls, base_offset: int, offset_path: Path, time_path: Path, log_size: int
    ) -> SegmentIndex | None:
        """Read both files; ``None`` if either is missing or fails the consistency checks."""
        try:
            offset_bytes = offset_path.read_bytes()
            time_bytes = time_path.read_bytes()
        except FileNotFoundError:
            return None
        if len(offset_bytes) % _OFFSET_ENTRY.size or len(time_bytes) % _TIME_ENTRY.size:
            return None
        entries = list(_OFFSET_ENTRY.iter_unpack(offset_bytes))
        times = list(_TIME_ENTRY.iter_unpack(time_bytes))
        if len(entries) != len(times):
            return None
        index = cls(base_offset)
        prev_rel = prev_pos = prev_ts = -1
        for (rel, pos), (ts, time_rel) in zip(entries, times, strict=True):
            if rel != time_rel or rel <= prev_rel or pos <= prev_pos or ts < prev_ts:
                return None
            if pos >= log_size:
                return None
            index.add(base_offset + rel, pos, ts)
            prev_rel, prev_pos, prev_ts = rel, pos, ts
        return index
