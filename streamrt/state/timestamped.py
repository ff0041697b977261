"""The bytes format of a timestamped key-value store (Kafka's ``TimestampedKeyValueStore``).

The local store holds ``<timestamp: 8 bytes BE, signed><value bytes>`` so a KTable or an
aggregate keeps its row timestamp; the changelog holds the plain value bytes with the row
timestamp as the record's timestamp (Kafka's changelog format), and restoration puts the
prefix back from the record timestamp.

A persistent store written before timestamps has no ``<name>.timestamped`` marker beside it:
:func:`upgrade_store_directory` removes it so it is rebuilt from its changelog (whose format
did not change).
"""

from __future__ import annotations

import logging
import shutil
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path

__all__ = ("NO_TIMESTAMP", "decode", "encode", "encode_rows", "upgrade_store_directory")

logger = logging.getLogger(__name__)

_TS = struct.Struct(">q")
NO_TIMESTAMP = -1  # a row whose timestamp is unknown (a plain key-value store's)


def encode(value: bytes, timestamp: int) -> bytes:
    """The stored bytes of ``value`` with its row timestamp."""
    return _TS.pack(timestamp) + value


def encode_rows(
    rows: Iterable[tuple[bytes, bytes | None] | tuple[bytes, bytes | None, int]],
) -> Iterator[tuple[bytes, bytes | None]]:
    """Changelog rows ``(key, value or None[, record timestamp])`` as a timestamped store
    holds them, lazily (a restore streams them into its WriteBatch: no list, no call per
    row)."""
    pack = _TS.pack
    for row in rows:
        value = row[1]
        yield row[0], None if value is None else pack(
            row[2] if len(row) > 2 else NO_TIMESTAMP  # type: ignore[misc]
        ) + value


def decode(raw: bytes) -> tuple[bytes, int]:
    """The value bytes and the row timestamp of a stored entry."""
    return raw[_TS.size :], _TS.unpack_from(raw)[0]


def upgrade_store_directory(directory: Path, name: str) -> None:
    """Before a timestamped RocksDB store ``name`` opens under ``directory``: a store of the
    old format (no marker) is removed, to be restored from its changelog; then mark it."""
    marker = directory / f"{name}.timestamped"
    store_dir = directory / name
    if store_dir.exists() and not marker.exists():
        logger.warning(
            "store %s has values without timestamps (older streamrt): removed, it is restored "
            "from its changelog",
            store_dir,
        )
        shutil.rmtree(store_dir)
    directory.mkdir(parents=True, exist_ok=True)
    marker.touch()
