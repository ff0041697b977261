"""One log segment: an append-only ``<base_offset>.log`` file of whole RecordBatches plus its index.

Reads use ``os.pread`` of just the byte range needed, never whole files. The ``.log`` file's
descriptor is borrowed from the broker's :class:`OpenFiles` LRU for each operation, so a segment
costs no descriptor while idle; index files are opened only to be read or written. A segment is
mutated only while it is the active (last) segment of its log; after a roll it is immutable
until retention deletes it or compaction replaces it, which is why the cleaner may read it
without holding the log's lock.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from streamrt.broker.log.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    iter_headers,
    parse_header,
)
from streamrt.broker.log.index import SegmentIndex
from streamrt.broker.log.open_files import FileHandle, OpenFiles
from streamrt.errors import KafkaError
from streamrt.logs import fields

__all__ = ("LogSegment", "segment_paths")

logger = logging.getLogger(__name__)

_NO_TIMESTAMP = -1


def segment_paths(directory: Path, base_offset: int, suffix: str = "") -> tuple[Path, Path, Path]:
    """The ``.log``, ``.index`` and ``.timeindex`` paths of a segment (Kafka's naming)."""
    stem = f"{base_offset:020d}"
    return (
        directory / f"{stem}.log{suffix}",
        directory / f"{stem}.index{suffix}",
        directory / f"{stem}.timeindex{suffix}",
    )


class LogSegment:
    """Responsibilities: append whole batches, locate offsets and timestamps, read byte ranges,
    recover a torn tail, and persist its index."""

    def __init__(
        self, directory: Path, base_offset: int, file: FileHandle, size: int, suffix: str = ""
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.log_path, self.index_path, self.time_index_path = segment_paths(
            directory, base_offset, suffix
        )
        self._file = file
        self.size = size
        self.next_offset = base_offset
        self.max_timestamp = _NO_TIMESTAMP
        # Kafka rolls by the first batch's timestamp, so a restart does not restart the clock.
        self.roll_base_ms: int | None = None
        self.index = SegmentIndex(base_offset)
        self._bytes_since_index = 0

    # ----------------------------------------------------------------------------- lifecycle
    @classmethod
    def create(
        cls, files: OpenFiles, directory: Path, base_offset: int, suffix: str = ""
    ) -> LogSegment:
        """A new empty segment; ``suffix`` names the cleaner's not-yet-swapped output."""
        log_path = segment_paths(directory, base_offset, suffix)[0]
        fd = os.open(log_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        return cls(directory, base_offset, files.handle(log_path, fd), 0, suffix)

    @classmethod
    def open(
        cls,
        files: OpenFiles,
        directory: Path,
        base_offset: int,
        *,
        recover: bool,
        index_interval: int,
    ) -> LogSegment:
        """Open an existing segment.

        ``recover=True`` (the last segment) walks every batch checking CRCs, truncates at the
        first torn or corrupt batch and rebuilds the index. Otherwise the index files are loaded
        and only the batches after the last index entry are walked; a bad index is rebuilt.
        """
        log_path = segment_paths(directory, base_offset)[0]
        handle = files.handle(log_path)
        with handle.use() as fd:
            size = os.fstat(fd).st_size
        seg = cls(directory, base_offset, handle, size)
        if recover:
            seg._recover(index_interval)
            return seg
        index = SegmentIndex.load(base_offset, seg.index_path, seg.time_index_path, seg.size)
        if index is not None and not index and seg.size > 0:
            index = None  # the first batch is always indexed: an empty file was torn
        if index is not None and index.last_entry() is not None:
            off, pos, _ = index.last_entry()  # type: ignore[misc]
            head = seg._read_header(pos)
            if head is None or head.base_offset != off:
                index = None
        if index is None:
            logger.info("rebuilding segment index", extra=fields(path=str(log_path)))
            seg._rebuild(0, index_interval, check_crc=False)
        else:
            seg.index = index
            last = index.last_entry()
            start = 0
            if last is not None:
                seg.max_timestamp = last[2]
                start = last[1]
            seg._scan_tail(start)
        first = seg._read_header(0)
        if first is not None:
            seg.roll_base_ms = first.max_timestamp
        return seg

    def close(self) -> None:
        """Give back the descriptor (a later read opens the file again)."""
        self._file.close()

    def delete(self) -> None:
        self.close()
        for path in (self.log_path, self.index_path, self.time_index_path):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def flush(self) -> None:
        with self._file.use() as fd:
            os.fsync(fd)

    def write_index(self) -> None:
        self.index.write(self.index_path, self.time_index_path)

    # ----------------------------------------------------------------------------- writing
    def append(
        self, data: bytes | bytearray, headers: list[BatchHeader], index_interval: int
    ) -> None:
        """Write validated batches (``headers`` positions are relative to ``data``) at the end.

        On a failed write the file is cut back, so a batch is either fully present or absent.
        """
        start = self.size
        view = memoryview(data)
        written = 0
        with self._file.use() as fd:
            try:
                while written < len(view):
                    written += os.pwrite(fd, view[written:], start + written)
            except OSError:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, start)
                raise
        self.size = start + len(view)
        for h in headers:
            self._track(h, start + h.position, h.size, index_interval)

    def _track(self, h: BatchHeader, position: int, size: int, index_interval: int) -> None:
        if self.roll_base_ms is None:
            self.roll_base_ms = h.max_timestamp
        self.max_timestamp = max(self.max_timestamp, h.max_timestamp)
        self.next_offset = h.next_offset
        if not self.index or self._bytes_since_index >= index_interval:
            self.index.add(h.base_offset, position, self.max_timestamp)
            self._bytes_since_index = 0
        self._bytes_since_index += size

    def truncate_to(self, position: int) -> None:
        with self._file.use() as fd:
            os.ftruncate(fd, position)
        self.size = position
        self.index.truncate_from_position(position)

    # ----------------------------------------------------------------------------- reading
    def _read_header(self, position: int) -> BatchHeader | None:
        with self._file.use() as fd:
            return self._header_at(fd, position)

    def _header_at(self, fd: int, position: int) -> BatchHeader | None:
        if position + HEADER_SIZE > self.size:
            return None
        raw = os.pread(fd, HEADER_SIZE, position)
        if len(raw) < HEADER_SIZE:
            return None
        h = parse_header(raw, position=position)
        return h if h.batch_length >= HEADER_SIZE - LOG_OVERHEAD else None

    def headers_from(self, position: int = 0) -> Iterator[BatchHeader]:
        """Headers of the batches from ``position`` to the end (positions are file positions).

        The descriptor is pinned for the whole walk, released when the generator finishes or
        is dropped."""
        with self._file.use() as fd:
            while True:
                h = self._header_at(fd, position)
                if h is None or position + h.size > self.size:
                    return
                yield h
                position += h.size

    def find_position(self, offset: int) -> BatchHeader | None:
        """Header of the first batch whose last offset is >= ``offset``, if any."""
        for h in self.headers_from(self.index.position_for_offset(offset)):
            if h.last_offset >= offset:
                return h
        return None

    def find_timestamp(self, timestamp: int) -> BatchHeader | None:
        """Header of the first batch with max timestamp >= ``timestamp``, if any."""
        if self.max_timestamp < timestamp:
            return None
        for h in self.headers_from(self.index.position_for_timestamp(timestamp)):
            if h.max_timestamp >= timestamp:
                return h
        return None

    def read_batches(
        self, first: BatchHeader, max_bytes: int, min_one: bool, max_offset: int | None = None
    ) -> bytes:
        """Whole batches from ``first`` on, totalling at most ``max_bytes`` (KIP-74: the first
        batch even if larger, when ``min_one``), none starting at or after ``max_offset``."""
        end = first.position
        for h in self.headers_from(first.position):
            if max_offset is not None and h.base_offset >= max_offset:
                break
            if end + h.size - first.position > max_bytes and not (
                min_one and end == first.position
            ):
                break
            end += h.size
        return self.pread(first.position, end - first.position)

    def pread(self, position: int, size: int) -> bytes:
        if size <= 0:
            return b""
        with self._file.use() as fd:
            return os.pread(fd, size, position)

    def batches(self) -> Iterator[tuple[BatchHeader, bytes]]:
        """Each batch's header and bytes, one ``pread`` per batch (used by the cleaner)."""
        for h in self.headers_from(0):
            yield h, self.pread(h.position, h.size)

    # ----------------------------------------------------------------------------- recovery
    def _scan_tail(self, start: int) -> None:
        """Learn next offset and max timestamp from the batches at and after ``start``."""
        for h in self.headers_from(start):
            self.max_timestamp = max(self.max_timestamp, h.max_timestamp)
            self.next_offset = h.next_offset

    def _rebuild(self, start: int, index_interval: int, *, check_crc: bool) -> int:
        """Re-index from ``start``; return the position of the first invalid byte (or size)."""
        self.index = SegmentIndex(self.base_offset)
        self._bytes_since_index = 0
        self.max_timestamp = _NO_TIMESTAMP
        self.next_offset = self.base_offset
        position = start
        for h in self.headers_from(start):
            if h.base_offset < self.next_offset or h.magic != 2:
                break
            if check_crc:
                try:
                    next(iter_headers(self.pread(position, h.size)))
                except (KafkaError, StopIteration):
                    break
            self._track(h, position, h.size, index_interval)
            position += h.size
        return position

    def _recover(self, index_interval: int) -> None:
        valid_end = self._rebuild(0, index_interval, check_crc=True)
        if valid_end < self.size:
            logger.warning(
                "truncating torn or corrupt log tail",
                extra=fields(path=str(self.log_path), valid_bytes=valid_end, size=self.size),
            )
            self.truncate_to(valid_end)
            self.flush()
