"""confluent-kafka (librdkafka) as the Kafka client inside Spark: metadata, ranges, produce.

Every function opens and closes its own client, or takes one the caller owns, so nothing
unpicklable ever lands on a reader or writer object (Spark pickles those to workers).
Client failures become :class:`ConfigError` naming the option or the topic-partition.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import confluent_kafka as ck

from streamrt.errors import ConfigError, StreamrtError
from streamrt.spark.offsets import TopicPartition, Watermarks
from streamrt.spark.options import Subscription

__all__ = (
    "PARTITION_EOF",
    "KafkaReadError",
    "consume_range",
    "list_partitions",
    "open_consumer",
    "open_producer",
    "watermarks",
)

logger = logging.getLogger(__name__)

# A range read asks for this many messages per consume() call; librdkafka prefetches anyway.
_CONSUME_CHUNK = 10_000
# librdkafka's RD_KAFKA_RESP_ERR__PARTITION_EOF (rdkafka.h, a stable public error code): the
# event ``enable.partition.eof`` delivers at a partition's end. confluent-kafka names it only
# ``KafkaError._PARTITION_EOF``, an underscore attribute, so the value is named here.
PARTITION_EOF = -191


class KafkaReadError(StreamrtError):
    """A range could not be read completely; the message names the topic-partition."""


def _base_config(client: Mapping[str, str]) -> dict[str, Any]:
    # librdkafka logs connection failures itself; route them through Python logging instead.
    return {"logger": logger, **client}


def open_consumer(client: Mapping[str, str]) -> ck.Consumer:
    """A consumer used only with assign(): it never joins a group nor commits offsets.

    librdkafka insists on a ``group.id`` even then, so a throwaway one is set unless given.
    """
    config = {
        "group.id": f"streamrt-spark-{uuid.uuid4().hex[:12]}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "earliest",
        # Range reads want big fetches: with 1 MiB per partition (the default) small records
        # arrive ~15k per round trip and the round trips, not the bytes, set the pace.
        "max.partition.fetch.bytes": 8 * 1024 * 1024,
        "queued.min.messages": 200_000,
        "fetch.wait.max.ms": 50,
        **_base_config(client),
    }
    return ck.Consumer(config)


def open_producer(client: Mapping[str, str]) -> ck.Producer:
    """A producer partitioning keys with murmur2 like Kafka's Java client (and aiokafka), so
    Spark-written keys land where streamrt apps and Kafka Streams expect them."""
    config = {
        "linger.ms": 5,
        "message.timeout.ms": 30_000,
        "partitioner": "murmur2_random",
        **_base_config(client),
    }
    return ck.Producer(config)


def _metadata(
    handle: ck.Consumer | ck.Producer, servers: str, timeout_s: float, secured: bool = False
) -> Any:
    try:
        return handle.list_topics(timeout=timeout_s)
    except ck.KafkaException as exc:
        # librdkafka reports a failed TLS handshake or SASL login as a transport failure
        hint = "; check the kafka.security.protocol, kafka.ssl.* and kafka.sasl.* options"
        raise ConfigError(
            f"option bootstrap.servers: cannot reach a Kafka broker at {servers} "
            f"({exc.args[0].str()}){hint if secured else ''}"
        ) from None


def is_secured(client: Mapping[str, str]) -> bool:
    """TLS or SASL configured: a connection failure may be a handshake or login failure."""
    return client.get("security.protocol", "plaintext").lower() != "plaintext"


def list_partitions(
    consumer: ck.Consumer,
    servers: str,
    subscription: Subscription,
    timeout_s: float,
    *,
    secured: bool = False,
) -> list[TopicPartition]:
    """The partitions a subscription names; an unknown topic or partition is an error.
    ``secured`` (TLS or SASL configured): a connection failure hints at those options."""
    topics = _metadata(consumer, servers, timeout_s, secured).topics
    found: list[TopicPartition] = []
    if subscription.partitions:
        for topic, partition in subscription.partitions:
            meta = topics.get(topic)
            if meta is None or meta.error is not None or partition not in meta.partitions:
                raise ConfigError(
                    f"option assign: unknown topic-partition {TopicPartition(topic, partition)}"
                )
            found.append(TopicPartition(topic, partition))
        return sorted(set(found))
    if subscription.pattern is None:
        missing = [t for t in subscription.topics if t not in topics or topics[t].error]
        if missing:
            raise ConfigError(
                f"option subscribe: unknown topic(s) {', '.join(missing)} at {servers}"
            )
    for name, meta in topics.items():
        if subscription.matches(name) and meta.error is None:
            found.extend(TopicPartition(name, p) for p in meta.partitions)
    if not found and subscription.pattern is not None:
        raise ConfigError(
            f"option subscribePattern: no topic at {servers} matches {subscription.pattern!r}"
        )
    return sorted(found)


def topic_exists(
    producer: ck.Producer, servers: str, topic: str, timeout_s: float, *, secured: bool = False
) -> bool:
    """Ask for one topic's metadata; a broker with auto-create on creates it here, as Kafka does."""
    meta = _metadata(producer, servers, timeout_s, secured).topics
    if topic in meta and meta[topic].error is None:
        return True
    try:
        one = producer.list_topics(topic=topic, timeout=timeout_s).topics.get(topic)
    except ck.KafkaException:
        return False
    return one is not None and one.error is None


def watermarks(
    consumer: ck.Consumer, partitions: Sequence[TopicPartition], timeout_s: float
) -> dict[TopicPartition, Watermarks]:
    out: dict[TopicPartition, Watermarks] = {}
    for tp in partitions:
        try:
            low, high = consumer.get_watermark_offsets(
                ck.TopicPartition(tp.topic, tp.partition), timeout=timeout_s, cached=False
            )
        except ck.KafkaException as exc:
            raise ConfigError(f"cannot list offsets of {tp}: {exc.args[0].str()}") from None
        out[tp] = Watermarks(low, high)
    return out


def consume_range(
    client: Mapping[str, str], tp: TopicPartition, start: int, end: int, poll_timeout_ms: int
) -> Iterator[list[ck.Message]]:
    """Yield lists of the messages of ``tp`` with ``start <= offset < end``, in offset order.

    Stops at ``end`` or at the partition's end (EOF), whichever comes first: a compacted or
    truncated log may not contain offset ``end - 1``. Raises KafkaReadError naming ``tp`` if
    the broker returns an error or nothing arrives for ``poll_timeout_ms``.
    """
    if start >= end:
        return
    consumer = open_consumer(client)
    try:
        consumer.assign([ck.TopicPartition(tp.topic, tp.partition, start)])
        idle_s = 0.0
        step_s = 1.0
        while True:
            messages = consumer.consume(_CONSUME_CHUNK, timeout=step_s)
            if not messages:
                idle_s += step_s
                if idle_s * 1000 >= poll_timeout_ms:
                    raise KafkaReadError(
                        f"no records from {tp} for {poll_timeout_ms} ms while reading offsets "
                        f"[{start}, {end}) (option kafkaConsumer.pollTimeoutMs)"
                    )
                continue
            idle_s = 0.0
            batch: list[ck.Message] = []
            last = start - 1
            done = False
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.code() == PARTITION_EOF:
                        done = True
                        break
                    raise KafkaReadError(f"error reading {tp}: {error.str()}")
                offset = message.offset()
                assert offset is not None  # only error events lack an offset
                if offset >= end:
                    done = True
                    break
                batch.append(message)
                last = offset
            if batch:
                yield batch
            if done or last >= end - 1:
                return
    finally:
        consumer.close()
