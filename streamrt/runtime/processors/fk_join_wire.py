"""The foreign-key join's internal records and subscription-store entries, versioned.

Why versioned: they live in internal topics and in a changelogged store, so an upgraded app
reads what the previous version wrote (in-flight subscriptions and responses, the store's
entries). Kafka's ``SubscriptionWrapper`` and ``SubscriptionResponseWrapper`` begin with a
version byte for the same reason. The unversioned layouts (no subscriber partition) are still
read, as version 0; the subscriber's partition is then unknown (-1: the response goes by the
key hash, Kafka's null ``primaryPartition``).

- subscription v1: ``0xF1, instruction, len(hash), partition (i32), hash, primary key``;
  v0: ``instruction, len(hash), hash, primary key`` (instruction 0-3, so never 0xF1);
- response v1: ``0xF1, len(hash), has value, partition (i32), hash, value``;
  v0: ``len(hash), has value, hash, value`` (len 0 or 16, so never 0xF1);
- subscription-store entry v1: ``partition (i32), hash`` (4 or 20 bytes); v0: the hash, or
  ``\\x00`` for none (16 or 1 byte).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

__all__ = (
    "Response",
    "Subscription",
    "encode_entry",
    "encode_response",
    "encode_subscription",
    "parse_entry",
    "parse_response",
    "parse_subscription",
    "response_partition",
)

_V1 = 0xF1
_I32 = struct.Struct(">i")  # a partition; -1: unknown (Kafka's null primaryPartition)
_NO_DIGEST_V0 = b"\x00"


class Subscription(NamedTuple):
    instruction: int
    digest: bytes
    pk: bytes
    partition: int


class Response(NamedTuple):
    digest: bytes
    value: bytes | None
    partition: int


def encode_subscription(instruction: int, digest: bytes, pk: bytes, partition: int) -> bytes:
    return bytes([_V1, instruction, len(digest)]) + _I32.pack(partition) + digest + pk


def parse_subscription(raw: bytes) -> Subscription:
    if raw[0] != _V1:  # v0
        n = raw[1]
        return Subscription(raw[0], raw[2 : 2 + n], raw[2 + n :], -1)
    n = raw[2]
    return Subscription(raw[1], raw[7 : 7 + n], raw[7 + n :], _I32.unpack_from(raw, 3)[0])


def encode_response(digest: bytes, value: bytes | None, partition: int) -> bytes:
    head = bytes([_V1, len(digest), 0 if value is None else 1]) + _I32.pack(partition)
    return head + digest + (value or b"")


def parse_response(raw: bytes) -> Response:
    if raw[0] != _V1:  # v0
        n, has = raw[0], raw[1]
        return Response(raw[2 : 2 + n], raw[2 + n :] if has else None, -1)
    n, has = raw[1], raw[2]
    value = raw[7 + n :] if has else None
    return Response(raw[7 : 7 + n], value, _I32.unpack_from(raw, 3)[0])


def response_partition(raw: bytes) -> int:
    """The subscriber's partition a response goes back to (-1: unknown)."""
    return _I32.unpack_from(raw, 3)[0] if raw[0] == _V1 else -1


def encode_entry(partition: int, digest: bytes) -> bytes:
    return _I32.pack(partition) + digest


def parse_entry(raw: bytes) -> tuple[int, bytes]:
    """(the subscriber's partition, the hash of its left value) of a subscription-store entry."""
    if len(raw) in (4, 20):
        return _I32.unpack_from(raw)[0], raw[4:]
    return -1, b"" if raw == _NO_DIGEST_V0 else raw  # v0
