"""librdkafka (confluent-kafka) as a stream thread's main consumer.

Why: aiokafka decodes every fetched record batch in Python on the stream thread (about a tenth
of its CPU on the sessions fold, issue 24); librdkafka fetches, decompresses and decodes in C on
its own threads and hands over ready messages. streamrt's own member keeps the group and
commits, so this consumer runs in assign mode. librdkafka
insists on a ``group.id`` (the application id, so group ACLs match) but never joins it: it is
never subscribed, auto-commit and the offset store are off, and close() sends nothing.

Fetching never blocks the event loop: ``consume(n, 0)`` takes what librdkafka has queued, and
an empty poll sleeps in short slices until its timeout (a cancelled sleep loses nothing, so a
stop's wake-up ends it at once). Each message becomes one :class:`RdRecord` tuple (the fields
the task path reads); the position is tracked per partition, once per batch.

Assignment changes are batched: ``assign`` and the seeks that follow it (the member listener
puts kept partitions back at their positions) take effect at the next fetch, as one
``incremental_assign`` with the sought offsets; partitions that stay are never restarted.

librdkafka is never asked for the group's committed offsets (``OFFSET_INVALID``): the member
listener looks them up and seeks, and a partition with none starts at ``auto.offset.reset``'s
logical offset (beginning or end). Why: librdkafka's committed-offset lookup can answer late,
after the partition was restarted at an explicit offset, and its stale answer then moves the
partition back to the reset (librdkafka issue 5345, open in 2.13; seen here as whole
partitions handed out twice in a cooperative rebalance, once inside one fetch's batch).

A topic this consumer has not read before is looked up first (``_describe``, off the loop)
and its partitions start once the answer is in. The lookup decides nothing: what starts, and
where, is worked out again at each fetch from the assignment, seeks and pauses of that moment.

Under ``isolation.level=read_committed`` (exactly_once_v2) librdkafka skips aborted records and
transaction markers itself. ``last_stable_offset`` is the cached high watermark (librdkafka
exposes no per-partition LSO outside its statistics).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Set
from typing import Any, NamedTuple

from streamrt.client_config import ClientConfig
from streamrt.runtime import client_settings
from streamrt.runtime.engine.clients.rdkafka_client import LibrdkafkaConsumerClient
from streamrt.runtime.engine.clients.rdkafka_producer import (
    RECONNECT_BACKOFF_MAX_MS,
    SECURITY_KWARGS,
)
from streamrt.topic_partition import TopicPartition

__all__ = (
    "TUNING_KWARGS",
    "LibrdkafkaConsumer",
    "PositionUnknownError",
    "RdRecord",
    "librdkafka_consumer_config",
)

logger = logging.getLogger(__name__)

# confluent_kafka's logical offsets and timestamp types (literal: imported lazily)
_OFFSET_BEGINNING, _OFFSET_END, _OFFSET_INVALID = -2, -1, -1001
# auto.offset.reset (as librdkafka_consumer_config writes it) -> where a partition with no
# committed offset starts; "error" has no logical offset: librdkafka looks the group up and fails
_RESET_AT = {"earliest": _OFFSET_BEGINNING, "latest": _OFFSET_END}
_TIMESTAMP_NOT_AVAILABLE = 0
# An empty poll sleeps between non-blocking consumes (confluent-kafka cannot wake an event
# loop): 2 ms at first, doubling while the input stays empty, up to 16 ms. An idle thread then
# wakes ~60 times a second instead of 500 (its process's idle CPU fell from 5 % of a core to
# 2 %); the first record after an idle spell waits at most 16 ms longer.
_IDLE_SLICE_S = 0.002
_IDLE_SLICE_MAX_S = 0.016
# confluent_kafka.KafkaError codes a fetch can end on: the thread cannot go on past them
_FATAL_FETCH_ERRORS = frozenset(
    {
        -140,  # _AUTO_OFFSET_RESET: out of range with auto.offset.reset=none
        29,  # TOPIC_AUTHORIZATION_FAILED
    }
)

# aiokafka keyword (what client_settings parses a Kafka name into) → librdkafka property
_TUNING: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "fetch_max_bytes": ("fetch.max.bytes", int),
    "fetch_min_bytes": ("fetch.min.bytes", int),
    "fetch_max_wait_ms": ("fetch.wait.max.ms", int),
    "max_partition_fetch_bytes": ("max.partition.fetch.bytes", int),
    "check_crcs": ("check.crcs", bool),
    "isolation_level": ("isolation.level", str),
    "client_rack": ("client.rack", str),
    # a consumer's request timeout is librdkafka's socket timeout
    "request_timeout_ms": ("socket.timeout.ms", int),
    "retry_backoff_ms": ("retry.backoff.ms", int),
    "metadata_max_age_ms": ("metadata.max.age.ms", int),
    "connections_max_idle_ms": ("connections.max.idle.ms", int),
    "auto_offset_reset": ("auto.offset.reset", lambda v: "error" if v == "none" else str(v)),
}
TUNING_KWARGS = frozenset(_TUNING)
# used by this class, not librdkafka: records per fetch; set by the runtime
_OWN_KWARGS = frozenset({"max_poll_records", "enable_auto_commit"})


def librdkafka_consumer_config(
    cfg: ClientConfig,
    client_id: str,
    group_id: str,
    read_committed: bool,
    role: str = "main.consumer",
) -> tuple[dict[str, Any], int]:
    """A consumer's librdkafka config and records per fetch: the same defaults and
    ``consumer.``/``<role>.``/bare settings the aiokafka consumer of that ``role``
    (``main.consumer`` or ``restore.consumer``) gets (parsed and checked by
    ``client_settings``), and security."""
    kwargs = client_settings.consumer_kwargs(cfg, role, client_id)
    out: dict[str, Any] = dict(cfg.librdkafka(role))
    # librdkafka's default is read_committed; aiokafka's (and Kafka's) read_uncommitted
    out["isolation.level"] = "read_uncommitted"
    for kwarg, value in kwargs.items():
        if kwarg in _TUNING:
            name, convert = _TUNING[kwarg]
            out[name] = convert(value)
        elif kwarg not in SECURITY_KWARGS and kwarg not in _OWN_KWARGS:
            raise ValueError(f"consumer setting {kwarg!r} has no librdkafka mapping")
    if read_committed:  # exactly_once_v2: every consumer reads committed data only
        out["isolation.level"] = "read_committed"
    out["client.id"] = client_id
    out["reconnect.backoff.max.ms"] = RECONNECT_BACKOFF_MAX_MS  # Kafka's, not librdkafka's 10 s
    out["group.id"] = group_id  # required by librdkafka; never joined (assign mode)
    out["enable.auto.commit"] = False
    out["enable.auto.offset.store"] = False
    out["enable.partition.eof"] = False
    return out, int(kwargs["max_poll_records"])


class PositionUnknownError(LookupError):
    """No position yet: the partition starts at a committed offset or a reset not yet done."""


class RdRecord(NamedTuple):
    """One fetched record, as the task path reads aiokafka's ``ConsumerRecord``."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int  # 0 create time, 1 log append time (aiokafka's numbering)
    key: bytes | None
    value: bytes | None
    headers: Any  # a sequence of (str, bytes)


