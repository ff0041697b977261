"""librdkafka (confluent-kafka) as a stream thread's producer (EOS: :mod:`.rdkafka_txn`).

Why: on the sessions fold aiokafka's producer (accumulator, batch builder, request encoding,
socket writes, all Python on the stream thread) is about half of the thread's CPU; librdkafka
batches, encodes and sends in C on its own threads (docs/bench/history.md, "The data path").
The stream threads' one producer: under exactly_once_v2 it is transactional
(:mod:`.rdkafka_txn`). The main and restore consumers are librdkafka's too
(:mod:`.rdkafka_consumer`, :mod:`.rdkafka_restore`).

:class:`LibrdkafkaCollector` hands each record to librdkafka at once (order per partition is
librdkafka's); a record its local queue has no room for waits, in order, for :meth:`drain`.
:meth:`LibrdkafkaCollector.flush` waits for every delivery report and returns the offsets
reached per partition (:class:`~streamrt.runtime.engine.collector.Collector`); a failed
delivery raises there, so a commit stops before the offsets move.

Delivery reports: only the changelog records' offsets are read (a store's checkpoint), and
only the last one per partition at a commit, as Kafka Streams' collector keeps them. So no
Python function runs per report: each record sent to a named partition (changelog records
always are) carries that partition's slot's ``dict.__setitem__`` as its callback, which
confluent-kafka calls in C as ``slot[err] = message``; ``slot[None]`` ends as the partition's
last delivered record (librdkafka reports a partition's records in order) and any other key
is a failure. Records librdkafka partitions (keyed sinks, repartitions) share one slot read for
failures only. A commit's flush reads the slots: measured, word count's stream thread +8 %
records per CPU-second (docs/benchmarks.md).

Differences from aiokafka: librdkafka writes a record timestamp of 0 as "now", so a record at
exactly 0 goes through :mod:`.zero_timestamp` (in order, slowly) when the producer has a
:class:`~.zero_timestamp.ZeroTimestampSender` (the at-least-once stream threads' always does;
exactly_once_v2 refuses such records); keyed records
are partitioned with murmur2 as Java and aiokafka do.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from streamrt.client_config import ClientConfig
from streamrt.runtime import client_settings
from streamrt.runtime.engine.clients.zero_timestamp import ZeroTimestampSender
from streamrt.topic_partition import TopicPartition

__all__ = ("DeliveryError", "LibrdkafkaCollector", "LibrdkafkaProducer", "librdkafka_config")

logger = logging.getLogger(__name__)

#: Kafka's Java client default for reconnect.backoff.max.ms; librdkafka's is 10 s, and its
#: backoff doubles per failed attempt, so a client that kept trying through a broker's
#: 3-4 s restart came back up to ~9 s after the broker (measured: an EOS task's restore of 0
#: records waited 9.1 s for its restore consumer's reconnection after a broker SIGKILL)
RECONNECT_BACKOFF_MAX_MS = 1000
#: ProduceRequests in flight per broker connection, idempotent or not. Why 1: librdkafka's
#: idempotent producer at its default of 5 keeps its broker thread awake while a request is
#: in flight (2.3 KB records, process CPU a record, ``bench/producer_inflight.py``: 17.6 us at 5
#: against 8.6 us at 1 on the embedded broker, 7.4 against 6.4 us on Apache Kafka;
#: docs/bench/history.md, "The idempotent producer's in-flight requests"); it sends one
#: request per partition at a time anyway, and a broker serves one request per connection at
#: a time. Order and the idempotent producer's guarantees are the same at 1.
MAX_IN_FLIGHT = 1
#: how long a topic found missing is taken as missing before its metadata is asked again
_MISSING_TOPIC_RECHECK_S = 1.0
# aiokafka keyword (what client_settings parses a Kafka name into) → librdkafka property
_TUNING: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "acks": ("acks", str),
    "linger_ms": ("linger.ms", int),
    "max_batch_size": ("batch.size", int),
    "max_request_size": ("message.max.bytes", int),
    "compression_type": ("compression.type", lambda v: "none" if v is None else str(v)),
    "enable_idempotence": ("enable.idempotence", bool),
    "request_timeout_ms": ("request.timeout.ms", int),
    "retry_backoff_ms": ("retry.backoff.ms", int),
    "metadata_max_age_ms": ("metadata.max.age.ms", int),
    "connections_max_idle_ms": ("connections.max.idle.ms", int),
}
# aiokafka keywords whose librdkafka form comes from ClientConfig.librdkafka (security, id)
SECURITY_KWARGS = frozenset(
    {
        "bootstrap_servers",
        "client_id",
        "security_protocol",
        "ssl_context",
        "sasl_mechanism",
        "sasl_plain_username",
        "sasl_plain_password",
    }
)
TUNING_KWARGS = frozenset(_TUNING)


def librdkafka_config(cfg: ClientConfig, client_id: str) -> dict[str, Any]:
    """The producer's librdkafka config: the same defaults and ``producer.``/bare settings the
    aiokafka producer gets (parsed and checked by ``client_settings``), and security."""
    kwargs = client_settings.producer_kwargs(cfg, client_id)
    out: dict[str, Any] = dict(cfg.librdkafka("producer"))
    for kwarg, value in kwargs.items():
        if kwarg in _TUNING:
            name, convert = _TUNING[kwarg]
            out[name] = convert(value)
        elif kwarg not in SECURITY_KWARGS:
            raise ValueError(f"producer setting {kwarg!r} has no librdkafka mapping")
    out["client.id"] = client_id
    out["reconnect.backoff.max.ms"] = RECONNECT_BACKOFF_MAX_MS
    # Java's and aiokafka's partitioner for keyed records (librdkafka's default is crc32):
    # repartition and sink topics must place a key where every other client does.
    out["partitioner"] = "murmur2_random"
    # Ordered retries per partition, as aiokafka's one in-flight batch per partition: the
    # idempotent producer (Kafka's default with acks=all); without it, one request in flight.
    idempotent = bool(kwargs.get("enable_idempotence", kwargs["acks"] == "all"))
    out["enable.idempotence"] = idempotent
    out["max.in.flight.requests.per.connection"] = MAX_IN_FLIGHT
    return out


class DeliveryError(Exception):
    """librdkafka could not deliver a record (or its producer failed fatally)."""


class LibrdkafkaProducer:
    """A confluent-kafka ``Producer`` with the start/stop/flush life of the thread's producer."""

    def __init__(
        self,
        config: dict[str, Any],
        zero_timestamps: ZeroTimestampSender | None = None,
        *,
        delivered_offsets: bool = True,
    ) -> None:
        """``delivered_offsets=False``: nobody reads the offsets :meth:`flush` returns (a
        thread whose topology has no stores, so no changelog to checkpoint): librdkafka then
        reports failed deliveries only (``delivery.report.only.error``), which spares a
        Python callback and a message object per record; a failure still fails the flush."""
        self.delivered_offsets = delivered_offsets
        if not delivered_offsets:
            config = {**config, "delivery.report.only.error": True}
        self._config = config
        self.zero_timestamps = zero_timestamps  # None: a timestamp of 0 is sent as "now"
        self._producer: Any = None
        self._error: str | None = None
        self._reached: dict[tuple[str, int], int] = {}
        # Delivery reports without a Python frame per record (module doc, "Delivery reports"):
        # each report is stored by a C-level ``dict.__setitem__`` as ``slot[err] = message``.
        self._slots: dict[str, dict[int, dict[Any, Any]]] = {}  # topic → partition → slot
        self._reports: dict[str, dict[int, Callable[[Any, Any], None]]] = {}
        self._unplaced: dict[Any, Any] = {}  # librdkafka partitions: its failures count
        self._report_unplaced = self._unplaced.__setitem__

    async def start(self) -> None:
        from confluent_kafka import Producer

        self._producer = Producer(
            {**self._config, "error_cb": self._client_error, "logger": logger}
        )

    async def stop(self) -> None:
        """Deliver what is queued (as aiokafka's stop does), then drop the client."""
        if self._producer is None:
            return
        producer = self._producer
        try:
            await self._flush_queue()
        finally:
            self._producer = None
            await asyncio.to_thread(producer.close)
            if self.zero_timestamps is not None:
                await self.zero_timestamps.stop()

    def produce(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        timestamp_ms: int,
        headers: list[tuple[str, bytes]] | None,
    ) -> bool:
        """Hand one record to librdkafka; False if its local queue is full (retry later)."""
        report: Callable[[Any, Any], None] | None
        if partition is None:
            partition, report = -1, self._report_unplaced
        else:
            reports = self._reports.get(topic)
            report = None if reports is None else reports.get(partition)
            if report is None:
                report = self._new_slot(topic, partition)
        try:
            # positional (topic, value, key, partition, callback, on_delivery, timestamp,
            # headers): keywords cost confluent-kafka a dict and a name lookup each, which
            # measured 0.5-2 us a call against ~0.6 us for the whole positional call
            self._producer.produce(
                topic,
                value,
                key,
                partition,
                report,
                None,
                timestamp_ms if timestamp_ms > 0 else 0,
                headers,
            )
        except BufferError:
            return False
        return True

    async def produce_at_zero(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        headers: list[tuple[str, bytes]] | None,
    ) -> None:
        """A record at timestamp 0 (see :mod:`.zero_timestamp`): every record queued before it
        is delivered first, then it is sent and acknowledged; a failure fails the next flush."""
        assert self.zero_timestamps is not None
        await self._flush_queue()
        self._take_reports()  # the records before it first: its offset is the later one
        try:
            topic, part, reached = await self.zero_timestamps.send(
                topic, key, value, partition, headers
            )
        except Exception as exc:
            self._error = self._error or f"{topic}-{partition}: {exc!r}"
            return
        self._reached[(topic, part)] = reached

    def forget(self) -> None:
        """Drop the offsets reached and the delivery error seen since the last flush (the
        records of an aborted transaction)."""
        self._take_reports()
        self._reached = {}
        self._error = None

    def partition_count(self, topic: str, timeout_s: float = 5.0) -> int:
        """``topic``'s partition count from the cluster's metadata (0: no such topic); blocks
        the thread's loop for one metadata request, as Kafka's ``partitionsFor`` blocks its
        thread (callers cache the answer), so briefly: a timeout raises, well within a
        session timeout."""
        metadata = self._producer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return 0
        return len(metadata.partitions)

    def poll(self) -> None:
        """Serve delivery reports (non-blocking)."""
        self._producer.poll(0)

    async def make_room(self) -> None:
        """The local queue is full: let librdkafka's threads send, without blocking the loop."""
        self._producer.poll(0)
        await asyncio.sleep(0.005)

    async def flush(self, timeout_s: float | None = None) -> dict[TopicPartition, int]:
        """Wait for every delivery report; the next offset reached since the last flush per
        partition a record named (none without ``delivered_offsets``). Raises
        :class:`DeliveryError` if any record was not delivered (or, with ``timeout_s``, some
        still wait for their report after that long)."""
        left = await self._flush_queue(timeout_s)
        self._take_reports()
        reached, self._reached = self._reached, {}
        error, self._error = self._error, None
        if error is not None:
            raise DeliveryError(error)
        if left:
            raise DeliveryError(f"{left} records not delivered within {timeout_s} s")
        return {TopicPartition(t, p): off for (t, p), off in reached.items()}

    async def _flush_queue(self, timeout_s: float | None = None) -> int:
        # off the event loop (heartbeats go on); in slices, so a stop is never stuck for long
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while (left := await self._flush_slice()) > 0:
            if deadline is not None and time.monotonic() > deadline:
                return int(left)
        return 0

    async def _flush_slice(self) -> int:
        try:
            return int(await asyncio.to_thread(self._producer.flush, 1.0))
        except SystemError as exc:
            # confluent-kafka on Python < 3.12 garbles an exception raised while flush serves
            # its callbacks (e.g. a fatal error, such as a fenced transactional producer, met
            # while the log callback runs) into a SystemError: the producer is unusable.
            raise DeliveryError(self._error or f"the producer failed during flush: {exc}") from exc

    def _new_slot(self, topic: str, partition: int) -> Callable[[Any, Any], None]:
        slot: dict[Any, Any] = {}
        self._slots.setdefault(topic, {})[partition] = slot
        report = self._reports.setdefault(topic, {})[partition] = slot.__setitem__
        return report

    def _take_reports(self) -> None:
        """Read the reports stored since the last call: the last delivered offset per
        partition a record named (``None`` key: librdkafka reports a partition's records in
        order) and the first failure; empty the slots for the next flush."""
        for topic, slots in self._slots.items():
            for partition, slot in slots.items():
                if slot:
                    self._take_slot(slot, (topic, partition))
        if self._unplaced:
            self._take_slot(self._unplaced, None)

    def _take_slot(self, slot: dict[Any, Any], where: tuple[str, int] | None) -> None:
        # key by key (no clear()): a report stored meanwhile by librdkafka's caller in another
        # thread (a flush left running by a cancelled commit) waits for the next read
        for err in list(slot):
            msg = slot.pop(err)
            if err is None:
                if where is not None:
                    self._reached[where] = msg.offset() + 1
            elif self._error is None:
                self._error = f"{msg.topic()}-{msg.partition()}: {err}"

    def _client_error(self, err: Any) -> None:
        if err.fatal():  # e.g. the idempotent producer lost its sequence: nothing more goes
            self._error = self._error or f"fatal producer error: {err}"
        logger.warning("librdkafka producer: %s", err)


