"""librdkafka (confluent-kafka) as a stream thread's restore consumer.

Why: a full restore on aiokafka spent a third of the thread decoding fetched batches in Python
and a fifth in asyncio (docs/bench/history.md, "Runtime: heavy-state app per thread"). librdkafka
fetches, decompresses and decodes on its own threads and keeps prefetching (up to
``queued.max.messages.kbytes``) while the stream thread writes what it took into RocksDB, so
fetch and write overlap. The stream threads' one restore consumer, with the restore consumer's
settings (``restore.consumer.`` prefix, security) and ``read_committed`` under exactly_once_v2.

No group: librdkafka insists on a ``group.id`` (the application id, as the main consumer's) but
the consumer is never subscribed and commits nothing. Partitions are started with
``incremental_assign`` at the offsets the stores hold (``OFFSET_BEGINNING`` for a store with
none), a topic's first ones after the topic is looked up (see ``_describe``); one that stays
where the caller wants it keeps running with what librdkafka prefetched.
``consume(n, 0)`` never blocks the event loop; an empty poll sleeps in short slices. What one
poll takes (up to ``max.poll.records``, 50,000 by default) is one WriteBatch per partition.

Positions come from the records handed out, from librdkafka's own position and from its
partition-EOF events (``enable.partition.eof``). Transaction markers and aborted records
(skipped under ``read_committed``) are never handed out, so no record tells that a fetch went
past them. librdkafka moves its position past them as soon as it has fetched them. The EOF
comes only with the next, empty fetch, which the broker holds for ``fetch.max.wait.ms``.
Measured: a restore whose tail was one aborted transaction (what a SIGKILL under exactly_once_v2
leaves) finished in 0.50 s on the EOF, against ~0.05 s on the position.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping, Set
from typing import Any

from streamrt.client_config import ClientConfig
from streamrt.runtime.engine.clients.rdkafka_client import LibrdkafkaConsumerClient
from streamrt.runtime.engine.clients.rdkafka_consumer import librdkafka_consumer_config
from streamrt.runtime.engine.restore_consumer import ChangelogBatch, Row, gc_paused
from streamrt.topic_partition import TopicPartition

__all__ = ("LibrdkafkaRestoreConsumer", "librdkafka_restore_config")

logger = logging.getLogger(__name__)

# confluent_kafka's logical offset and error codes (literal: the module is imported lazily)
_OFFSET_BEGINNING = -2
_PARTITION_EOF = -191
_FATAL_FETCH_ERRORS = frozenset({-140, 29})  # _AUTO_OFFSET_RESET, TOPIC_AUTHORIZATION_FAILED
_IDLE_SLICE_S = 0.002  # an empty poll's sleep between non-blocking consumes
_ENDS_TIMEOUT_S = 30.0
_QUEUE_BACKOFF_MS = 10


def librdkafka_restore_config(
    cfg: ClientConfig,
    client_id: str,
    group_id: str,
    read_committed: bool,
    role: str = "restore.consumer",
) -> tuple[dict[str, Any], int]:
    """The restore consumer's librdkafka config (``restore.consumer.`` settings, the large
    fetch defaults, security) and records per fetch; ``role="global.consumer"`` for the
    global thread's, which reads whole topics the same way."""
    config, max_records = librdkafka_consumer_config(
        cfg, client_id, group_id, read_committed, role=role
    )
    config["enable.partition.eof"] = True  # how a position passes trailing markers
    # Once librdkafka has queued queued.max.messages.kbytes (64 MiB) it stops fetching for
    # fetch.queue.backoff.ms, 1 s by default: a restore that applies the queue in half a
    # second then sat idle for the other half (seen in its fetch debug log). Look again soon.
    config["fetch.queue.backoff.ms"] = _QUEUE_BACKOFF_MS
    return config, max_records


