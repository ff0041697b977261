"""Which partition of an internal topic owns a group or transactional id (Kafka's rule)."""

from __future__ import annotations

__all__ = ("java_string_hashcode", "partition_for")


def java_string_hashcode(s: str) -> int:
    """Java's ``String.hashCode`` over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    raw = s.encode("utf-16-be")
    for i in range(0, len(raw), 2):
        h = (31 * h + ((raw[i] << 8) | raw[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(key: str, partitions: int) -> int:
    """Kafka's ``Utils.abs(key.hashCode) % n``; ``Utils.abs`` maps MIN_INT to 0."""
    h = java_string_hashcode(key)
    return (0 if h == -(2**31) else abs(h)) % partitions
