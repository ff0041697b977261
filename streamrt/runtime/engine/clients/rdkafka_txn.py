"""exactly_once_v2 on librdkafka's transactional producer: the one exactly-once path.

Why it needs streamrt's own membership: a KIP-447 TxnOffsetCommit carries the group member's
generation, member id and ``group.instance.id``, and librdkafka takes them only as the opaque
``consumer_group_metadata`` a confluent ``Consumer`` writes. With our own member we know all
three, so :func:`group_metadata_bytes` writes that blob (librdkafka's public, versioned
``rd_kafka_consumer_group_metadata_write`` format) from the member's current state at each
commit, and the group coordinator checks it as it checks a Java consumer's.

librdkafka's transactional calls block (network round trips, up to their timeout): each runs
off the thread's event loop, so the member keeps heartbeating, in a daemon thread of its own
that the thread waits for at most its timeout plus a grace. Why not trust the timeout alone:
librdkafka's ``send_offsets_to_transaction`` ignores it when the group coordinator goes away
mid-transaction (librdkafka issues #5456, #5511, open in 2.16); after a broker restart it hung
for minutes, and the thread with it (measured: the EOS chaos test's broker kill, a 78 s stall).
A call that does not answer in time loses the transaction; the producer is then ``stuck`` and
is replaced without waiting for it (a new ``init_transactions`` fences it and aborts what it
left open). Why not wait for the bound at all when a broker connection dropped during the
transaction (librdkafka's ``_TRANSPORT`` or ``_ALL_BROKERS_DOWN``): that is when the call hangs,
and after a broker kill it held every thread for the whole bound though the broker was back
(measured: 6 s of the 8-9 s a broker kill cost beyond its downtime). Such a transaction is
given up at once, before its flush, offsets or commit (``doomed``); the replacement's
``init_transactions`` waits for the broker instead, and answers as soon as it is back.
Exactly-once is untouched: a lost transaction is always aborted, never committed. The
in-transaction calls are bounded by the transaction timeout: past it the coordinator aborts
the transaction anyway.
Errors are mapped to what the
:class:`~streamrt.runtime.engine.commit.committers.ExactlyOnceCommitter` recovers:
FENCED_INSTANCE_ID -> :class:`FencedInstanceError` (the instance stops); anything else ->
:class:`ProducerFencedError` (fenced, fatal) or
:class:`~streamrt.runtime.engine.eos.TransactionLostError` (abortable): the transaction is
lost, the tasks close dirty and a new producer's ``init_transactions`` aborts it on the broker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import threading
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import TopicPartition as RdTopicPartition

from streamrt.membership.config import FencedInstanceError
from streamrt.runtime.engine.clients.rdkafka_producer import (
    MAX_IN_FLIGHT,
    DeliveryError,
    LibrdkafkaCollector,
    LibrdkafkaProducer,
)
from streamrt.runtime.engine.eos import TRANSACTION_TIMEOUT_MS, TransactionLostError
from streamrt.topic_partition import TopicPartition

__all__ = (
    "GroupMetadata",
    "LibrdkafkaTransactionalCollector",
    "ProducerFencedError",
    "TransactionalLibrdkafkaProducer",
    "group_metadata_bytes",
    "is_fenced",
    "transactional_config",
)

logger = logging.getLogger(__name__)

#: librdkafka's ``rd_kafka_consumer_group_metadata_write`` magic, format version 2
_MAGIC = b"CGMDv2:"
#: how long ``init_transactions`` may take (Kafka's max.block.ms default)
CALL_TIMEOUT_S = 60.0
#: how long a call inside a transaction (send offsets, commit, abort) may take: the
#: transaction timeout, after which the coordinator aborts the transaction anyway
TXN_CALL_TIMEOUT_S = TRANSACTION_TIMEOUT_MS / 1000
#: ``send_offsets_to_transaction``, the call librdkafka can leave hanging (module doc): a
#: shorter bound, so a thread stalls seconds, not the transaction timeout, after a broker
#: restart (it normally answers in milliseconds; a slow one only costs a lost transaction)
SEND_OFFSETS_TIMEOUT_S = 5.0
#: how much longer than its own timeout a call is waited for before it counts as stuck
STUCK_GRACE_S = 1.0
#: how often a transactional call in flight looks for a dropped broker connection
WATCH_S = 0.1
#: how long :meth:`TransactionalLibrdkafkaProducer.connect` waits for a broker connection
CONNECT_TIMEOUT_S = 5.0
#: a newer producer with our transactional.id exists, or the coordinator fenced our epoch
#: (librdkafka's own ``_FENCED`` comes as a fatal error, which ``lost`` maps the same way)
_FENCED_CODES = frozenset({KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH})
#: a broker connection went away (one broker, or all): librdkafka's transactional calls made
#: after it can ignore their timeout (module doc). librdkafka's RD_KAFKA_RESP_ERR__TRANSPORT
#: and __ALL_BROKERS_DOWN (rdkafka.h, stable public codes), which confluent-kafka names only
#: as underscore attributes
_DROP_CODES = frozenset({-195, -187})


@dataclass(frozen=True, slots=True)
class GroupMetadata:
    """What the group coordinator checks on a TxnOffsetCommit v3 (the Java consumer's
    ``groupMetadata()``): a stale generation, an unknown member or a replaced static
    instance is refused."""

    generation_id: int
    member_id: str
    group_instance_id: str | None


class ProducerFencedError(TransactionLostError):
    """The producer is fenced or failed fatally: it cannot abort and must be re-created."""


def is_fenced(exc: BaseException) -> bool:
    """FENCED_INSTANCE_ID: raised by our member, or by the transactional producer mapped to
    :class:`FencedInstanceError` (perhaps as the cause of another error). Here, in the lowest
    room, so the committers, the thread and the client factory share it without a cycle."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, FencedInstanceError):
            return True
        seen = seen.__cause__
    return False


