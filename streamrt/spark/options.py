"""The data source's options, read once on the driver into plain picklable values.

Names follow Spark's Kafka source (``subscribe``, ``subscribePattern``, ``assign``,
``startingOffsets``, ``endingOffsets``, ``maxOffsetsPerTrigger``); Kafka client settings are
``bootstrap.servers`` or any ``kafka.<name>`` option. The client is librdkafka
(confluent-kafka): its own names pass unchanged; the security settings Spark's Kafka source
takes with Apache Kafka's names (``kafka.security.protocol``, ``kafka.ssl.truststore.location``,
``kafka.ssl.keystore.*``, ``kafka.sasl.mechanism``, ``kafka.sasl.jaas.config``) are translated by
:class:`streamrt.client_config.ClientConfig`, so the same options work with both sources.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from streamrt.client_config import ClientConfig
from streamrt.errors import ConfigError
from streamrt.spark.offsets import EARLIEST, LATEST, OffsetSpec, parse_offset_spec

__all__ = (
    "SinkOptions",
    "SourceOptions",
    "Subscription",
    "client_config",
    "int_option",
    "parse_sink_options",
    "parse_source_options",
)

KAFKA_PREFIX = "kafka."
DEFAULT_POLL_TIMEOUT_MS = 120_000
DEFAULT_METADATA_TIMEOUT_MS = 10_000
DEFAULT_MAX_RECORDS_PER_PARTITION = 1_000_000
DEFAULT_BATCH_SIZE = 10_000


@dataclass(frozen=True, slots=True)
class Subscription:
    """Which topics to read: a list, a regex (``subscribePattern``) or fixed partitions."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None
    partitions: tuple[tuple[str, int], ...] = ()

    @property
    def option(self) -> str:
        if self.pattern is not None:
            return "subscribePattern"
        return "assign" if self.partitions else "subscribe"

    def matches(self, topic: str) -> bool:
        if self.pattern is not None:
            return re.fullmatch(self.pattern, topic) is not None and not topic.startswith("__")
        if self.partitions:
            return any(topic == t for t, _ in self.partitions)
        return topic in self.topics


@dataclass(frozen=True, slots=True)
class SourceOptions:
    client: Mapping[str, str]
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec
    max_records_per_partition: int
    max_offsets_per_trigger: int | None
    batch_size: int
    poll_timeout_ms: int
    metadata_timeout_ms: int


@dataclass(frozen=True, slots=True)
class SinkOptions:
    client: Mapping[str, str]
    topic: str | None
    metadata_timeout_ms: int


# Apache Kafka (Java client) security names librdkafka does not know
JAVA_SECURITY_KEYS = frozenset(
    {
        "sasl.jaas.config",
        "ssl.truststore.location",
        "ssl.truststore.type",
        "ssl.truststore.certificates",
        "ssl.truststore.password",
        "ssl.keystore.location",
        "ssl.keystore.type",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.password",
    }
)
# names both clients share, which the translation rewrites (librdkafka spells some otherwise)
_TRANSLATED = frozenset(
    {
        "security.protocol",
        "sasl.mechanism",
        "sasl.mechanisms",
        "sasl.username",
        "sasl.password",
        "ssl.key.password",
        "ssl.endpoint.identification.algorithm",
    }
)


def client_config(options: Mapping[str, str]) -> dict[str, str]:
    """Kafka client settings for librdkafka: ``bootstrap.servers`` plus every ``kafka.*``
    option, unprefixed, with Apache Kafka's security names translated."""
    config = {
        key[len(KAFKA_PREFIX) :].lower(): str(value)
        for key, value in options.items()
        if key.lower().startswith(KAFKA_PREFIX)
    }
    servers = options.get("bootstrap.servers") or config.get("bootstrap.servers")
    if not servers:
        raise ConfigError("option bootstrap.servers is required (e.g. 127.0.0.1:9092)")
    config["bootstrap.servers"] = str(servers)
    java_names = JAVA_SECURITY_KEYS & config.keys()
    disabled_check = config.get("ssl.endpoint.identification.algorithm") == ""  # Java's "off"
    if not java_names and not disabled_check:
        return config
    if "sasl.mechanisms" in config:  # librdkafka's spelling
        config.setdefault("sasl.mechanism", config["sasl.mechanisms"])
    try:
        security = ClientConfig.from_properties(config).librdkafka("consumer")
    except ConfigError as exc:
        raise ConfigError(f"option kafka.*: {exc}") from None
    kept = {k: v for k, v in config.items() if k not in JAVA_SECURITY_KEYS | _TRANSLATED}
    return {**kept, **security}