class LibrdkafkaCollector:
    """The thread's record collector over a :class:`LibrdkafkaProducer` (see module doc)."""

    #: a partition a stream partitioner names must exist (see engine/tasks/sink_writer)
    checks_range = True

    def __init__(self, producer: LibrdkafkaProducer) -> None:
        self.producer = producer
        self._produce = producer.produce  # bound once: one call per record
        self._partition_counts: dict[str, int] = {}
        self._missing_until: dict[str, float] = {}  # topic -> when to ask for it again
        self._exact_zero = producer.zero_timestamps is not None
        self._waiting: deque[
            tuple[str, bytes | None, bytes | None, int | None, int, list[tuple[str, bytes]] | None]
        ] = deque()

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        timestamp_ms: int,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> None:
        if (
            self._waiting
            or (timestamp_ms == 0 and self._exact_zero)
            or not self._produce(topic, key, value, partition, timestamp_ms, headers)
        ):
            self._waiting.append((topic, key, value, partition, timestamp_ms, headers))

    def partitions_for(self, topic: str) -> int:
        """The topic's partition count, read once per topic (a sink with a stream partitioner
        asks for each record); 0 (no such topic) is asked again after a second, not for every
        record meanwhile (each asking is a metadata round trip on the thread's loop)."""
        count = self._partition_counts.get(topic)
        if count is not None:
            return count
        if time.monotonic() < self._missing_until.get(topic, 0.0):
            return 0
        count = self.producer.partition_count(topic)
        if count > 0:
            self._partition_counts[topic] = count
            self._missing_until.pop(topic, None)
        else:
            self._missing_until[topic] = time.monotonic() + _MISSING_TOPIC_RECHECK_S
        return count

    async def drain(self) -> None:
        """Hand the records that waited (for room, or behind one at timestamp 0) to librdkafka,
        in order; serve reports."""
        while self._waiting:
            topic, key, value, partition, timestamp_ms, headers = self._waiting[0]
            if timestamp_ms == 0 and self._exact_zero:
                await self.producer.produce_at_zero(topic, key, value, partition, headers)
                self._waiting.popleft()
            elif self.producer.produce(*self._waiting[0]):
                self._waiting.popleft()
            else:
                await self.producer.make_room()
        self.producer.poll()

    async def flush(self) -> dict[TopicPartition, int]:
        """Send and wait for delivery of everything (see :meth:`LibrdkafkaProducer.flush`)."""
        await self.drain()
        return await self.producer.flush()
