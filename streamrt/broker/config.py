"""Broker and topic configuration, with Apache Kafka's names and defaults.

One table (:data:`BROKER_CONFIGS`) defines every broker key: its type, default and, where the
key has a per-topic override, the topic-level name (``log.segment.bytes`` → ``segment.bytes``).
Values come from a Java-style ``.properties`` file and ``--override key=value`` flags. The value
types (parsers named as Kafka's ``ConfigDef.Type``) are in :mod:`config_types`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from streamrt.broker.config_types import MAX_INT as _MAX_INT
from streamrt.broker.config_types import MAX_LONG as _MAX_LONG
from streamrt.broker.config_types import ConfigDef
from streamrt.broker.config_types import boolean as _bool
from streamrt.broker.config_types import choice as _choice
from streamrt.broker.config_types import cleanup_policy as _cleanup_policy
from streamrt.broker.config_types import false_only as _false_only
from streamrt.broker.config_types import int_range as _int_range
from streamrt.broker.config_types import ratio as _ratio
from streamrt.broker.consumer_group_config import CONSUMER_GROUP_CONFIGS
from streamrt.broker.streams_group_config import STREAMS_GROUP_CONFIGS
from streamrt.errors import ConfigError

__all__ = (
    "BROKER_CONFIGS",
    "TOPIC_CONFIGS",
    "BrokerConfig",
    "ConfigDef",
    "load_properties",
    "validate_topic_configs",
)

_LISTENER_PREFIX = "listener.name."

_DEFS: tuple[ConfigDef, ...] = (
    ConfigDef("node.id", _int_range(0, _MAX_INT), "0", "This broker's node id."),
    ConfigDef("listeners", str, "PLAINTEXT://127.0.0.1:9092", "Address to bind."),
    ConfigDef("num.partitions", _int_range(1, 100_000), "1", "Partitions of auto-created topics."),
    ConfigDef("auto.create.topics.enable", _bool, "true", "Create unknown topics on Metadata."),
    ConfigDef("default.replication.factor", _int_range(1, 1), "1", "Single node: always 1."),
    ConfigDef(
        "message.max.bytes",
        _int_range(0, _MAX_INT),
        "1048588",
        "Largest record batch accepted.",
        "max.message.bytes",
    ),
    ConfigDef(
        "log.segment.bytes",
        _int_range(14, _MAX_INT),
        "1073741824",
        "Segment size before a roll.",
        "segment.bytes",
    ),
    ConfigDef(
        "log.roll.ms", _int_range(1), "604800000", "Segment age before a roll.", "segment.ms"
    ),
    ConfigDef(
        "log.retention.ms",
        _int_range(-1),
        "604800000",
        "Delete segments older than this (-1: forever).",
        "retention.ms",
    ),
    ConfigDef(
        "log.retention.bytes",
        _int_range(-1),
        "-1",
        "Delete old segments beyond this size per partition (-1: no limit).",
        "retention.bytes",
    ),
    ConfigDef(
        "log.cleanup.policy",
        _cleanup_policy,
        "delete",
        "delete, compact, or compact,delete.",
        "cleanup.policy",
    ),
    ConfigDef(
        "log.cleaner.delete.retention.ms",
        _int_range(0),
        "86400000",
        "How long tombstones survive compaction.",
        "delete.retention.ms",
    ),
    ConfigDef(
        "log.cleaner.min.cleanable.ratio",
        _ratio,
        "0.5",
        "Dirty ratio that triggers compaction.",
        "min.cleanable.dirty.ratio",
    ),
    ConfigDef(
        "log.cleaner.min.compaction.lag.ms",
        _int_range(0),
        "0",
        "Minimum age of a record before it may be compacted away.",
        "min.compaction.lag.ms",
    ),
    ConfigDef(
        "log.index.interval.bytes",
        _int_range(0, _MAX_INT),
        "4096",
        "Bytes between sparse index entries.",
        "index.interval.bytes",
    ),
    ConfigDef(
        "log.message.timestamp.type",
        _choice("CreateTime", "LogAppendTime"),
        "CreateTime",
        "Which timestamp the log keeps.",
        "message.timestamp.type",
    ),
    ConfigDef(
        "compression.type",
        _choice("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
        "producer",
        "Codec of stored batches: producer keeps the producer's; any other value makes the"
        " broker recompress batches in another codec on append, as Kafka's LogValidator.",
        "compression.type",
    ),
    ConfigDef(
        "compression.gzip.level", _int_range(-1, 9), "-1", "gzip level.", "compression.gzip.level"
    ),
    ConfigDef(
        "compression.lz4.level", _int_range(1, 17), "9", "lz4 level.", "compression.lz4.level"
    ),
    ConfigDef(
        "compression.zstd.level",
        _int_range(-131072, 22),
        "3",
        "zstd level.",
        "compression.zstd.level",
    ),
    ConfigDef(
        "log.message.timestamp.before.max.ms",
        _int_range(0),
        str(_MAX_LONG),
        "CreateTime: reject a batch whose timestamp is further in the past (INVALID_TIMESTAMP).",
        "message.timestamp.before.max.ms",
    ),
    ConfigDef(
        "log.message.timestamp.after.max.ms",
        _int_range(0),
        "3600000",
        "CreateTime: reject a batch whose timestamp is further in the future (INVALID_TIMESTAMP).",
        "message.timestamp.after.max.ms",
    ),
    ConfigDef(
        "log.cleaner.max.compaction.lag.ms",
        _int_range(1),
        str(_MAX_LONG),
        "Maximum time a record stays uncompacted (recorded).",
        "max.compaction.lag.ms",
    ),
    ConfigDef(
        "log.index.size.max.bytes",
        _int_range(4, _MAX_INT),
        "10485760",
        "Maximum offset index size (recorded).",
        "segment.index.bytes",
    ),
    ConfigDef(
        "log.roll.jitter.ms",
        _int_range(0),
        "0",
        "Random jitter subtracted from segment.ms (recorded).",
        "segment.jitter.ms",
    ),
    ConfigDef(
        "log.segment.delete.delay.ms",
        _int_range(0),
        "60000",
        "Delay before a deleted segment's files go (recorded; deletion is immediate).",
        "file.delete.delay.ms",
    ),
    ConfigDef(
        "log.flush.interval.messages",
        _int_range(1),
        str(_MAX_LONG),
        "Messages between fsyncs (recorded; streamrt.log.fsync decides).",
        "flush.messages",
    ),
    ConfigDef(
        "log.preallocate", _bool, "false", "Preallocate segment files (recorded).", "preallocate"
    ),
    ConfigDef(
        "unclean.leader.election.enable",
        _bool,
        "false",
        "Single node: the only replica always leads.",
        "unclean.leader.election.enable",
    ),
    ConfigDef(
        "log.local.retention.ms",
        _int_range(-2),
        "-2",
        "Tiered storage: local retention (-2: retention.ms; no tiering here).",
        "local.retention.ms",
    ),
    ConfigDef(
        "log.local.retention.bytes",
        _int_range(-2),
        "-2",
        "Tiered storage: local retention bytes (-2: retention.bytes; no tiering here).",
        "local.retention.bytes",
    ),
    ConfigDef(
        "remote.log.storage.system.enable",
        _false_only,
        "false",
        "Tiered storage is not available on this broker.",
        "remote.storage.enable",
    ),
    ConfigDef(
        "advertised.listeners",
        str,
        "",
        "Address clients are told to connect to (empty: the listener's).",
    ),
    ConfigDef("log.max.open.files", _int_range(1), "1000", "Segment files kept open (LRU)."),
    ConfigDef(
        "log.retention.check.interval.ms",
        _int_range(1),
        "300000",
        "How often retention and compaction run.",
    ),
    ConfigDef(
        "log.flush.interval.ms",
        _int_range(1),
        "1000",
        "With fsync=interval: how often dirty logs are fsynced.",
        "flush.ms",
    ),
    ConfigDef(
        "streamrt.log.fsync",
        _choice("always", "interval", "never"),
        "interval",
        "always: fsync before acks=all is answered; interval: every log.flush.interval.ms.",
    ),
    ConfigDef(
        "min.insync.replicas",
        _int_range(1, 1),
        "1",
        "Single node: always 1.",
        "min.insync.replicas",
    ),
    ConfigDef(
        "producer.id.expiration.ms",
        _int_range(1),
        "86400000",
        "Idle time after which producer-id sequence state is dropped.",
    ),
    ConfigDef(
        "offsets.topic.num.partitions", _int_range(1, 1000), "50", "__consumer_offsets size."
    ),
    ConfigDef(
        "offsets.retention.minutes", _int_range(1), "10080", "Offsets of empty groups expire."
    ),
    ConfigDef(
        "offsets.retention.check.interval.ms", _int_range(1), "600000", "Offset expiry interval."
    ),
    ConfigDef(
        "group.min.session.timeout.ms", _int_range(0, _MAX_INT), "6000", "JoinGroup minimum."
    ),
    ConfigDef(
        "group.max.session.timeout.ms", _int_range(0, _MAX_INT), "1800000", "JoinGroup maximum."
    ),
    ConfigDef(
        "group.initial.rebalance.delay.ms",
        _int_range(0, _MAX_INT),
        "3000",
        "Delay before the first rebalance of an empty group completes.",
    ),
    ConfigDef("group.max.size", _int_range(1, _MAX_INT), str(_MAX_INT), "Members per group."),
    ConfigDef(
        "transaction.state.log.num.partitions",
        _int_range(1, 1000),
        "50",
        "__transaction_state size.",
    ),
    ConfigDef(
        "transaction.max.timeout.ms",
        _int_range(1, _MAX_INT),
        "900000",
        "Largest transaction.timeout.ms a producer may ask for.",
    ),
    ConfigDef(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        _int_range(1, _MAX_INT),
        "10000",
        "How often transactions past their timeout are aborted.",
    ),
    ConfigDef(
        "transactional.id.expiration.ms",
        _int_range(1, _MAX_INT),
        "604800000",
        "Idle time after which a transactional id is forgotten.",
    ),
    ConfigDef(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        _int_range(1, _MAX_INT),
        "3600000",
        "How often expired transactional ids are removed.",
    ),
    ConfigDef(
        "socket.request.max.bytes",
        _int_range(1, _MAX_INT),
        "104857600",
        "Largest request frame; a bigger one closes the connection.",
    ),
    # -- security (streamrt.broker.security): listeners, TLS, SASL, ACLs -----------------------
    ConfigDef(
        "listener.security.protocol.map",
        str,
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        "Listener name to security protocol.",
    ),
    ConfigDef(
        "sasl.server.max.receive.size",
        _int_range(1, _MAX_INT),
        "524288",
        "Largest frame a SASL connection may send before it is authenticated.",
    ),
    ConfigDef(
        "connection.failed.authentication.delay.ms",
        _int_range(0, _MAX_INT),
        "100",
        "Delay before answering a failed SASL authentication (and closing).",
    ),
    ConfigDef(
        "max.connections",
        _int_range(0, _MAX_INT),
        str(_MAX_INT),
        "Most open client connections; a new one beyond it is closed at once.",
    ),
    ConfigDef(
        "max.connections.per.ip",
        _int_range(0, _MAX_INT),
        str(_MAX_INT),
        "Most open connections from one IP address; a new one beyond it is closed at once.",
    ),
    ConfigDef(
        "connections.max.idle.ms",
        _int_range(-1),
        "600000",
        "Close a connection that sent no request for this long (-1: never).",
    ),
    ConfigDef(
        "fetch.max.bytes",
        _int_range(0, _MAX_INT),
        "57671680",
        "Most record bytes in one Fetch response (a request may ask for fewer).",
    ),
    ConfigDef("streamrt.fetch.wait.max.ms", _int_range(0, _MAX_INT), "30000", "Fetch wait cap."),
    ConfigDef(
        "sasl.enabled.mechanisms",
        str,
        "SCRAM-SHA-256,SCRAM-SHA-512",
        "SASL mechanisms of SASL listeners: PLAIN only when listed, as in Kafka (whose "
        "default, GSSAPI, is not supported here, nor is OAUTHBEARER).",
    ),
    ConfigDef("ssl.keystore.type", _choice("PEM"), "PEM", "Only PEM keystores are supported."),
    ConfigDef("ssl.keystore.location", str, "", "PEM file: private key and certificate chain."),
    ConfigDef("ssl.keystore.password", str, "", "Password of the keystore.", sensitive=True),
    ConfigDef("ssl.key.password", str, "", "Password of the private key.", sensitive=True),
    ConfigDef("ssl.keystore.key", str, "", "Inline PEM private key.", sensitive=True),
    ConfigDef("ssl.keystore.certificate.chain", str, "", "Inline PEM certificate chain."),
    ConfigDef("ssl.truststore.type", _choice("PEM"), "PEM", "Only PEM truststores."),
    ConfigDef("ssl.truststore.location", str, "", "PEM file of CAs trusted for client certs."),
    ConfigDef("ssl.truststore.certificates", str, "", "Inline PEM CA certificates."),
    ConfigDef(
        "ssl.client.auth",
        _choice("none", "requested", "required"),
        "none",
        "Ask TLS clients for a certificate; its DN becomes the principal.",
    ),
    ConfigDef(
        "authorizer.class.name",
        str,
        "",
        "Empty: no authorization. StandardAuthorizer/AclAuthorizer: enforce ACLs.",
    ),
    ConfigDef("super.users", str, "", "Principals allowed everything, ';'-separated."),
    ConfigDef(
        "allow.everyone.if.no.acl.found",
        _bool,
        "false",
        "Allow access to resources that have no ACL at all.",
    ),
)

_DEFS = (*_DEFS, *CONSUMER_GROUP_CONFIGS, *STREAMS_GROUP_CONFIGS)  # KIP-848's, KIP-1071's keys
BROKER_CONFIGS: Mapping[str, ConfigDef] = {d.name: d for d in _DEFS}
TOPIC_CONFIGS: Mapping[str, ConfigDef] = {d.topic_name: d for d in _DEFS if d.topic_name}


def load_properties(path: Path) -> dict[str, str]:
    """Read a Java ``.properties`` file (``key=value``, ``#`` comments)."""
    out: dict[str, str] = {}
    for lineno, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if sep < 0:
            raise ConfigError(f"{path}:{lineno}: expected key=value, got {raw!r}")
        out[line[:sep].strip()] = line[sep + 1 :].strip()
    return out


def validate_topic_configs(configs: Mapping[str, str | None]) -> dict[str, str]:
    """Check topic-level overrides; raise ConfigError naming the bad key."""
    out: dict[str, str] = {}
    for key, value in configs.items():
        d = TOPIC_CONFIGS.get(key)
        if d is None:
            raise ConfigError(f"unknown topic config {key!r}")
        if value is None:
            raise ConfigError(f"topic config {key!r} needs a value")
        try:
            d.parse(value)
        except ValueError as exc:
            raise ConfigError(f"invalid value {value!r} for {key!r}: {exc}") from None
        out[key] = value.strip()
    return out


class BrokerConfig:
    """Typed view over broker config strings. ``cfg["log.segment.bytes"]`` is an int."""

    def __init__(self, overrides: Mapping[str, str] | None = None) -> None:
        self._raw: dict[str, str] = {}
        self._typed: dict[str, Any] = {}
        self._listener_overrides: dict[str, str] = {}
        for d in _DEFS:
            self._set(d, d.default)
        for key, value in (overrides or {}).items():
            known = BROKER_CONFIGS.get(key)
            if known is None and key.startswith(_LISTENER_PREFIX):
                self._listener_overrides[key] = str(value)
                continue
            if known is None:
                raise ConfigError(f"unknown broker config {key!r}")
            self._set(known, str(value))

    def _set(self, d: ConfigDef, value: str) -> None:
        try:
            self._typed[d.name] = d.parse(value)
        except ValueError as exc:
            raise ConfigError(f"invalid value {value!r} for {d.name!r}: {exc}") from None
        self._raw[d.name] = value

    def __getitem__(self, key: str) -> Any:
        return self._typed[key]

    def raw(self, key: str) -> str:
        return self._raw[key]

    def extra(self, key: str) -> str | None:
        """A ``listener.name.<listener>.…`` setting (e.g. a listener's PLAIN JAAS config)."""
        return self._listener_overrides.get(key)

    def listener_value(self, listener: str, key: str) -> Any:
        """``listener.name.<listener>.<key>`` if set, else ``key`` (Kafka's override)."""
        raw = self._listener_overrides.get(f"{_LISTENER_PREFIX}{listener.lower()}.{key}")
        if raw is None:
            return self[key]
        try:
            return BROKER_CONFIGS[key].parse(raw)
        except ValueError as exc:
            raise ConfigError(
                f"invalid value {raw!r} for listener {listener} {key!r}: {exc}"
            ) from None

    def is_default(self, key: str) -> bool:
        """True when ``key`` was not set in the file or flags (Kafka's DEFAULT_CONFIG source)."""
        return self._raw[key] == BROKER_CONFIGS[key].default

    def with_overrides(self, overrides: Mapping[str, str]) -> BrokerConfig:
        return BrokerConfig({**self._raw, **self._listener_overrides, **overrides})

    def topic_defaults(self) -> dict[str, str]:
        """Broker-level defaults for every topic-level key."""
        return {name: self._raw[d.name] for name, d in TOPIC_CONFIGS.items()}

    def effective_topic_config(self, overrides: Mapping[str, str]) -> dict[str, Any]:
        """Typed topic config: the topic's overrides over the broker defaults."""
        out: dict[str, Any] = {}
        for name, d in TOPIC_CONFIGS.items():
            raw = overrides.get(name, self._raw[d.name])
            out[name] = d.parse(raw)
        return out

    def items(self) -> Iterable[tuple[str, str]]:
        return self._raw.items()
