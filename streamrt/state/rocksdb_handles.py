"""Open, persist and close for the RocksDB-backed stores (key-value and segmented window stores).

Both open one database with a metadata column family beside it (the changelog offset, written
in the same batch as the data); they open, persist and close the pair alike, so that policy
(rebuild from the changelog when the files are unreadable; background flush; close the column
family before its database, without flushing: unflushed writes are covered by the changelog)
lives here once.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from pathlib import Path

import rocksdict

from streamrt.logs import fields

__all__ = ("RocksHandles",)

logger = logging.getLogger(__name__)

_METADATA_CF = "__metadata__"


class RocksHandles:
    """Mixin for a store named ``name`` holding ``_db`` and its metadata column family ``_meta``."""

    name: str
    _db: rocksdict.Rdict | None
    _meta: rocksdict.Rdict | None

    def _open_handles(self, path: Path, options: Callable[[], rocksdict.Options]) -> None:
        """Open ``path`` (the metadata family is created on the first open); unreadable files
        are deleted so the changelog rebuilds the store."""
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db, self._meta = _open(path, options)
        except Exception as exc:
            logger.warning(
                "state store unreadable, deleting it to rebuild from the changelog",
                extra=fields(store=self.name, path=str(path), error=str(exc)),
            )
            shutil.rmtree(path, ignore_errors=True)
            self._db, self._meta = _open(path, options)

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

    def _require_db(self) -> rocksdict.Rdict:
        if self._db is None:
            raise RuntimeError(f"state store {self.name} is not open")
        return self._db

    def _require_meta(self) -> rocksdict.Rdict:
        if self._meta is None:
            raise RuntimeError(f"state store {self.name} is not open")
        return self._meta


def _open(
    path: Path, options: Callable[[], rocksdict.Options]
) -> tuple[rocksdict.Rdict, rocksdict.Rdict]:
    if path.exists() and _METADATA_CF in rocksdict.Rdict.list_cf(str(path), options()):
        db = rocksdict.Rdict(str(path), options(), column_families={_METADATA_CF: options()})
        return db, db.get_column_family(_METADATA_CF)
    db = rocksdict.Rdict(str(path), options())
    return db, db.create_column_family(_METADATA_CF, options())