def group_metadata_bytes(group_id: str, metadata: GroupMetadata) -> bytes:
    """The group member's metadata as librdkafka's ``send_offsets_to_transaction`` reads it.

    Why: librdkafka only takes the member's identity as the blob its own consumer writes
    (``consumer_group_metadata()``); our member is not a librdkafka consumer, so we write the
    same bytes: the magic, the generation (native-endian int32), the group id and member id
    NUL-terminated, then a null flag for ``group.instance.id`` (1: null, nothing follows;
    0: the id follows, NUL-terminated).
    """
    texts = [group_id, metadata.member_id, metadata.group_instance_id or ""]
    if any("\0" in text for text in texts):
        raise ValueError(f"group metadata with a NUL character: {texts!r}")
    out = [_MAGIC, struct.pack("=i", metadata.generation_id)]
    out += [group_id.encode() + b"\0", metadata.member_id.encode() + b"\0"]
    if metadata.group_instance_id is None:
        out.append(b"\x01")
    else:
        out += [b"\x00", metadata.group_instance_id.encode() + b"\0"]
    return b"".join(out)


def transactional_config(config: dict[str, Any], transactional_id: str) -> dict[str, Any]:
    """A producer's librdkafka config (:func:`librdkafka_config`) made transactional: one
    transactional.id per thread (EOS v2), Kafka Streams' transaction timeout; idempotence is
    implied (librdkafka refuses ``acks`` other than all with a clear error)."""
    out = {
        **config,
        "transactional.id": transactional_id,
        "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS,
        "enable.idempotence": True,
    }
    # idempotence keeps the order; one request in flight spares the CPU (MAX_IN_FLIGHT's why)
    out["max.in.flight.requests.per.connection"] = MAX_IN_FLIGHT
    return out


