"""The grace-period buffer of a stream-table join (Kafka's ``RocksDBTimeOrderedKeyValueBuffer``
behind ``Joined.withGracePeriod``, KIP-923).

Stream records wait in a changelogged store until the stream time has passed their timestamp
by the grace period, then leave in timestamp order (then serialized key, then arrival), each
with its own timestamp and headers, to be joined against the table as of that timestamp. The
rows are ``<timestamp: 8 bytes, sign bit flipped><key bytes><sequence: 8 bytes>`` ->
``<value length: 4 bytes><value bytes><headers>``, so a range scan up to the deadline finds
exactly the records due. The join's stream time is kept in the same store under a 4-byte key
(no row is shorter than 16 bytes), as Kafka's buffer keeps it in its segmented store, so a
reopened or restored task refuses a late record as the live one would have.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from streamrt.runtime.processor import Headers, KeyValueStore
from streamrt.serde import Serde

__all__ = ("BufferedRecord", "GraceBuffer")

_U64 = struct.Struct(">Q")
_U32 = struct.Struct(">I")
_SIGN = 1 << 63
_MASK = (1 << 64) - 1
_CLOCK = b"\xff\xff\xff\xff"  # the stream time; a row has 8 + key + 8 bytes
_ROW_MIN = 16


@dataclass(frozen=True, slots=True)
class BufferedRecord:
    """A stream record as it entered the buffer."""

    key: Any
    value: Any
    timestamp: int
    headers: Headers


def _time_bytes(timestamp: int) -> bytes:
    return _U64.pack((timestamp + _SIGN) & _MASK)


def _encode_value(value: bytes, headers: Headers) -> bytes:
    parts = [_U32.pack(len(value)), value, _U32.pack(len(headers))]
    for name, data in headers:
        nb = name.encode()
        parts += [_U32.pack(len(nb)), nb, _U32.pack(len(data)), data]
    return b"".join(parts)


def _decode_value(raw: bytes) -> tuple[bytes, Headers]:
    def take(at: int) -> tuple[bytes, int]:
        size = _U32.unpack_from(raw, at)[0]
        return raw[at + 4 : at + 4 + size], at + 4 + size

    value, at = take(0)
    count, at = _U32.unpack_from(raw, at)[0], at + 4
    headers = []
    for _ in range(count):
        name, at = take(at)
        data, at = take(at)
        headers.append((name.decode(), data))
    return value, tuple(headers)


class GraceBuffer:
    """Stream records held in ``store`` (a bytes-keyed, bytes-valued key-value store)."""

    def __init__(
        self, store: KeyValueStore, key_serde: Serde[Any], value_serde: Serde[Any]
    ) -> None:
        self.store = store
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.sequence: int | None = None  # read at the first put: the store may be restoring

    def put(self, key: Any, value: Any, timestamp: int, headers: Headers) -> None:
        kb, vb = self.key_serde.serialize(key), self.value_serde.serialize(value)
        if self.sequence is None:  # after any restored record, so none is overwritten
            held = (_U64.unpack(k[-8:])[0] for k, _ in self.store.items() if len(k) >= _ROW_MIN)
            self.sequence = 1 + max(held, default=0)
        row = _time_bytes(timestamp) + bytes(kb or b"") + _U64.pack(self.sequence)
        self.sequence += 1
        self.store.put(row, _encode_value(bytes(vb or b""), headers))

    def stream_time(self) -> int | None:
        """The stream time kept with :meth:`keep_stream_time` (None: none yet)."""
        raw = self.store.get(_CLOCK)
        return None if raw is None else int(_U64.unpack(raw)[0]) - _SIGN

    def keep_stream_time(self, timestamp: int) -> None:
        self.store.put(_CLOCK, _time_bytes(timestamp))

    def evict_until(self, deadline: int, emit: Callable[[BufferedRecord], None]) -> None:
        """Remove and ``emit`` every record with timestamp <= ``deadline``, oldest first."""
        for row, raw in [due for due in self._due(deadline) if len(due[0]) >= _ROW_MIN]:
            self.store.delete(row)
            value, headers = _decode_value(raw)
            emit(
                BufferedRecord(
                    self.key_serde.deserialize(row[8:-8]),
                    self.value_serde.deserialize(value),
                    int(_U64.unpack(row[:8])[0]) - _SIGN,
                    headers,
                )
            )

    def _due(self, deadline: int) -> Iterator[tuple[bytes, bytes]]:
        if deadline + 1 > (1 << 63) - 1:
            return iter(self.store.range(None, None))
        # the bound is 8 bytes, every row at least 16: no row equals it, so the scan is the
        # same whether ``range`` includes its end (a store view, as Kafka's) or not (bytes)
        return iter(self.store.range(None, _time_bytes(deadline + 1)))