def int_option(
    options: Mapping[str, str], name: str, default: int | None, minimum: int = 1
) -> int | None:
    raw = options.get(name)
    if raw is None or str(raw).strip() == "":
        return default
    try:
        value = int(str(raw))
    except ValueError:
        raise ConfigError(f"option {name}: expected an integer, got {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"option {name}: must be >= {minimum}, got {value}")
    return value


def _required_int(options: Mapping[str, str], name: str, default: int) -> int:
    value = int_option(options, name, default)
    assert value is not None
    return value


def _subscription(options: Mapping[str, str]) -> Subscription:
    given = [name for name in ("subscribe", "subscribePattern", "assign") if options.get(name)]
    if len(given) != 1:
        raise ConfigError(
            "exactly one of the options subscribe, subscribePattern or assign is required"
            + (f" (got {', '.join(given)})" if given else "")
        )
    (name,) = given
    raw = str(options[name])
    if name == "subscribe":
        topics = tuple(t.strip() for t in raw.split(",") if t.strip())
        if not topics:
            raise ConfigError("option subscribe: expected a comma-separated list of topics")
        return Subscription(topics=topics)
    if name == "subscribePattern":
        try:
            re.compile(raw)
        except re.error as exc:
            raise ConfigError(f"option subscribePattern: invalid regex {raw!r}: {exc}") from None
        return Subscription(pattern=raw)
    try:
        parsed = json.loads(raw)
        partitions = tuple((str(topic), int(p)) for topic, ps in parsed.items() for p in ps)
    except (json.JSONDecodeError, AttributeError, TypeError, ValueError):
        raise ConfigError(
            f'option assign: expected JSON like {{"topic":[0,1]}}, got {raw!r}'
        ) from None
    if not partitions:
        raise ConfigError("option assign: names no partitions")
    return Subscription(partitions=partitions)


def parse_source_options(options: Mapping[str, str], streaming: bool) -> SourceOptions:
    """Validate every read option up front so bad input fails on the driver, naming the option."""
    starting = parse_offset_spec(
        "startingOffsets", options.get("startingOffsets"), LATEST if streaming else EARLIEST
    )
    ending = parse_offset_spec("endingOffsets", options.get("endingOffsets"), LATEST)
    if streaming and options.get("endingOffsets"):
        raise ConfigError("option endingOffsets is only valid for batch reads")
    if not streaming:
        # Spark's Kafka source rejects these too: a batch must have a fixed, readable range.
        if starting.default == LATEST or LATEST in starting.specific.values():
            raise ConfigError("option startingOffsets: 'latest' (-1) is not allowed for batch")
        if ending.default == EARLIEST or EARLIEST in ending.specific.values():
            raise ConfigError("option endingOffsets: 'earliest' (-2) is not allowed for batch")
    return SourceOptions(
        client=client_config(options),
        subscription=_subscription(options),
        starting=starting,
        ending=ending,
        max_records_per_partition=_required_int(
            options, "maxRecordsPerPartition", DEFAULT_MAX_RECORDS_PER_PARTITION
        ),
        max_offsets_per_trigger=int_option(options, "maxOffsetsPerTrigger", None),
        batch_size=_required_int(options, "batchSize", DEFAULT_BATCH_SIZE),
        poll_timeout_ms=_required_int(
            options, "kafkaConsumer.pollTimeoutMs", DEFAULT_POLL_TIMEOUT_MS
        ),
        metadata_timeout_ms=_required_int(
            options, "metadataTimeoutMs", DEFAULT_METADATA_TIMEOUT_MS
        ),
    )


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    topic = options.get("topic")
    return SinkOptions(
        client=client_config(options),
        topic=str(topic) if topic else None,
        metadata_timeout_ms=_required_int(
            options, "metadataTimeoutMs", DEFAULT_METADATA_TIMEOUT_MS
        ),
    )
