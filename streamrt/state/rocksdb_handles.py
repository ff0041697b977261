"""Persist and close for the RocksDB-backed stores (key-value and segmented window stores).

Both open one database with a metadata column family beside it; they persist and close the
pair alike, so that policy (background flush; close the column family before its database,
without flushing) lives here once.
"""

from __future__ import annotations

import rocksdict

__all__ = ("close_handles", "flush_in_background")


def flush_in_background(db: rocksdict.Rdict | None, meta: rocksdict.Rdict | None) -> None:
    """Flush the memtables in RocksDB's background (close flushes them too, and waits)."""
    for handle in (db, meta):
        if handle is not None:
            handle.flush(wait=False)


def close_handles(db: rocksdict.Rdict | None, meta: rocksdict.Rdict | None) -> None:
    """Close the metadata column family, then the database: without flushing, since
    unflushed writes are covered by the changelog. The caller drops its references."""
    if meta is not None:
        meta.close()
    if db is not None:
        db.close()