def lost(exc: BaseException, what: str, instance_id: str | None = None) -> BaseException:
    """``exc`` from librdkafka as the committer's error (see the module doc)."""
    err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    if not isinstance(err, KafkaError):
        return TransactionLostError(f"{what}: {exc!r}")
    if err.code() == KafkaError.FENCED_INSTANCE_ID:
        return FencedInstanceError(instance_id, f"{what}: {err.str()}")
    if err.fatal() or err.code() in _FENCED_CODES:
        return ProducerFencedError(f"{what}: producer fenced or fatal: {err.name()}: {err.str()}")
    return TransactionLostError(f"{what}: {err.name()}: {err.str()}")


class TransactionalLibrdkafkaProducer(LibrdkafkaProducer):
    """A :class:`LibrdkafkaProducer` with a transactional.id: ``init_transactions`` when it
    starts (fencing a zombie with the same id and aborting its open transaction), and the
    transaction's calls off the event loop."""

    def __init__(
        self,
        config: dict[str, Any],
        metadata: Callable[[], GroupMetadata],
        settle: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        super().__init__(config)
        self._metadata = metadata
        self._settle = settle  # before init_transactions: the old transaction (txn_settle.py)
        self.stuck = False  # a call never answered: the client is abandoned, not waited for
        self._open = False  # a transaction was begun and neither committed nor aborted
        self._drops = 0  # dropped connections librdkafka reported
        self._settled = 0  # ... before the last call that answered (init, commit, abort)

    @property
    def doomed(self) -> bool:
        """A broker connection dropped since the last transactional call that answered (in
        or between transactions: a drop reported after a commit may have cut the next
        transaction's connection) and a transaction is open: it is given up."""
        return self._open and self._drops != self._settled

    def _client_error(self, err: Any) -> None:
        super()._client_error(err)
        if err.code() in _DROP_CODES:
            self._drops += 1

    def _give_up(self, what: str) -> ProducerFencedError:
        """The doomed transaction's error; the client is abandoned as a stuck one is."""
        self.stuck = True
        return ProducerFencedError(
            f"{what}: a broker connection dropped during the transaction; it is lost and the "
            "producer replaced without waiting on it (librdkafka issue #5456)"
        )

    def _drop_seen(self) -> bool:
        """Serve librdkafka's error callback (its poll is thread-safe: the call runs in
        another thread) and say whether the open transaction is doomed."""
        self._producer.poll(0)
        return self.doomed

    async def _flush_slice(self) -> int:
        """A slice of the flush; a doomed transaction's flush stops here (module doc)."""
        if self.doomed:
            raise self._give_up("flush")
        return await super()._flush_slice()

    async def connect(self) -> None:
        """Create the client and wait until it has a broker connection, without the
        InitProducerId (which would fence a running incarnation): a hand-off successor does
        this while it waits for the release. Why: ``init_transactions`` right after the client
        is created often finds no broker up yet, and librdkafka then retries its coordinator
        lookup on a 500 ms timer (measured on the embedded broker: 520 ms instead of 4-60 ms).
        Best effort: with no broker yet, ``init_transactions`` waits for one as before."""
        if self._producer is None:
            await super().start()
        try:
            await asyncio.to_thread(self._producer.list_topics, None, CONNECT_TIMEOUT_S)
        except KafkaException as exc:
            logger.info("transactional producer: no broker connection yet (%s)", exc)

    async def start(self) -> None:
        await self.connect()
        if self._settle is not None:
            await self._settle()
        await self._call("init_transactions", self._producer.init_transactions, CALL_TIMEOUT_S)
        self._producer.poll(0)  # drops reported while it waited for the broker are settled
        self._settled = self._drops

    async def stop(self) -> None:
        """Records of an uncommitted transaction are worthless: purge them and close (no
        flush: a fenced producer's flush raises, and a committed transaction was flushed).
        A stuck client is closed in the background: its close would wait for the stuck call."""
        producer, self._producer = self._producer, None
        if producer is None:
            return
        if self.stuck:
            threading.Thread(target=_close_quietly, args=(producer,), daemon=True).start()
            logger.warning("transactional producer abandoned: a call never answered")
            return
        producer.purge(in_queue=True, in_flight=True, blocking=False)
        try:
            await _bounded(_close_quietly, (producer,), CALL_TIMEOUT_S)
        except KafkaException as exc:  # fenced or fatal: nothing of it is used again
            logger.info("transactional producer closed with %s", exc)
        except TimeoutError:
            logger.warning("transactional producer close did not end; left to finish alone")

    def begin(self) -> None:
        """Begin a transaction (local to the client: no round trip)."""
        try:
            self._producer.begin_transaction()
        except KafkaException as exc:
            raise lost(exc, "begin_transaction") from exc
        self._open = True

    async def send_offsets(self, offsets: dict[TopicPartition, int], group_id: str) -> None:
        """TxnOffsetCommit with the member's metadata as it is now (a rejoin since the last
        commit is seen)."""
        if self.doomed:
            raise self._give_up("send_offsets_to_transaction")
        metadata = self._metadata()
        blob = group_metadata_bytes(group_id, metadata)
        parts = [RdTopicPartition(tp.topic, tp.partition, off) for tp, off in offsets.items()]
        send = self._producer.send_offsets_to_transaction
        await self._call(
            "send_offsets_to_transaction", send, parts, blob, SEND_OFFSETS_TIMEOUT_S,
            instance_id=metadata.group_instance_id,
        )  # fmt: skip

    async def commit(self) -> None:
        if self.doomed:
            raise self._give_up("commit_transaction")
        commit, drops = self._producer.commit_transaction, self._drops
        await self._call("commit_transaction", commit, TXN_CALL_TIMEOUT_S)
        self._open, self._settled = False, drops

    async def abort(self) -> None:
        """Abort (librdkafka purges what is queued), serve the purged records' reports, and
        forget them: they belong to the aborted transaction, not to the next flush. A stuck
        client cannot abort (its stuck call holds the transaction): the caller renews it."""
        if self.stuck:
            raise ProducerFencedError("abort_transaction: the producer is stuck in a call")
        if self.doomed:
            raise self._give_up("abort_transaction")
        abort, drops = self._producer.abort_transaction, self._drops
        await self._call("abort_transaction", abort, TXN_CALL_TIMEOUT_S)
        self._open, self._settled = False, drops
        self._producer.flush(0)
        self.forget()

    async def _call(
        self,
        what: str,
        call: Callable[..., Any],
        *args: Any,
        instance_id: str | None = None,
    ) -> None:
        """``call(*args)``, whose last argument is its timeout in seconds, waited for at most
        that long plus :data:`STUCK_GRACE_S` (see the module doc); inside a transaction a
        connection that drops meanwhile gives it up at once (the call is left to finish alone)."""
        try:
            await _bounded(call, args, float(args[-1]), self._drop_seen if self._open else None)
        except _GivenUp:
            raise self._give_up(what) from None
        except KafkaException as exc:
            raise lost(exc, what, instance_id) from exc
        except TimeoutError:
            self.stuck = True
            raise ProducerFencedError(
                f"{what}: no answer within {args[-1]:.0f} s (+{STUCK_GRACE_S:.0f} s); the "
                "producer is replaced (librdkafka issue #5456)"
            ) from None


class LibrdkafkaTransactionalCollector(LibrdkafkaCollector):
    """The thread's collector under exactly_once_v2 over librdkafka: every record goes into
    the open transaction, begun by the first send after a commit.

    A record that cannot be handed over now (a full queue, or a producer in an error state)
    waits, in order, for :meth:`drain`, which raises the producer's error outside the
    task's processing (a send never raises into a processor's error handler).
    """

    producer: TransactionalLibrdkafkaProducer

    def __init__(self, producer: TransactionalLibrdkafkaProducer) -> None:
        super().__init__(producer)
        self.in_transaction = False
        self._refused: KafkaException | None = None

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None,
        timestamp_ms: int,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> None:
        if self.in_transaction and not self._waiting:
            try:
                if self._produce(topic, key, value, partition, timestamp_ms, headers):
                    return
            except KafkaException as exc:
                self._refused = exc
        self._waiting.append((topic, key, value, partition, timestamp_ms, headers))

    async def begin(self) -> None:
        if not self.in_transaction:
            self.producer.begin()
            self.in_transaction = True

    async def drain(self) -> None:
        if self._refused is not None:
            refused, self._refused = self._refused, None
            raise lost(refused, "produce") from refused
        if self._waiting:
            await self.begin()
        try:
            await super().drain()
        except KafkaException as exc:
            raise lost(exc, "produce") from exc

    async def flush(self) -> dict[TopicPartition, int]:
        """Deliver the transaction's records; bounded by the transaction timeout, after which
        the coordinator aborts the transaction anyway."""
        await self.drain()
        try:
            return await self.producer.flush(TRANSACTION_TIMEOUT_MS / 1000)
        except KafkaException as exc:  # flush raises the producer's fatal error (fenced)
            raise lost(exc, "flush") from exc
        except DeliveryError as exc:  # the transaction cannot commit what was not delivered
            raise TransactionLostError(f"delivery failed: {exc}") from exc

    async def send_offsets(self, offsets: dict[TopicPartition, int], group_id: str) -> None:
        await self.producer.send_offsets(offsets, group_id)

    async def commit(self) -> None:
        await self.producer.commit()
        self.in_transaction = False

    async def abort(self) -> None:
        await self.producer.abort()

    def reset(self, producer: TransactionalLibrdkafkaProducer | None = None) -> None:
        """After an abort (or with a re-created producer): forget the lost transaction."""
        if producer is not None:
            self.producer = producer
            self._produce = producer.produce
        self._waiting.clear()
        self._refused = None
        self.in_transaction = False


class _GivenUp(Exception):
    """``give_up`` said so while the call was running."""


async def _bounded(
    call: Callable[..., Any],
    args: tuple[Any, ...],
    timeout_s: float,
    give_up: Callable[[], bool] | None = None,
) -> None:
    """Run ``call(*args)`` in a daemon thread of its own; wait ``timeout_s`` +
    :data:`STUCK_GRACE_S` for it (TimeoutError; the thread is left to finish alone, and a
    daemon thread never holds up the process's exit). Its exception is raised here. With
    ``give_up``: asked every :data:`WATCH_S` meanwhile; True stops the wait (:class:`_GivenUp`)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def settle(error: BaseException | None) -> None:
        if done.done():
            return
        if error is None:
            done.set_result(None)
        else:
            done.set_exception(error)

    def run() -> None:
        error: BaseException | None = None
        try:
            call(*args)
        except BaseException as exc:  # handed to the waiting coroutine
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
            loop.call_soon_threadsafe(settle, error)

    # a late answer after a timeout is nobody's: retrieve it, so asyncio does not report it
    done.add_done_callback(lambda f: f.cancelled() or f.exception())
    threading.Thread(target=run, name="rdkafka-txn-call", daemon=True).start()
    deadline = loop.time() + timeout_s + STUCK_GRACE_S
    while True:
        left = deadline - loop.time()
        if left <= 0:
            raise TimeoutError
        try:
            await asyncio.wait_for(
                asyncio.shield(done), left if give_up is None else min(left, WATCH_S)
            )
            return
        except TimeoutError:
            if give_up is not None and not done.done() and give_up():
                raise _GivenUp from None


def _close_quietly(producer: Any) -> None:
    """Close; confluent-kafka aborts an open transaction there and warns (RuntimeWarning) when
    the abort fails, which it must for a fenced producer: that is logged, not printed."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        producer.close()
    for w in caught:
        logger.info("transactional producer close: %s", w.message)