class LibrdkafkaRestoreConsumer(LibrdkafkaConsumerClient):
    """A confluent-kafka ``Consumer`` in assign mode behind
    :class:`~streamrt.runtime.engine.restore_consumer.RestoreConsumer`."""

    role = "librdkafka restore consumer"
    log = logger

    def __init__(self, config: dict[str, Any], max_records: int) -> None:
        super().__init__(config)
        self._max_records = max_records
        self._assigned: set[TopicPartition] = set()
        self._positions: dict[TopicPartition, int] = {}  # next offset, once known
        # librdkafka's position of a partition when it was stopped: it keeps that until its
        # own thread has taken the stop, so after a restart that value is not trusted
        self._stale: dict[TopicPartition, int] = {}
        self._lookup: asyncio.Future[None] | None = None  # look_up's (kept once done)

    @property
    def config(self) -> Mapping[str, Any]:
        """The librdkafka config it was built with."""
        return dict(self._config)

    async def end_offsets(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        """ListOffsets per partition (the last stable offset under read_committed: librdkafka
        sends its ``isolation.level``), off the loop."""
        from confluent_kafka import TopicPartition as RdTP

        def ends() -> dict[TopicPartition, int]:
            return {
                tp: int(
                    self._consumer.get_watermark_offsets(
                        RdTP(tp.topic, tp.partition), _ENDS_TIMEOUT_S, False
                    )[1]
                )
                for tp in partitions
            }

        return await asyncio.to_thread(ends)

    # -- assignment ----------------------------------------------------------------------------

    async def look_up(self, topics: Iterable[str]) -> None:
        """Ahead of the first assignment (a starting thread does this beside its join): look
        the changelog topics up, so the restore's first partitions of each start at once
        instead of after a lookup on the open path (``assign_at``, which waits for this one
        if it is still on rather than asking again; see ``_describe``)."""
        new = set(topics) - self._known_topics
        if new:
            self._lookup = asyncio.ensure_future(self._look_up(new))
            await asyncio.shield(self._lookup)

    async def _look_up(self, topics: set[str]) -> None:
        await asyncio.to_thread(self._describe, topics)
        self._known_topics |= topics

    async def assign_at(self, positions: Mapping[TopicPartition, int | None]) -> None:
        """Stop the partitions no longer wanted or wanted elsewhere, start the rest at their
        offsets; a partition already at its wanted offset keeps its prefetched records."""
        from confluent_kafka import TopicPartition as RdTP

        wanted = dict(positions)
        stop = [
            tp
            for tp in self._assigned
            if tp not in wanted or wanted[tp] is None or self._positions.get(tp) != wanted[tp]
        ]
        if stop:
            for tp in stop:
                stale = self._fetched_to(tp)
                if stale is not None:
                    self._stale[tp] = stale
            self._consumer.incremental_unassign([RdTP(tp.topic, tp.partition) for tp in stop])
        for tp in stop:
            self._assigned.discard(tp)
            self._positions.pop(tp, None)
        start = {tp: at for tp, at in wanted.items() if tp not in self._assigned}
        unknown = [tp for tp, at in start.items() if at is None]
        if unknown:
            start.update(await asyncio.to_thread(self._log_starts, unknown))
        if self._lookup is not None:  # the start's lookup: its topics are known once it ends
            await asyncio.wait((self._lookup,))
        new_topics = {tp.topic for tp in start} - self._known_topics
        if new_topics:
            await asyncio.to_thread(self._describe, new_topics)
            self._known_topics |= new_topics
        for tp, at in start.items():
            if at is not None and at >= 0:
                self._positions[tp] = at
        if start:
            self._consumer.incremental_assign(
                [
                    RdTP(tp.topic, tp.partition, _OFFSET_BEGINNING if at is None else at)
                    for tp, at in start.items()
                ]
            )
        self._assigned.update(start)

    def _log_starts(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int | None]:
        """Each partition's log start offset (None: not known, librdkafka then looks it up).

        Why ask: a partition assigned at ``OFFSET_BEGINNING`` before its leader's connection is
        up waits for librdkafka's 500 ms offset-query retry (measured: 0.5 s before the first
        record, against 3-10 ms for this query and an explicit offset)."""
        from confluent_kafka import KafkaException
        from confluent_kafka import TopicPartition as RdTP

        starts: dict[TopicPartition, int | None] = {}
        for tp in partitions:
            try:
                low, _high = self._consumer.get_watermark_offsets(
                    RdTP(tp.topic, tp.partition), _ENDS_TIMEOUT_S, False
                )
            except KafkaException as exc:
                logger.info("librdkafka restore consumer: log start of %s: %s", tp, exc)
                low = None
            starts[tp] = None if low is None or low < 0 else int(low)
        return starts

    def assignment(self) -> Set[TopicPartition]:
        return frozenset(self._assigned)

    async def position(self, tp: TopicPartition) -> int | None:
        """The offset after the last record handed out, or past the markers and aborted
        records librdkafka skipped after it, or where the fetch found the end; None before any
        is known (a partition started at the log start)."""
        own = self._positions.get(tp)
        if tp not in self._assigned:
            return own
        fetched = self._fetched_to(tp)
        if fetched is None or fetched == self._stale.get(tp):
            return own
        self._stale.pop(tp, None)
        # not recorded as the position: assign_at compares that with the store's offset, which
        # only records move, and would restart a partition that passed markers for nothing
        return fetched if own is None or fetched > own else own

    def _fetched_to(self, tp: TopicPartition) -> int | None:
        """librdkafka's position: after the last message handed out and the markers and
        aborted records it skipped behind it (never past a record still queued)."""
        from confluent_kafka import TopicPartition as RdTP

        try:
            (rd,) = self._consumer.position([RdTP(tp.topic, tp.partition)])
        except Exception:  # closed meanwhile
            return None
        return int(rd.offset) if rd.offset >= 0 else None

    def highwater(self, partition: TopicPartition) -> int | None:
        """The high watermark of the last fetch (None: not fetched yet, or closed)."""
        from confluent_kafka import TopicPartition as RdTP

        consumer = self._consumer
        if consumer is None or partition not in self._assigned:
            return None
        try:
            _, high = consumer.get_watermark_offsets(
                RdTP(partition.topic, partition.partition), cached=True
            )
        except Exception:  # closed meanwhile, or unknown to librdkafka
            return None
        return None if high is None or high < 0 else int(high)

    # -- fetching ------------------------------------------------------------------------------

    async def fetch(
        self, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, ChangelogBatch]:
        """What librdkafka has queued, up to ``max.poll.records``; an empty poll waits in
        slices (never blocking the loop) until ``timeout_ms``."""
        limit = max_records or self._max_records
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            self._raise_if_fatal()
            if self._assigned:
                with gc_paused():
                    messages = self._consumer.consume(limit, 0)
                    if messages:
                        return self._batches(messages)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return {}
            await asyncio.sleep(min(remaining, _IDLE_SLICE_S))

    def _batches(self, messages: list[Any]) -> dict[TopicPartition, ChangelogBatch]:
        """Messages → one batch per partition; positions move per batch, then to where an
        end-of-partition event says the fetch ended (it follows the partition's records, which
        must not be mistaken for ones queued before a restart)."""
        grouped: dict[tuple[str, int], list[Any]] = {}
        ends: list[tuple[TopicPartition, int]] = []
        for m in messages:
            if m.error() is not None:
                end = _end_of_partition(m)
                if end is not None:
                    ends.append(end)
                continue
            key = (m.topic(), m.partition())
            group = grouped.get(key)
            if group is None:
                grouped[key] = [m]
            else:
                group.append(m)
        out: dict[TopicPartition, ChangelogBatch] = {}
        for (topic, part), group in grouped.items():
            tp = TopicPartition(topic, part)
            if tp not in self._assigned:
                continue  # fetched before an unassign
            batch = _batch(group, self._positions.get(tp))
            if batch is not None:
                self._positions[tp] = batch.next_offset
                out[tp] = batch
        for tp, offset in ends:
            if tp in self._assigned:
                self._positions[tp] = max(self._positions.get(tp, 0), offset)
        return out


def _end_of_partition(message: Any) -> tuple[TopicPartition, int] | None:
    """A partition-EOF event's partition and offset (where the fetch reached the end); other
    errors are raised (the thread cannot restore past them) or logged."""
    err = message.error()
    tp = TopicPartition(message.topic(), message.partition())
    if err.code() == _PARTITION_EOF:
        return tp, int(message.offset())
    if err.fatal() or err.code() in _FATAL_FETCH_ERRORS:
        raise RuntimeError(f"librdkafka restore consumer: {tp.topic}-{tp.partition}: {err}")
    logger.warning("librdkafka restore consumer: %s", err)
    return None


def _batch(messages: list[Any], position: int | None) -> ChangelogBatch | None:
    """One partition's messages as a batch, without any before ``position`` (queued before a
    restart at a later offset)."""
    if position is not None and messages[0].offset() < position:
        messages = [m for m in messages if m.offset() >= position]
        if not messages:
            return None
    rows: list[Row] = []
    size = 0
    append = rows.append
    for m in messages:
        key, value = m.key(), m.value()
        append((key, value, m.timestamp()[1]))
        size += (len(key) if key else 0) + (len(value) if value else 0)
    return ChangelogBatch(rows, messages[-1].offset() + 1, size)
