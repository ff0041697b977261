"""RocksDBStore: one state store of one task, with its changelog position stored atomically.

Writes are staged in memory (read-your-writes) and reach RocksDB only in :meth:`flush`, which
puts the staged data **and** the changelog offset the store has reached into one
``WriteBatch``. After a crash the store therefore holds exactly the data up to the offset it
records, and restoration resumes from that offset; when it equals the changelog end there is
nothing to restore.

Restoration and standby updates (:meth:`write_batch`) write **without the WAL**, as Kafka
Streams does: the changelog is their durability. Their data is flushed to files before their
offset (RocksDB's own flushes take both column families together: ``atomic_flush``), so a
crash leaves at worst data ahead of the recorded offset, never behind it, and a restore
resumes from that offset. The WAL-less data is flushed every :data:`UNLOGGED_FLUSH_RECORDS`
records, and no write uses the WAL again before they are on files, so a WAL replay never
lands on a gap.

The end of a restore and a promoted standby's first commit do not wait for that flush: while
written-without-WAL data is not yet on files, commits are written without the WAL too and one
background flush of the data is asked (see :meth:`flush`); the commit after it landed uses the
WAL again. A crash before it lands reopens the store at an older offset whose data is all there
(RocksDB flushes the data family on its own, or both families together), and the restore runs
again from it: nothing is lost.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path

import rocksdict

from streamrt.state.rocksdb_handles import RocksHandles

__all__ = ("RocksDBStore",)


_METADATA_CF = "__metadata__"
_CHANGELOG_OFFSET_KEY = b"changelog_offset"
_OFFSET = struct.Struct(">q")
_DELETED = object()
_UNFLUSHED_MEMTABLES = "rocksdb.num-immutable-mem-table"  # switched, not yet written to files
# records written without the WAL before their memtables are flushed to files: bounds what a
# crash makes a restore or a standby fetch again
UNLOGGED_FLUSH_RECORDS = 200_000
# records per WriteBatch of a restore: one batch per fetch (~25,000 records of 2.3 KB) cost
# ~1.6x the thread CPU of batches of 1,000-5,000 (measured; probably because the big batch's
# buffer grows by copying and leaves the CPU caches before RocksDB copies it into the memtable)
WRITE_BATCH_RECORDS = 2_000


def _options() -> rocksdict.Options:
    options = rocksdict.Options(raw_mode=True)
    options.create_if_missing(True)
    # RocksDB's own (memtable-full) flushes take data and offsets together: WAL-less writes
    # must never reach the files as an offset ahead of its data
    options.set_atomic_flush(True)
    return options


def _unlogged() -> rocksdict.WriteOptions:
    options = rocksdict.WriteOptions()
    options.disable_wal = True  # type: ignore[method-assign,assignment]  # a property; the stub says method
    return options


class RocksDBStore(RocksHandles):
    """A byte-keyed key-value store backed by RocksDB.

    Responsibilities: stage writes; write data + changelog offset in one batch; report the
    changelog offset to restore from; rebuild itself empty when the files are corrupt.
    """

    def __init__(self, name: str, path: Path) -> None:
        self.name = name
        self.path = path
        self._db: rocksdict.Rdict | None = None
        self._meta: rocksdict.Rdict | None = None
        self._pending: dict[bytes, bytes | object] = {}
        self._unlogged = 0  # records written without the WAL since the last memtable flush
        self._flushing = False  # a background flush of WAL-less data, not seen landed yet
        self._no_wal = _unlogged()

    def open(self) -> None:
        """Open the store; corrupt files are deleted so the changelog rebuilds the store."""
        self._open_handles(self.path, _options)

    def persist(self) -> None:
        """Flush the memtables in RocksDB's background (close flushes them too, and waits)."""
        self._flush_memtables(wait=False)

    @property
    def unlogged(self) -> bool:
        """True while some data written without the WAL is not on files yet: commits are then
        written without the WAL as well (a crash reopens the store at an older offset)."""
        if self._flushing and self._db is not None:
            # the background flush asked of the data family has landed once RocksDB holds no
            # memtable it has switched and not yet written
            self._flushing = bool(self._db.property_int_value(_UNFLUSHED_MEMTABLES))
            if not self._flushing and not self._unlogged and self._meta is not None:
                self._meta.flush(wait=False)  # the data of every offset it holds is on files
        return self._unlogged > 0 or self._flushing

    def _flush_memtables(self, *, wait: bool) -> None:
        """Data first, and waited for when written without the WAL, then the offsets: the
        files never hold an offset ahead of their data (at worst a restore applies some
        records again), whether or not RocksDB flushes the two families as one."""
        if self._db is not None:
            self._db.flush(wait=wait or self.unlogged)
        if self._meta is not None:
            self._meta.flush(wait=wait)
        self._unlogged = 0
        self._flushing = False

    def close(self) -> None:
        """Close without flushing (see :class:`RocksHandles`); staged writes are dropped."""
        self._unlogged = 0
        self._flushing = False
        self._close_handles()
        self._pending.clear()

    @property
    def is_open(self) -> bool:
        return self._db is not None

    @property
    def persistent(self) -> bool:
        return True

    def get(self, key: bytes) -> bytes | None:
        staged = self._pending.get(key)
        if staged is _DELETED:
            return None
        if isinstance(staged, bytes):
            return staged
        value = self._require_db().get(key)
        return None if value is None else bytes(value)

    def put(self, key: bytes, value: bytes) -> None:
        self._pending[key] = value

    def delete(self, key: bytes) -> None:
        self._pending[key] = _DELETED

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        """Every key/value, staged writes included (ascending key order)."""
        return self.range(None, None)

    def range(self, start: bytes | None, end: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        """Keys in ``[start, end)`` (``None``: unbounded), staged writes included."""
        db = self._require_db()
        merged: dict[bytes, bytes | object] = {}
        for k, v in db.items(from_key=start) if start is not None else db.items():
            key = bytes(k)  # type: ignore[arg-type]  # raw mode: keys and values are bytes
            if end is not None and key >= end:
                break
            merged[key] = bytes(v)
        merged.update(
            (k, v)
            for k, v in self._pending.items()
            if (start is None or k >= start) and (end is None or k < end)
        )
        for key in sorted(merged):
            value = merged[key]
            if isinstance(value, bytes):
                yield key, value

    def changelog_offset(self) -> int | None:
        """The next changelog offset to restore from, or ``None`` if never checkpointed."""
        raw = self._require_meta().get(_CHANGELOG_OFFSET_KEY)
        return None if raw is None else int(_OFFSET.unpack(bytes(raw))[0])

    def flush(self, changelog_offset: int | None) -> None:
        """Write staged data and ``changelog_offset`` (if given) in one atomic batch.

        With the WAL, unless data written without it is not on files yet (the end of a
        restore, a promoted standby's first commits): then without the WAL, and one background
        flush of the data family is asked, not waited for (the offsets family is not flushed
        alone: its files never get ahead of the data's)."""
        db = self._require_db()
        unlogged = self.unlogged
        batch = rocksdict.WriteBatch(raw_mode=True)
        for key, value in self._pending.items():
            if value is _DELETED:
                batch.delete(key)
            else:
                batch.put(key, value)
        if changelog_offset is not None:
            handle = db.get_column_family_handle(_METADATA_CF)
            batch.put(_CHANGELOG_OFFSET_KEY, _OFFSET.pack(changelog_offset), handle)
        if not unlogged:
            if not batch.is_empty():
                db.write(batch)
        else:
            if not batch.is_empty():
                self._unlogged += batch.len()
                db.write(batch, self._no_wal)
            if not self._flushing:
                db.flush(wait=False)
                self._unlogged, self._flushing = 0, True
        self._pending.clear()

    def discard(self) -> None:
        """Drop staged writes: reads see the last flushed state again."""
        self._pending.clear()

    def write_batch(self, records: Iterable[tuple[bytes, bytes | None]], next_offset: int) -> None:
        """Apply changelog records and advance the offset, in batches without the WAL
        (restoration, standby updates); the offset goes with the last, so after a crash the
        data may be ahead of the stored offset (a restore applies some records again), never
        behind it.

        The records go straight into WriteBatches (no staging): restoration is bytes in,
        bytes out, one Python step per record. A batch takes :data:`WRITE_BATCH_RECORDS`
        records, the last one the offset. Every :data:`UNLOGGED_FLUSH_RECORDS` records the
        memtables go to files (data waited for, then the offsets)."""
        if self._pending:
            raise RuntimeError(f"state store {self.name}: restore interleaved with processing")
        db = self._require_db()
        rows = iter(records)
        while True:
            batch = rocksdict.WriteBatch(raw_mode=True)
            put, delete = batch.put, batch.delete
            for key, value in islice(rows, WRITE_BATCH_RECORDS):
                if value is None:
                    delete(key)
                else:
                    put(key, value)
            last = batch.len() < WRITE_BATCH_RECORDS
            if last:
                handle = db.get_column_family_handle(_METADATA_CF)
                batch.put(_CHANGELOG_OFFSET_KEY, _OFFSET.pack(next_offset), handle)
            self._unlogged += batch.len()
            db.write(batch, self._no_wal)
            if last:
                break
        if self._unlogged >= UNLOGGED_FLUSH_RECORDS:
            self._flush_memtables(wait=False)
