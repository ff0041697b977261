"""Persist and close for the RocksDB-backed stores (key-value and segmented window stores).

Both open one database with a metadata column family beside it; they persist and close the
pair alike, so that policy (background flush; close the column family before its database,
without flushing: unflushed writes are covered by the changelog) lives here once.
"""

from __future__ import annotations

import rocksdict

__all__ = ("RocksHandles",)


class RocksHandles:
    """Mixin for a store holding ``_db`` and its metadata column family ``_meta``."""

    _db: rocksdict.Rdict | None
    _meta: rocksdict.Rdict | None

    def persist(self) -> None:
        """Flush the memtables in RocksDB's background (close flushes them too, and waits)."""
        for handle in (self._db, self._meta):
            if handle is not None:
                handle.flush(wait=False)

    def _close_handles(self) -> None:
        """Close the column family, then the database, without flushing; drop both."""
        if self._meta is not None:
            self._meta.close()
            self._meta = None
        if self._db is not None:
            self._db.close()
            self._db = None
