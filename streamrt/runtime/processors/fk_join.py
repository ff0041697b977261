"""The KTable-KTable foreign-key join's processors (KIP-213, through two internal topics).

The left table is partitioned by its key, the right table by the foreign key, so they cannot be
co-located. As in Kafka Streams:

1. left updates send a *subscription* (instruction, hash of the new left value, primary key,
   and the partition of the left record) to ``<name>-subscription-registration-repartition``,
   keyed by the foreign key;
2. next to the right table, a subscription store keyed by (FK, PK) remembers the subscribers; a
   subscription is answered, and every right update is sent to all its subscribers, as a
   *response* (hash, right value, the subscriber's partition) keyed by the primary key on
   ``<name>-subscription-response-repartition``, written to that partition
   (:func:`primary_partition`, Kafka's default: the answer goes back where the left row is,
   however the left table is partitioned);
3. next to the left table again, a response is joined with the *current* left value only if the
   hash still matches: a stale answer (the left row changed or moved to another FK since) is
   dropped, so results never go back in time although responses come from different tasks.

The hash is BLAKE2b-128 of the serialized left value (Kafka uses Murmur3-128).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable
from typing import Any

from streamrt.runtime.graph.nodes import ValueGetter
from streamrt.runtime.processor import Change, Processor, ProcessorContext
from streamrt.runtime.processors.fk_join_wire import (
    encode_entry,
    encode_response,
    encode_subscription,
    parse_entry,
    parse_response,
    parse_subscription,
    response_partition,
)
from streamrt.runtime.processors.tables import as_change
from streamrt.serde import Serde

__all__ = (
    "ForeignTableUpdateProcessor",
    "ResponseJoinProcessor",
    "SubscriptionReceiveProcessor",
    "SubscriptionSendProcessor",
    "primary_partition",
)

DELETE_KEY_AND_PROPAGATE = 0
DELETE_KEY_NO_PROPAGATE = 1
PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE = 2
PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE = 3

_U32 = struct.Struct(">I")
_NO_HASH = b""


def value_hash(data: bytes | None) -> bytes:
    return _NO_HASH if data is None else hashlib.blake2b(data, digest_size=16).digest()


def primary_partition(topic: str, key: Any, value: Any, count: int) -> set[int] | None:
    """The response sink's default stream partitioner: the partition of the left record that
    subscribed (None, the key hash, if unknown)."""
    del topic, key, count
    partition = response_partition(value)
    return None if partition < 0 else {partition}


def _prefix(fk: bytes) -> bytes:
    return _U32.pack(len(fk)) + fk


class SubscriptionSendProcessor(Processor):
    """Left updates → subscriptions keyed by FK (and local answers for a null FK)."""

    def __init__(
        self,
        fk_of: Callable[[Any, Any], Any],  # (key, value) -> foreign key
        fk_serde: Serde[Any],
        pk_serde: Serde[Any],
        value_serde: Serde[Any],
        left: bool,
        sink: str,
        local: str,
    ) -> None:
        self.fk_of = fk_of
        self.fk_serde = fk_serde
        self.pk_serde = pk_serde
        self.value_serde = value_serde
        self.left = left
        self.sink = sink
        self.local = local

    def _fk(self, key: Any, value: Any) -> bytes | None:
        if value is None:
            return None
        fk = self.fk_of(key, value)
        return None if fk is None else self.fk_serde.serialize(fk)

    def _send(self, fk: bytes, instruction: int, digest: bytes, pk: bytes) -> None:
        subscription = encode_subscription(instruction, digest, pk, self.context.partition)
        self.context.forward(fk, subscription, to=self.sink)

    def _propagate_null(self, fk: bytes | None, digest: bytes, pk: bytes) -> None:
        """Ask for an answer even without a right row; for a null FK, answer here (Kafka
        sends it through the subscription topic, answered with no right row)."""
        if fk is None:
            response = encode_response(digest, None, self.context.partition)
            self.context.forward(pk, response, to=self.local)
        else:
            self._send(fk, PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE, digest, pk)

    def process(self, key: Any, value: Any) -> None:
        if key is None:
            return
        change = as_change(value)
        pk = self.pk_serde.serialize(key) or b""
        digest = value_hash(self.value_serde.serialize(change.new))
        new_fk, old_fk = self._fk(key, change.new), self._fk(key, change.old)
        if self.left:
            self._left_join(change, new_fk, old_fk, digest, pk)
        else:
            self._inner_join(change, new_fk, old_fk, digest, pk)

    def _left_join(
        self, change: Change, new_fk: bytes | None, old_fk: bytes | None, digest: bytes, pk: bytes
    ) -> None:
        """Kafka's left-join rule: every update (a delete too) asks for an answer at the new
        FK; a changed FK first retracts the old subscription without an answer."""
        if change.new is None and change.old is None:
            return
        if old_fk is not None and old_fk != new_fk:
            self._send(old_fk, DELETE_KEY_NO_PROPAGATE, digest, pk)
        self._propagate_null(new_fk, digest, pk)

    def _inner_join(
        self, change: Change, new_fk: bytes | None, old_fk: bytes | None, digest: bytes, pk: bytes
    ) -> None:
        """Kafka's inner-join rule: a delete or a null new FK retracts the old subscription
        with an answer (the tombstone); a changed FK asks the new one for an answer even
        without a row; otherwise only a joining row answers."""
        if change.new is None or new_fk is None:
            if old_fk is not None:
                self._send(old_fk, DELETE_KEY_AND_PROPAGATE, digest, pk)
            return
        if old_fk is not None and old_fk != new_fk:
            self._send(old_fk, DELETE_KEY_NO_PROPAGATE, digest, pk)
            self._send(new_fk, PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE, digest, pk)
            return
        self._send(new_fk, PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE, digest, pk)


class SubscriptionReceiveProcessor(Processor):
    """Keeps (FK, PK) → hash next to the right table and answers with the right value."""

    def __init__(
        self, store: str, right: ValueGetter, fk_serde: Serde[Any], right_serde: Serde[Any]
    ) -> None:
        self.store_name = store
        self.right = right
        self.fk_serde = fk_serde
        self.right_serde = right_serde

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.store = context.get_store(self.store_name)
        self.reader = self.right.open(context)
        self.get_right = self.reader.timed

    def close(self) -> None:
        self.reader.close()

    def process(self, key: Any, value: Any) -> None:
        fk: bytes = key
        instruction, digest, pk, partition = parse_subscription(value)
        entry = _prefix(fk) + pk
        if instruction in (DELETE_KEY_AND_PROPAGATE, DELETE_KEY_NO_PROPAGATE):
            self.store.delete(entry)
        else:  # the subscriber's partition, then the hash of its left value
            self.store.put(entry, encode_entry(partition, digest))
        if instruction == DELETE_KEY_NO_PROPAGATE:
            return
        found = self.get_right(self.fk_serde.deserialize(fk))
        right = None if found is None else found.value
        # Kafka: the answer carries max(subscription's, FK row's timestamp)
        ts = self.context.timestamp
        ts = ts if found is None else max(ts, found.timestamp)
        if instruction == DELETE_KEY_AND_PROPAGATE:
            self.context.forward(pk, encode_response(digest, None, partition), timestamp=ts)
        elif right is not None or instruction == PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE:
            answer = encode_response(digest, self._serialize_right(right), partition)
            self.context.forward(pk, answer, timestamp=ts)

    def _serialize_right(self, right: Any) -> bytes | None:
        return None if right is None else self.right_serde.serialize(right)


class ForeignTableUpdateProcessor(Processor):
    """A right update goes to every subscriber of its key (prefix scan by FK)."""

    def __init__(self, store: str, fk_serde: Serde[Any], right_serde: Serde[Any]) -> None:
        self.store_name = store
        self.fk_serde = fk_serde
        self.right_serde = right_serde

    def process(self, key: Any, value: Any) -> None:
        if key is None:
            return
        change = as_change(value)
        fk = self.fk_serde.serialize(key) or b""
        prefix = _prefix(fk)
        store = self.context.get_store(self.store_name)
        new = None if change.new is None else self.right_serde.serialize(change.new)
        end = (int.from_bytes(prefix, "big") + 1).to_bytes(len(prefix), "big")
        for entry, subscribed in list(store.half_open_range(prefix, end)):
            if not entry.startswith(prefix):
                continue
            partition, digest = parse_entry(subscribed)
            self.context.forward(entry[len(prefix) :], encode_response(digest, new, partition))


class ResponseJoinProcessor(Processor):
    """Joins a response with the current left value if the hash still matches."""

    def __init__(
        self,
        left: ValueGetter,
        pk_serde: Serde[Any],
        left_serde: Serde[Any],
        right_serde: Serde[Any],
        joiner: Callable[[Any, Any], Any],
        left_join: bool,
        output_store: str | None = None,
    ) -> None:
        self.left = left
        self.pk_serde = pk_serde
        self.left_serde = left_serde
        self.right_serde = right_serde
        self.joiner = joiner
        self.left_join = left_join
        self.output_store = output_store  # set: keep results, send the one each replaces

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.reader = self.left.open(context)
        self.get_left = self.reader.value

    def close(self) -> None:
        self.reader.close()

    def process(self, key: Any, value: Any) -> None:
        digest, right_bytes, _ = parse_response(value)
        pk = self.pk_serde.deserialize(key)
        current = self.get_left(pk)
        if value_hash(self.left_serde.serialize(current)) != digest:
            return  # stale: the left row changed since this answer was asked for
        right = None if right_bytes is None else self.right_serde.deserialize(right_bytes)
        if current is None:
            result = None
        elif right is None:
            result = self.joiner(current, None) if self.left_join else None
        else:
            result = self.joiner(current, right)
        old = None
        if self.output_store is not None:
            store = self.context.get_store(self.output_store)
            old = store.get(pk)
            if result is None:
                store.delete(pk)
            else:
                store.put(pk, result)
        self.context.forward(pk, Change(result, old))