_new_record = tuple.__new__  # builds an RdRecord without NamedTuple.__new__'s argument parsing


class LibrdkafkaConsumer(LibrdkafkaConsumerClient):
    """A confluent-kafka ``Consumer`` in assign mode behind :class:`MainConsumer`."""

    log = logger

    def __init__(self, config: dict[str, Any], max_records: int) -> None:
        super().__init__(config)
        self._max_records = max_records
        # where a partition nobody sought starts (the listener seeks committed offsets itself)
        self._reset_at = _RESET_AT.get(
            str(config.get("auto.offset.reset", "earliest")), _OFFSET_INVALID
        )
        self._assigned: set[TopicPartition] = set()
        self._starting: dict[TopicPartition, int] = {}  # assigned here, not yet in librdkafka
        self._paused: set[TopicPartition] = set()
        self._positions: dict[TopicPartition, int] = {}
        self._fetched: set[TopicPartition] = set()  # records handed out since the last (re)start
        self._idle_slice = _IDLE_SLICE_S
        self._lookups: dict[str, asyncio.Future[None]] = {}  # topic -> its lookup under way

    # -- assignment ----------------------------------------------------------------------------

    def assign(self, partitions: list[TopicPartition]) -> None:
        wanted = set(partitions)
        gone = self._assigned - wanted
        started = [tp for tp in gone if tp not in self._starting]
        if started:
            self._consumer.incremental_unassign([self._tp(tp) for tp in started])
        for tp in gone:
            self._starting.pop(tp, None)
            self._positions.pop(tp, None)
            self._fetched.discard(tp)
        self._paused -= gone
        for tp in wanted - self._assigned:
            self._starting[tp] = self._reset_at  # unless sought (module docstring: why)
        self._assigned = wanted
        self._look_up({tp.topic for tp in wanted} - self._known_topics - set(self._lookups))

    async def stop(self) -> None:
        """Lookups still under way finish first: librdkafka must not be closed under them."""
        lookups = set(self._lookups.values())
        if lookups:
            await asyncio.wait(lookups)
        await super().stop()

    def _look_up(self, topics: set[str]) -> None:
        """Ask the cluster about ``topics`` off the loop; their partitions start when done."""
        if not topics:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # assigned outside a loop: librdkafka finds the topics itself
            self._known_topics.update(topics)
            return
        lookup = loop.run_in_executor(None, self._describe, sorted(topics))
        for topic in topics:
            self._lookups[topic] = lookup

    def _looked_up(self) -> None:
        """Topics whose lookup has finished are known from now on."""
        for topic, lookup in list(self._lookups.items()):
            if lookup.done():
                del self._lookups[topic]
                self._known_topics.add(topic)

    def assignment(self) -> Set[TopicPartition]:
        return frozenset(self._assigned)

    def seek(self, partition: TopicPartition, offset: int) -> None:
        if partition not in self._assigned:
            raise ValueError(f"seek: {partition} is not assigned")
        running = partition not in self._starting
        if running and offset >= 0 and self._positions.get(partition) == offset:
            return  # librdkafka goes on from there already: its prefetched records stay
        self._fetched.discard(partition)
        if offset >= 0:
            self._positions[partition] = offset
        else:
            self._positions.pop(partition, None)
        if running:
            self._restart({partition: offset})
        else:
            self._starting[partition] = offset

    async def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        for tp in partitions or tuple(self._assigned):
            self.seek(tp, _OFFSET_BEGINNING)

    async def position(self, partition: TopicPartition) -> int:
        """The next offset the thread reads from ``partition``."""
        if partition not in self._assigned:
            raise PositionUnknownError(f"{partition} is not assigned")
        position = self._positions.get(partition)
        if partition in self._fetched:
            past = self._past_markers(partition)
            if past is not None and (position is None or past > position):
                position = past
        if position is None:
            position = self._empty_at(partition)
        if position is None:
            raise PositionUnknownError(f"{partition}: no position yet")
        return position

    def _past_markers(self, partition: TopicPartition) -> int | None:
        """librdkafka's own position: past the transaction markers that follow the last record
        handed out (they are never handed out, so the tracked position stops before them and
        a transactional input would look one record behind its end for ever)."""
        try:
            (tp,) = self._consumer.position([self._tp(partition)])
        except Exception:
            return None
        return int(tp.offset) if tp.offset >= 0 else None

    def _empty_at(self, partition: TopicPartition) -> int | None:
        """A partition started at a committed offset or a reset that returned nothing yet:
        if its last fetch found it empty, the position is its end (a join's empty side
        must not wait for a position that only a record would tell)."""
        try:
            low, high = self._consumer.get_watermark_offsets(self._tp(partition), cached=True)
        except Exception:
            return None
        if low is None or high is None or low < 0 or low != high:
            return None
        return int(high)

    def pause(self, *partitions: TopicPartition) -> None:
        tps = [tp for tp in partitions if tp in self._assigned]
        self._paused.update(tps)
        running = [self._tp(tp) for tp in tps if tp not in self._starting]
        if running:
            self._consumer.pause(running)

    def resume(self, *partitions: TopicPartition) -> None:
        tps = [tp for tp in partitions if tp in self._paused]
        idle = self._fetcher_idle()
        self._paused.difference_update(tps)
        running = [tp for tp in tps if tp not in self._starting]
        if idle:
            # a resume alone reaches an idle fetcher only at its next wake-up: restart the
            # partitions whose position is known there instead (a start wakes it)
            self._restart({tp: self._positions[tp] for tp in running if tp in self._positions})
            running = [tp for tp in running if tp not in self._starting]
        if running:
            self._consumer.resume([self._tp(tp) for tp in running])

    def _restart(self, at: dict[TopicPartition, int]) -> None:
        """Take running partitions out of librdkafka (what it queued of them is dropped) to
        start them again at these offsets on the next fetch."""
        if not at:
            return
        self._consumer.incremental_unassign([self._tp(tp) for tp in at])
        for tp, offset in at.items():
            self._starting[tp] = offset
            self._fetched.discard(tp)

    def _fetcher_idle(self) -> bool:
        """Every partition librdkafka fetches is paused (its fetcher has nothing to do)."""
        return all(tp in self._paused for tp in self._assigned if tp not in self._starting)

    def paused(self) -> Set[TopicPartition]:
        return frozenset(self._paused)

    # -- ends ----------------------------------------------------------------------------------

    def highwater(self, partition: TopicPartition) -> int | None:
        """The high watermark of the last fetch (None: not fetched, or closed). Safe from
        another thread (the REST metadata reads it)."""
        consumer = self._consumer
        if consumer is None or partition not in self._assigned:
            return None
        try:
            _, high = consumer.get_watermark_offsets(self._tp(partition), cached=True)
        except Exception:  # closed meanwhile, or unknown to librdkafka
            return None
        return None if high is None or high < 0 else int(high)

    def last_stable_offset(self, partition: TopicPartition) -> int | None:
        """The high watermark: librdkafka keeps the last stable offset only in its statistics
        (so under read_committed an open input transaction counts as lag until it ends)."""
        return self.highwater(partition)

    # -- fetching ------------------------------------------------------------------------------

    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[Any]]:
        """What librdkafka has fetched, up to ``max.poll.records``; an empty poll waits in
        slices (never blocking the loop) until ``timeout_ms``."""
        del partitions
        limit = max_records or self._max_records
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            self._raise_if_fatal()
            if self._starting:
                self._start_partitions()
            messages = self._consumer.consume(limit, 0)
            if messages:
                self._idle_slice = _IDLE_SLICE_S
                return self._batches(messages)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return {}
            await asyncio.sleep(min(remaining, self._idle_slice))
            self._idle_slice = min(self._idle_slice * 2, _IDLE_SLICE_MAX_S)

    def _batches(self, messages: list[Any]) -> dict[TopicPartition, list[Any]]:
        """Messages → records per partition, in fetch order; positions move per batch."""
        out: dict[tuple[str, int], list[Any]] = {}
        for m in messages:
            if m.error() is not None:
                self._message_error(m)
                continue
            topic, part = m.topic(), m.partition()
            ts_type, ts = m.timestamp()
            record = _new_record(
                RdRecord,
                (
                    topic,
                    part,
                    m.offset(),
                    ts if ts_type != _TIMESTAMP_NOT_AVAILABLE else -1,
                    ts_type - 1 if ts_type else 0,
                    m.key(),
                    m.value(),
                    m.headers() or (),
                ),
            )
            batch = out.get((topic, part))
            if batch is None:
                out[(topic, part)] = [record]
            else:
                batch.append(record)
        batches: dict[TopicPartition, list[Any]] = {}
        for (topic, part), records in out.items():
            tp = TopicPartition(topic, part)
            if tp not in self._assigned or tp in self._starting:
                continue  # fetched before an unassign or a seek: not the thread's any more
            position = self._positions.get(tp)
            first = records[0].offset
            # offsets only grow: a batch that starts before the position, or whose span is
            # shorter than its length (a record repeated in it), went back somewhere
            if (position is not None and first < position) or (
                records[-1].offset - first < len(records) - 1
            ):
                records = self._went_back(tp, records, position)
                if not records:
                    continue
            self._positions[tp] = records[-1].offset + 1
            self._fetched.add(tp)
            batches[tp] = records
        return batches

    def _went_back(self, tp: TopicPartition, records: list[Any], position: int | None) -> list[Any]:
        """librdkafka handed out records before the position, or the same ones twice in one
        batch, though nothing sought there.

        Seen in the rebalance benchmark: a partition started at the group's committed offset
        (librdkafka's lookup), restarted at explicit offsets as the startup's rebalances went
        by, came again from offset 0 (the lookup's late answer, librdkafka issue 5345), after
        a fetch or inside the same one; the records it had handed out were counted twice under
        exactly_once_v2. The ones already handed out are dropped; if nothing is left the
        partition restarts at the position instead of reading its whole log again."""
        fresh: list[Any] = []
        after = -1 if position is None else position
        for r in records:
            if r.offset >= after:
                fresh.append(r)
                after = r.offset + 1
        logger.warning(
            "librdkafka consumer went back on %s-%s: at %s, got %d; %d records handed out"
            " before are dropped",
            tp.topic,
            tp.partition,
            position,
            records[0].offset,
            len(records) - len(fresh),
        )
        if not fresh and position is not None:
            self._restart({tp: position})
        return fresh

    def _start_partitions(self) -> None:
        """Hand the partitions assigned or sought since the last fetch to librdkafka, except
        the paused ones: they start when resumed.

        Why not start them paused: a resume reaches librdkafka's fetcher only when its broker
        thread next wakes, and with every partition paused that thread idles for up to a
        second (measured: an eager rebalance, which pauses each reassigned task until it is
        ready, stalled every thread 1.0 s after RUNNING). Starting a partition wakes it."""
        from confluent_kafka import TopicPartition as RdTP

        if self._lookups:
            self._looked_up()
        starting = {
            tp: off
            for tp, off in self._starting.items()
            if tp not in self._paused and tp.topic not in self._lookups
        }
        if not starting:
            return
        for tp in starting:
            del self._starting[tp]
        # librdkafka keeps an application pause across unassign/assign (it resets only its own
        # rebalance pause): a partition paused, then restarted by a seek or revoked and
        # assigned again, and resumed meanwhile, would stay paused. So say it resumed, and
        # before the start: the start wakes the fetcher, a resume does not, and a fetcher that
        # woke while the partition was still paused sleeps on.
        self._consumer.resume([self._tp(tp) for tp in starting])
        self._consumer.incremental_assign(
            [RdTP(tp.topic, tp.partition, off) for tp, off in starting.items()]
        )

    def _message_error(self, message: Any) -> None:
        err = message.error()
        if err.fatal() or err.code() in _FATAL_FETCH_ERRORS:
            raise RuntimeError(
                f"librdkafka consumer: {message.topic()}-{message.partition()}: {err}"
            )
        logger.warning("librdkafka consumer: %s", err)

    @staticmethod
    def _tp(tp: TopicPartition) -> Any:
        from confluent_kafka import TopicPartition as RdTP

        return RdTP(tp.topic, tp.partition)
