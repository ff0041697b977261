"""StreamsConfig: the runtime's settings under Kafka Streams' names.

Loaded from code, a file (``key=value`` properties or JSON), the environment
(``STREAMRT_APPLICATION_ID`` for ``application.id``: :mod:`streamrt.runtime.env_config`) and
the CLI, later sources winning.
Every value is checked once, at start, and a bad one is refused with a message naming its key.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import Any

from streamrt.client_config import ROLES, ClientConfig, read_config_text, redact
from streamrt.errors import ConfigError
from streamrt.runtime import client_settings
from streamrt.runtime.exception_handlers import HandlerSpec, RecordErrorHandlers, parse_handler
from streamrt.runtime.timestamps import TimestampExtractor, resolve_extractor
from streamrt.state.store import IN_MEMORY, ROCKS_DB, StoreKind

__all__ = (
    "AT_LEAST_ONCE",
    "EXACTLY_ONCE_V2",
    "REMOVED_KEYS",
    "StreamsConfig",
    "is_setting_key",
    "load_config_file",
)

MIN_PROBING_REBALANCE_INTERVAL_MS = 60_000
CLIENT_TAG_PREFIX = "client.tag."
#: Kafka Streams' ``group.protocol`` values (KIP-1071); classic is the default
GROUP_PROTOCOLS = ("classic", "streams")
AT_LEAST_ONCE = "at_least_once"
EXACTLY_ONCE_V2 = "exactly_once_v2"
_GUARANTEES = (AT_LEAST_ONCE, EXACTLY_ONCE_V2)
# Kafka 2.6-2.8's name for v2 (KIP-447), still accepted by Kafka 3.x.
_GUARANTEE_ALIASES = {"exactly_once_beta": EXACTLY_ONCE_V2}
#: Kafka Streams' commit.interval.ms default under exactly-once (30000 otherwise).
EOS_COMMIT_INTERVAL_MS = 100
#: Keys of earlier releases that chose the stream threads' Kafka clients (aiokafka or
#: librdkafka). librdkafka is now the one client and streamrt's own member keeps the group, so
#: a config that still sets one is refused at start, by name, rather than silently ignored.
REMOVED_KEYS = ("stream.thread.membership", "stream.thread.consumer", "stream.thread.producer")
#: Kafka Streams' ``upgrade.from`` values: from these the group stays on the eager protocol
#: (KIP-429 came in 2.4); from the later ones it is cooperative.
EAGER_UPGRADE_FROM = (
    "0.10.0", "0.10.1", "0.10.2", "0.11.0", "1.0", "1.1", "2.0", "2.1", "2.2", "2.3"
)  # fmt: skip
COOPERATIVE_UPGRADE_FROM = tuple(
    [f"2.{minor}" for minor in range(4, 9)] + [f"3.{minor}" for minor in range(10)]
)
# Kafka 4.0 names and the older ``default.`` ones; KIP-1034 and Kafka Connect's DLQ names.
_ALIASES = {
    "deserialization.exception.handler": "default.deserialization.exception.handler",
    "default.production.exception.handler": "production.exception.handler",
    "errors.dead.letter.queue.topic.name": "errors.deadletterqueue.topic.name",
}
_HANDLER_FIELDS = (
    "default_deserialization_exception_handler",
    "processing_exception_handler",
    "production_exception_handler",
)
_HOST_PORT = re.compile(r"^[^:\s]+:\d{1,5}$")
_APP_ID = re.compile(r"^[A-Za-z0-9._-]+$")
_CLIENT_PREFIXES = tuple(sorted({p for ps in ROLES.values() for p in ps}, key=len, reverse=True))
DEFAULT_CACHE_MAX_BYTES = 10 * 1024 * 1024  # Kafka Streams' statestore.cache.max.bytes
_DEPRECATED_CACHE_KEY = "cache.max.bytes.buffering"


@dataclass(frozen=True, slots=True)
class StreamsConfig:
    """Validated runtime settings. Field names are Kafka's with ``.`` → ``_``."""

    application_id: str
    bootstrap_servers: str = "localhost:9092"
    group_instance_id: str | None = None
    num_stream_threads: int = 1
    # thread: stream threads are OS threads of this process (one GIL); process: each runs in a
    # child process supervised by this one (runtime/process_thread.py)
    stream_thread_mode: str = "thread"
    # The stream threads' Kafka clients are fixed: streamrt's own member keeps the group and
    # librdkafka (confluent-kafka) fetches, produces and runs the transactions
    # (docs/architecture.md, "Kafka clients"). The removed keys' Python fields, refused:
    stream_thread_producer: InitVar[str | None] = None
    stream_thread_membership: InitVar[str | None] = None
    stream_thread_consumer: InitVar[str | None] = None
    # Kafka Streams' rolling-upgrade switch: from a version before 2.4 the group stays eager;
    # otherwise (and unset) the streamrt membership rebalances cooperatively (KIP-429)
    upgrade_from: str | None = None
    # Kafka Streams' group.protocol: classic (streamrt's own member, the leader assigns) or
    # streams (KIP-1071: the broker holds the topology and assigns tasks; Kafka 4.2+)
    group_protocol: str = "classic"
    # Kafka Streams' ``client.tag.<key>=<value>``: the instance's tags, sent to a streams
    # group's assignor (rack-aware standbys)
    client_tags: Mapping[str, str] = field(default_factory=dict)
    state_dir: str = "state"
    commit_interval_ms: int = 30_000
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 300_000
    # how long a task with an empty input partition (known to have no more data on the broker)
    # waits before processing its other partitions out of time order; -1: never waits
    max_task_idle_ms: int = 0
    application_server: str | None = None
    processing_guarantee: str = "at_least_once"
    default_deserialization_exception_handler: HandlerSpec = "fail"
    processing_exception_handler: HandlerSpec = "fail"
    production_exception_handler: HandlerSpec = "fail"
    errors_deadletterqueue_topic_name: str | None = None
    # A thread that fails on the same record is replaced after a backoff that doubles from
    # errors.retry.backoff.ms up to errors.retry.backoff.max.ms; after errors.retry.max.attempts
    # replacements the instance goes to ERROR.
    errors_retry_max_attempts: int = 3
    errors_retry_backoff_ms: int = 1_000
    errors_retry_backoff_max_ms: int = 30_000
    default_dsl_store: StoreKind = ROCKS_DB
    statestore_cache_max_bytes: int = DEFAULT_CACHE_MAX_BYTES
    # a Kafka built-in name (FailOnInvalidTimestamp, ...) or module:function; runtime.timestamps
    default_timestamp_extractor: str = "FailOnInvalidTimestamp"
    windowstore_changelog_additional_retention_ms: int = 86_400_000
    # of the changelog and repartition topics the runtime creates (-1: the brokers' default)
    replication_factor: int = -1
    # consumed repartition records are deleted (DeleteRecords) at most this often
    repartition_purge_interval_ms: int = 30_000
    # Standby replicas and warm-ups (KIP-441), with Kafka Streams' defaults and minimums.
    num_standby_replicas: int = 0
    acceptable_recovery_lag: int = 10_000
    max_warmup_replicas: int = 2
    probing_rebalance_interval_ms: int = 600_000
    # Kafka's: DEBUG (or TRACE) also counts per processor node (stream-processor-node-metrics)
    metrics_recording_level: str = "INFO"
    # Kafka client settings (bare names and consumer./producer./admin./restore.consumer.
    # prefixes), passed to the clients; may hold secrets, so never in repr (see redacted()).
    extra: Mapping[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(
        self,
        stream_thread_producer: str | None,
        stream_thread_membership: str | None,
        stream_thread_consumer: str | None,
    ) -> None:
        given = (stream_thread_membership, stream_thread_consumer, stream_thread_producer)
        for key, value in zip(REMOVED_KEYS, given, strict=True):
            if value is not None:
                raise ConfigError(_removed(key))
        alias = _GUARANTEE_ALIASES.get(self.processing_guarantee)
        if alias is not None:
            object.__setattr__(self, "processing_guarantee", alias)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> StreamsConfig:
        """Build from Kafka-style keys (``application.id``), refusing unknown or bad values."""
        known = {f.replace("_", "."): f for f in _FIELDS}
        kwargs: dict[str, Any] = {}
        extra: dict[str, str] = {}
        for key, raw in values.items():
            if raw is None:
                continue
            key = _ALIASES.get(key, key)
            if key.startswith(CLIENT_TAG_PREFIX):
                kwargs.setdefault("client_tags", {})[key[len(CLIENT_TAG_PREFIX) :]] = str(raw)
                continue
            if key.replace("_", ".") in REMOVED_KEYS:
                raise ConfigError(_removed(key))
            name = known.get(key)
            if name is None:
                if key == _DEPRECATED_CACHE_KEY:  # the pre-3.4 name; the new one wins
                    kwargs.setdefault(
                        "statestore_cache_max_bytes",
                        _coerce(key, "statestore_cache_max_bytes", raw),
                    )
                    continue
                if key.startswith(_CLIENT_PREFIXES) or client_settings.is_client_key(key):
                    extra[key] = str(raw)
                    continue
                raise ConfigError(f"unknown config key {key!r}")
            kwargs[name] = _coerce(key, name, raw)
        if "application_id" not in kwargs:
            raise ConfigError("application.id is required")
        store = str(kwargs.get("default_dsl_store", ROCKS_DB))
        kinds: dict[str, StoreKind] = {ROCKS_DB.lower(): ROCKS_DB, IN_MEMORY: IN_MEMORY}
        if store.lower() not in kinds:
            raise ConfigError(f"default.dsl.store must be {ROCKS_DB} or {IN_MEMORY}, got {store!r}")
        kwargs["default_dsl_store"] = kinds[store.lower()]
        guarantee = str(kwargs.get("processing_guarantee", AT_LEAST_ONCE))
        guarantee = _GUARANTEE_ALIASES.get(guarantee, guarantee)
        kwargs["processing_guarantee"] = guarantee
        if guarantee == EXACTLY_ONCE_V2 and "commit_interval_ms" not in kwargs:
            kwargs["commit_interval_ms"] = EOS_COMMIT_INTERVAL_MS
        config = cls(**kwargs, extra=extra)
        config.validate()
        return config

    def validate(self) -> None:
        """Refuse settings Kafka Streams would refuse (ConfigError naming the first one)."""
        _raise_first(self._identity_rules())
        try:
            client_settings.validate(self.client_config())
        except ConfigError as exc:
            raise ConfigError(f"client settings: {exc}") from None
        _raise_first(self._limit_rules())
        _raise_first(self._upgrade_rules())
        self.error_handlers()  # dlq without a topic name is refused here
        self.timestamp_extractor()

    def _identity_rules(self) -> list[tuple[bool, str]]:
        """(broken, message) for the names and addresses, in the order they are checked."""
        rules = [
            (
                not _APP_ID.match(self.application_id),
                f"application.id {self.application_id!r} must match [A-Za-z0-9._-]+",
            )
        ]
        rules += [
            (
                not _is_host_port(server.strip()),
                f"bootstrap.servers entry {server!r} is not host:port",
            )
            for server in self.bootstrap_servers.split(",")
        ]
        instance_id = self.group_instance_id
        rules.append(
            (
                instance_id is not None and not _APP_ID.match(instance_id),
                f"group.instance.id {instance_id!r} must match [A-Za-z0-9._-]+",
            )
        )
        rules.append(
            (self.statestore_cache_max_bytes < 0, "statestore.cache.max.bytes must be at least 0")
        )
        level = self.metrics_recording_level
        rules.append(
            (
                level not in ("INFO", "DEBUG", "TRACE"),
                f"metrics.recording.level {level!r} must be INFO, DEBUG or TRACE",
            )
        )
        return rules

    def _upgrade_rules(self) -> list[tuple[bool, str]]:
        """(broken, message) for ``upgrade.from``."""
        upgrade = self.upgrade_from
        return [
            (
                self.group_protocol not in GROUP_PROTOCOLS,
                f"group.protocol {self.group_protocol!r} must be one of "
                f"{', '.join(GROUP_PROTOCOLS)}",
            ),
            (
                upgrade is not None
                and upgrade not in EAGER_UPGRADE_FROM + COOPERATIVE_UPGRADE_FROM,
                f"upgrade.from {upgrade!r} must be one of Kafka's versions "
                f"{', '.join(EAGER_UPGRADE_FROM + COOPERATIVE_UPGRADE_FROM)}",
            ),
        ]

    @property
    def rebalance_protocol(self) -> str:
        """``eager`` or ``cooperative``: cooperative unless ``upgrade.from`` names a version
        before 2.4 (as Kafka Streams)."""
        if self.upgrade_from in EAGER_UPGRADE_FROM:
            return "eager"
        return "cooperative"

    def _limit_rules(self) -> list[tuple[bool, str]]:
        """(broken, message) for the numbers, modes and guarantees, in checking order."""
        server, guarantee = self.application_server, self.processing_guarantee
        backoff, backoff_max = self.errors_retry_backoff_ms, self.errors_retry_backoff_max_ms
        return [
            (
                self.windowstore_changelog_additional_retention_ms < 0,
                "windowstore.changelog.additional.retention.ms must not be negative",
            ),
            (
                self.repartition_purge_interval_ms < 0,
                "repartition.purge.interval.ms must be at least 0",
            ),
            (
                self.replication_factor == 0 or self.replication_factor < -1,
                "replication.factor must be -1 (the brokers' default) or positive",
            ),
            (self.num_standby_replicas < 0, "num.standby.replicas must be at least 0"),
            (self.acceptable_recovery_lag < 0, "acceptable.recovery.lag must be at least 0"),
            (self.max_warmup_replicas < 1, "max.warmup.replicas must be at least 1"),
            (
                self.probing_rebalance_interval_ms < MIN_PROBING_REBALANCE_INTERVAL_MS,
                "probing.rebalance.interval.ms must be at least "
                f"{MIN_PROBING_REBALANCE_INTERVAL_MS} (one minute, as Kafka Streams)",
            ),
            (self.num_stream_threads < 1, "num.stream.threads must be at least 1"),
            (
                self.stream_thread_mode not in ("thread", "process"),
                f"stream.thread.mode {self.stream_thread_mode!r} must be 'thread' or 'process'",
            ),
            (self.commit_interval_ms < 1, "commit.interval.ms must be positive"),
            (self.max_task_idle_ms < -1, "max.task.idle.ms must be -1 (never idle) or at least 0"),
            (self.session_timeout_ms < 1, "session.timeout.ms must be positive"),
            (
                not 0 < self.heartbeat_interval_ms < self.session_timeout_ms,
                "heartbeat.interval.ms must be positive and below session.timeout.ms",
            ),
            (
                server is not None and not _is_host_port(server),
                f"application.server {server!r} is not host:port",
            ),
            (
                guarantee == "exactly_once",
                "processing.guarantee 'exactly_once' (EOS v1, one producer per task) was removed "
                f"in Kafka 4.0; use {EXACTLY_ONCE_V2!r}",
            ),
            (
                guarantee not in _GUARANTEES,
                f"processing.guarantee {guarantee!r} is not supported; "
                f"only {', '.join(_GUARANTEES)}",
            ),
            (self.errors_retry_max_attempts < 0, "errors.retry.max.attempts must be at least 0"),
            (
                not 0 < backoff <= backoff_max,
                "errors.retry.backoff.ms must be positive and at most errors.retry.backoff.max.ms",
            ),
        ]

    def timestamp_extractor(self) -> TimestampExtractor:
        """``default.timestamp.extractor`` resolved (ConfigError if it names nothing usable)."""
        return resolve_extractor(self.default_timestamp_extractor)

    def error_handlers(self) -> RecordErrorHandlers:
        """The record exception handlers these settings describe (fresh counters)."""
        return RecordErrorHandlers(
            deserialization=self.default_deserialization_exception_handler,
            processing=self.processing_exception_handler,
            production=self.production_exception_handler,
            dead_letter_topic=self.errors_deadletterqueue_topic_name or None,
        )

    def client_config(self) -> ClientConfig:
        """The Kafka client settings (``bootstrap.servers`` and every client key given)."""
        return ClientConfig({**self.extra, "bootstrap.servers": self.bootstrap_servers})

    def redacted(self) -> dict[str, Any]:
        """Every setting under its Kafka name, secrets ``[hidden]``: safe for logs and events."""
        out: dict[str, Any] = {f.replace("_", "."): getattr(self, f) for f in _FIELDS}
        out.update({f"{CLIENT_TAG_PREFIX}{k}": v for k, v in self.client_tags.items()})
        out.update(redact(self.extra))
        return out

    @property
    def exactly_once(self) -> bool:
        """True under ``processing.guarantee=exactly_once_v2``."""
        return self.processing_guarantee == EXACTLY_ONCE_V2

    @property
    def streams_protocol(self) -> bool:
        """True under ``group.protocol=streams``: the stream threads join a KIP-1071 group."""
        return self.group_protocol == "streams"

    @property
    def app_state_dir(self) -> Path:
        """``<state.dir>/<application.id>``: where this application's task directories live."""
        return Path(self.state_dir) / self.application_id


#: The settings' field names (not ``extra``, not the removed keys' refused InitVars).
_FIELDS = tuple(
    f.name for f in dataclasses.fields(StreamsConfig) if f.name not in ("extra", "client_tags")
)


def _removed(key: str) -> str:
    return (
        f"{key} no longer exists: librdkafka (confluent-kafka) is the one Kafka client of the "
        "stream threads and streamrt's own member keeps the group; remove the setting "
        '(docs/operations.md, "Upgrading from aiokafka membership")'
    )


def _raise_first(rules: list[tuple[bool, str]]) -> None:
    for broken, message in rules:
        if broken:
            raise ConfigError(message)


def _coerce(key: str, name: str, raw: Any) -> Any:
    if name in _HANDLER_FIELDS:
        return parse_handler(key, raw)
    annotation = str(StreamsConfig.__dataclass_fields__[name].type)
    if annotation.startswith("int"):
        try:
            return int(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"{key} must be an integer, got {raw!r}") from None
    if not isinstance(raw, str):
        raise ConfigError(f"{key} must be a string, got {raw!r}")
    return raw


def is_setting_key(key: str) -> bool:
    """A key :meth:`StreamsConfig.from_mapping` accepts (its own, an alias, a client key)."""
    known = {f.replace("_", ".") for f in _FIELDS}
    return (
        _ALIASES.get(key, key) in known
        or key in REMOVED_KEYS  # read, so that start-up refuses it by name
        or key == _DEPRECATED_CACHE_KEY
        or key.startswith(CLIENT_TAG_PREFIX)
        or key.startswith(_CLIENT_PREFIXES)
        or client_settings.is_client_key(key)
    )


def _is_host_port(text: str) -> bool:
    """``host:port`` with a port a peer can connect to (1-65535)."""
    return bool(_HOST_PORT.match(text)) and 0 < int(text.rsplit(":", 1)[1]) < 65536


def load_config_file(path: str | Path) -> dict[str, str]:
    """A JSON object, or Java-style properties (``key=value``, ``#`` comments)."""
    text = read_config_text(path)
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"{path}: not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a JSON object")
        return {str(k): str(v) for k, v in data.items()}
    out: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        if "=" not in line:
            raise ConfigError(f"{path}:{lineno}: expected key=value")
        key, _, value = line.partition("=")
        out[key.strip()] = value.strip()
    return out
