"""Kafka's default partitioner for a keyed record: which partition a key's bytes go to.

The producer's rule (Java's ``BuiltInPartitioner.partitionForKey``, librdkafka's
``murmur2_random``): murmur2 of the serialized key, made positive, modulo the partition
count. The runtime needs it without a client (which instance owns a key; a windowed result's
partition from its inner key), so it lives here, one place, on aiokafka's murmur2 (a hash
function, not a client: the ``engine-clients`` contract is about clients).
"""

from __future__ import annotations

import functools

from aiokafka.partitioner import murmur2

__all__ = ("murmur2_cached", "partition_for_key")


def partition_for_key(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for ``key`` among ``partitions``."""
    return int(murmur2(key) & 0x7FFFFFFF) % partitions


#: murmur2 is pure Python (~7 us for a short key): callers whose keys repeat (a windowed
#: result's inner key, with every update of its windows) remember hashes per key
murmur2_cached = functools.lru_cache(maxsize=16_384)(murmur2)
