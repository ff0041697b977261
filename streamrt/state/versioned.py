"""A versioned key-value store (Kafka's KIP-914 ``VersionedKeyValueStore``) on any bytes store.

Every put is a version ``(key, timestamp) -> value``; a delete is a version too (a tombstone),
so "as of" reads see it. ``get(key)`` is the latest version; ``get_as_of(key, t)`` the version
with the largest timestamp ``<= t``. Versions are kept for ``history_retention_ms`` behind the
observed stream time (the largest put timestamp): an older put is dropped, an older as-of
read answers None, and versions no longer needed for a read within retention are removed.

The layout is on the bytes store, so RocksDB, in-memory and changelogging all come for free:
``<key length: 4 bytes BE><key><timestamp: 8 bytes, sign bit flipped>`` -> ``<1: value | 0:
tombstone><value bytes>``; keys of one record key sort together, versions by time. The observed
stream time is a row of its own (length ``0xFFFFFFFF``), so a restored store knows it again.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

__all__ = ("LATEST", "NOT_PUT", "BytesStore", "Version", "VersionedStore")

_LEN = struct.Struct(">I")
_TS = struct.Struct(">Q")
_SIGN = 1 << 63
_META = b"\xff\xff\xff\xff"  # no record key is 4 GiB long
_VALUE, _TOMBSTONE = b"\x01", b"\x00"
# put() answers the new version's "valid to" (the next version's timestamp), or one of these
# (Kafka's PUT_RETURN_CODE_VALID_TO_UNDEFINED and PUT_RETURN_CODE_NOT_PUT)
LATEST = -1  # the new version is the latest
NOT_PUT = -(1 << 63)  # older than the history retention allows: not stored
_UNKNOWN = -(1 << 63)


class BytesStore(Protocol):
    """What a versioned store needs of a bytes store (``KeyValueStore`` has it)."""

    def get(self, key: bytes) -> bytes | None: ...

    def put(self, key: bytes, value: bytes) -> None: ...

    def delete(self, key: bytes) -> None: ...

    def range(self, start: bytes | None, end: bytes | None) -> Iterable[tuple[bytes, bytes]]: ...


@dataclass(frozen=True, slots=True)
class Version:
    """One version of a key: its value (None: a tombstone) and timestamp."""

    value: bytes | None
    timestamp: int


def _prefix(key: bytes) -> bytes:
    return _LEN.pack(len(key)) + key


def _row_key(key: bytes, timestamp: int) -> bytes:
    return _prefix(key) + _TS.pack((timestamp + _SIGN) & ((1 << 64) - 1))


def _row_ts(row_key: bytes) -> int:
    return int(_TS.unpack_from(row_key, len(row_key) - _TS.size)[0]) - _SIGN


def _version(row_key: bytes, raw: bytes) -> Version:
    value = raw[1:] if raw[:1] == _VALUE else None
    return Version(value, _row_ts(row_key))


class VersionedStore:
    """Versions of bytes keys on ``store``; writes go through ``store.put``/``delete``."""

    def __init__(self, store: BytesStore, history_retention_ms: int) -> None:
        if history_retention_ms < 0:
            raise ValueError(f"history retention must be >= 0, got {history_retention_ms}")
        self.store = store
        self.history_retention_ms = history_retention_ms

    @property
    def observed_stream_time(self) -> int:
        """The largest timestamp put so far (a very small number if none)."""
        raw = self.store.get(_META)
        return _UNKNOWN if raw is None else int(_TS.unpack(raw)[0]) - _SIGN

    def _cutoff(self) -> int:
        now = self.observed_stream_time
        return _UNKNOWN if now == _UNKNOWN else now - self.history_retention_ms

    def put(self, key: bytes, value: bytes | None, timestamp: int) -> int:
        """Add the version (``value`` None: a tombstone). Returns :data:`NOT_PUT` if it is
        older than the history retention (Kafka drops it too), :data:`LATEST` if it is the
        latest version, else the timestamp of the version after it (until when it is valid)."""
        if timestamp < self._cutoff():
            return NOT_PUT
        raw = _TOMBSTONE if value is None else _VALUE + value
        self.store.put(_row_key(key, timestamp), raw)
        if timestamp > self.observed_stream_time:
            self.store.put(_META, _TS.pack(timestamp + _SIGN))
        self._expire(key)
        later = [v.timestamp for v in self.versions(key) if v.timestamp > timestamp]
        return later[0] if later else LATEST

    def delete(self, key: bytes, timestamp: int) -> Version | None:
        """A tombstone at ``timestamp``; the version that was valid then (Kafka's delete)."""
        before = self.get_as_of(key, timestamp)
        self.put(key, None, timestamp)
        return before

    def get(self, key: bytes) -> Version | None:
        """The latest version, None if there is none or it is a tombstone."""
        latest = self._last(key, None)
        return latest if latest is not None and latest.value is not None else None

    def get_as_of(self, key: bytes, as_of: int) -> Version | None:
        """The version valid at ``as_of``; None if none, a tombstone, or beyond retention."""
        if as_of < self._cutoff():
            return None
        found = self._last(key, as_of)
        return found if found is not None and found.value is not None else None

    def versions(self, key: bytes) -> list[Version]:
        """Every kept version of ``key``, oldest first, tombstones included."""
        start = _prefix(key)
        rows = self.store.range(start, _row_key(key, (1 << 63) - 1) + b"\x00")
        return [_version(k, v) for k, v in rows]

    def _last(self, key: bytes, as_of: int | None) -> Version | None:
        """The newest version with timestamp <= ``as_of`` (None: any)."""
        found: Version | None = None
        for version in self.versions(key):
            if as_of is not None and version.timestamp > as_of:
                break
            found = version
        return found

    def _expire(self, key: bytes) -> None:
        """Drop versions that no as-of read within retention can reach: all older than the
        newest version at or before the cutoff."""
        cutoff = self._cutoff()
        older = [v for v in self.versions(key) if v.timestamp <= cutoff]
        for version in older[:-1]:
            self.store.delete(_row_key(key, version.timestamp))
