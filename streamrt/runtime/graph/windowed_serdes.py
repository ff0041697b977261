"""Windowed keys on the wire as Kafka Streams 4.3.1 writes them, and their default partitioner.

Kafka's ``WindowedSerdes``: a time window (tumbling, hopping, sliding) is the inner key's bytes
then the window start (8 bytes, big-endian); the reader rebuilds the end as start + window
size, so it must be told the size (Kafka 4.x has no default: ``window.size.ms`` or the
constructor; the removed one-argument constructor used ``Long.MAX_VALUE``). A session window
is the inner key then end then start (``SessionKeySchema``). ``to()`` partitions a windowed key
by its inner key alone (``WindowedStreamPartitioner``), so a windowed result lands on the
partition its key's input came from.
"""

from __future__ import annotations

import struct
from typing import Any, Protocol, runtime_checkable

from streamrt.key_partition import murmur2_cached
from streamrt.runtime.processor import Windowed
from streamrt.serde import Serde, bind_serde

__all__ = (
    "SessionWindowedSerde",
    "TimeWindowedSerde",
    "WindowedSerializer",
    "WindowedStreamPartitioner",
    "windowed_partitioner",
)

_LONG = struct.Struct(">q")
_TWO_LONGS = struct.Struct(">qq")
_MAX_LONG = 2**63 - 1

# murmur2 is pure Python (~7 us for a short key); a windowed result's key repeats with every
# update of its windows, so hashes are remembered per inner key (bytes hash in C)
_murmur2 = murmur2_cached


@runtime_checkable
class WindowedSerializer(Protocol):
    """A windowed key serde that can write the inner key alone (Kafka's
    ``WindowedSerializer.serializeBaseKey``): what the default partitioner hashes."""

    def serialize_base_key(self, value: Windowed) -> bytes: ...


def _inner_bytes(inner: Serde[Any], value: Windowed) -> bytes:
    data = inner.serialize(value.key)
    if data is None:
        raise ValueError(f"the windowed key {value!r} has an inner key that serializes to null")
    return data


class TimeWindowedSerde:
    """Kafka's ``WindowedSerdes.TimeWindowedSerde(inner, windowSize)``: inner key + start;
    the end read back is start + ``window_size_ms`` (at most 2**63 - 1, as Kafka truncates)."""

    def __init__(self, inner: Serde[Any], window_size_ms: int) -> None:
        if isinstance(window_size_ms, bool) or not isinstance(window_size_ms, int):
            raise TypeError(
                f"TimeWindowedSerde needs the window size in ms (an int), got {window_size_ms!r}"
            )
        if window_size_ms <= 0:
            raise ValueError(f"window size must be > 0 ms, got {window_size_ms}")
        self.inner = inner
        self.window_size_ms = window_size_ms

    def __repr__(self) -> str:
        return f"TimeWindowedSerde({self.inner!r}, {self.window_size_ms})"

    def serialize(self, value: Windowed | None) -> bytes | None:
        if value is None:
            return None
        return _inner_bytes(self.inner, value) + _LONG.pack(value.start)

    def serialize_base_key(self, value: Windowed) -> bytes:
        return _inner_bytes(self.inner, value)

    def deserialize(self, data: bytes | None) -> Windowed | None:
        if not data:  # Kafka: null or empty bytes are a null key
            return None
        if len(data) < _LONG.size:
            raise ValueError(f"a time-windowed key needs at least 8 bytes, got {len(data)}")
        (start,) = _LONG.unpack_from(data, len(data) - _LONG.size)
        end = min(start + self.window_size_ms, _MAX_LONG)
        return Windowed(self.inner.deserialize(data[: -_LONG.size]), start, end)

    def for_topic(self, topic: str, *, is_key: bool) -> TimeWindowedSerde:
        """The serde with its inner serde bound to ``topic`` (a schema registry serde)."""
        return TimeWindowedSerde(bind_serde(self.inner, topic, is_key=is_key), self.window_size_ms)


class SessionWindowedSerde:
    """Kafka's ``WindowedSerdes.SessionWindowedSerde(inner)``: inner key + end + start."""

    def __init__(self, inner: Serde[Any]) -> None:
        self.inner = inner

    def __repr__(self) -> str:
        return f"SessionWindowedSerde({self.inner!r})"

    def serialize(self, value: Windowed | None) -> bytes | None:
        if value is None:
            return None
        return _inner_bytes(self.inner, value) + _TWO_LONGS.pack(value.end, value.start)

    def serialize_base_key(self, value: Windowed) -> bytes:
        return _inner_bytes(self.inner, value)

    def deserialize(self, data: bytes | None) -> Windowed | None:
        if not data:
            return None
        if len(data) < _TWO_LONGS.size:
            raise ValueError(f"a session-windowed key needs at least 16 bytes, got {len(data)}")
        end, start = _TWO_LONGS.unpack_from(data, len(data) - _TWO_LONGS.size)
        return Windowed(self.inner.deserialize(data[: -_TWO_LONGS.size]), start, end)

    def for_topic(self, topic: str, *, is_key: bool) -> SessionWindowedSerde:
        """The serde with its inner serde bound to ``topic`` (a schema registry serde)."""
        return SessionWindowedSerde(bind_serde(self.inner, topic, is_key=is_key))


class WindowedStreamPartitioner:
    """Kafka's ``WindowedStreamPartitioner``: the partition of a windowed key is the
    producer's default for its inner key (murmur2 of those bytes, positive, mod the count)."""

    def __init__(self, serializer: WindowedSerializer) -> None:
        self.serializer = serializer

    def __call__(self, topic: str, key: Any, value: Any, num_partitions: int) -> set[int] | None:
        del topic, value
        if key is None:  # no key to hash: the producer's partitioner
            return None
        data = self.serializer.serialize_base_key(key)
        return {(_murmur2(data) & 0x7FFFFFFF) % num_partitions}


def windowed_partitioner(key_serde: Any) -> WindowedStreamPartitioner | None:
    """The partitioner ``to()`` uses by default for ``key_serde``: a windowed serde's
    (Kafka's ``StreamSinkNode``), or None (the producer's partitioner)."""
    if isinstance(key_serde, WindowedSerializer):
        return WindowedStreamPartitioner(key_serde)
    return None
