"""The keyword arguments of each stream thread's Kafka clients, from Kafka's client config names.

Kafka Streams passes every client setting to its clients: bare names (``linger.ms``,
``security.protocol``) reach all of them, ``producer.``/``consumer.``/``main.consumer.``/
``restore.consumer.``/``admin.`` prefixes override them for one client. Security (TLS, SASL)
is mapped by :class:`streamrt.client_config.ClientConfig`; this module adds the tuning settings
aiokafka understands, the runtime's defaults (chosen by measurement, docs/benchmarks.md) and the
settings the runtime must own (group id, offset commits, the assignor), which a user value
cannot replace.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from streamrt.admin.client import AdminClient
from streamrt.client_config import ClientConfig
from streamrt.errors import ConfigError

__all__ = (
    "ADMIN_KEYS",
    "CONSUMER_KEYS",
    "PRODUCER_DEFAULTS",
    "PRODUCER_KEYS",
    "RESTORE_CONSUMER_DEFAULTS",
    "admin_client",
    "consumer_kwargs",
    "is_client_key",
    "producer_kwargs",
    "validate",
)

logger = logging.getLogger(__name__)


def _int(key: str, raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{key} must be an integer, got {raw!r}") from None


def _bool(key: str, raw: str) -> bool:
    if raw.strip().lower() in ("true", "1", "yes"):
        return True
    if raw.strip().lower() in ("false", "0", "no"):
        return False
    raise ConfigError(f"{key} must be true or false, got {raw!r}")


def _acks(key: str, raw: str) -> int | str:
    value = raw.strip().lower()
    if value in ("all", "-1"):
        return "all"
    if value in ("0", "1"):
        return int(value)
    raise ConfigError(f"{key} must be all, -1, 0 or 1, got {raw!r}")


def _compression(key: str, raw: str) -> str | None:
    value = raw.strip().lower()
    if value == "none":
        return None
    if value not in ("gzip", "snappy", "lz4", "zstd"):
        raise ConfigError(f"{key} must be none, gzip, snappy, lz4 or zstd, got {raw!r}")
    return value


def _choice(*allowed: str) -> Callable[[str, str], str]:
    def parse(key: str, raw: str) -> str:
        if raw not in allowed:
            raise ConfigError(f"{key} must be one of {', '.join(allowed)}, got {raw!r}")
        return raw

    return parse


_Parse = Callable[[str, str], Any]
_COMMON: dict[str, tuple[str, _Parse]] = {
    "request.timeout.ms": ("request_timeout_ms", _int),
    "retry.backoff.ms": ("retry_backoff_ms", _int),
    "metadata.max.age.ms": ("metadata_max_age_ms", _int),
    "connections.max.idle.ms": ("connections_max_idle_ms", _int),
}
# Kafka producer name → (aiokafka kwarg, parser)
PRODUCER_KEYS: dict[str, tuple[str, _Parse]] = {
    **_COMMON,
    "acks": ("acks", _acks),
    "linger.ms": ("linger_ms", _int),
    "batch.size": ("max_batch_size", _int),
    "max.request.size": ("max_request_size", _int),
    "compression.type": ("compression_type", _compression),
    "enable.idempotence": ("enable_idempotence", _bool),
}
CONSUMER_KEYS: dict[str, tuple[str, _Parse]] = {
    **_COMMON,
    "max.poll.records": ("max_poll_records", _int),
    "fetch.max.bytes": ("fetch_max_bytes", _int),
    "fetch.min.bytes": ("fetch_min_bytes", _int),
    "fetch.max.wait.ms": ("fetch_max_wait_ms", _int),
    "max.partition.fetch.bytes": ("max_partition_fetch_bytes", _int),
    "check.crcs": ("check_crcs", _bool),
    "isolation.level": ("isolation_level", _choice("read_uncommitted", "read_committed")),
    "auto.offset.reset": ("auto_offset_reset", _choice("earliest", "latest", "none")),
    "client.rack": ("client_rack", lambda _key, raw: raw),
}
# streamrt's admin client reads these two (it asks for metadata per call and keeps its
# connections until closed, so the other common names have nothing to tune there)
ADMIN_KEYS: dict[str, tuple[str, _Parse]] = {
    "request.timeout.ms": ("request_timeout_ms", _int),
    "retry.backoff.ms": ("retry_backoff_ms", _int),
}
# Handled by ClientConfig (security) or by StreamsConfig fields (group timing).
_SECURITY_PREFIXES = ("ssl.", "sasl.")
_SECURITY_KEYS = ("security.protocol", "client.id", "bootstrap.servers")

# Measured in docs/benchmarks.md ("Throughput work"): aiokafka's 16 KB default batch carries
# ~6 records of a 2.3 KB profile per produce request; 1 MiB batches cut the producer's share
# of the thread by more than half. linger.ms bounds how long a partly filled batch waits.
PRODUCER_DEFAULTS: dict[str, Any] = {
    "acks": "all",
    "linger_ms": 10,
    "max_batch_size": 1024 * 1024,
    "max_request_size": 8 * 1024 * 1024,
}
# The restore consumer reads whole changelogs: many records per poll, and Kafka's 1 MiB per
# partition per fetch. Not 16 MiB: a fetch is handed over only once whole, so the restoring
# thread sat idle ~0.2-0.3 s for the first 16 MiB of each partition and then wrote while
# librdkafka fetched little (fetch and write did not overlap); with 1 MiB the first records come
# in ~5 ms and a bare librdkafka fetch of the changelog is itself faster (docs/bench/history.md,
# "Full restore: the fetch's size").
RESTORE_CONSUMER_DEFAULTS: dict[str, Any] = {
    "max_partition_fetch_bytes": 1024 * 1024,
    "fetch_max_bytes": 64 * 1024 * 1024,
    "max_poll_records": 50_000,
    # Every partition is sought explicitly; should a reset happen anyway (a fetch out of range),
    # the changelog's start is the safe place: re-applying it gives the same state, while
    # aiokafka's default ``latest`` would skip it and leave the store incomplete.
    "auto_offset_reset": "earliest",
}
MAIN_CONSUMER_DEFAULTS: dict[str, Any] = {"max_poll_records": 2000, "auto_offset_reset": "earliest"}

# Set by the runtime; a user value for these is refused (it would break the commit protocol).
_OWNED = {
    "producer": ("transactional.id",),
    "consumer": ("enable.auto.commit", "group.id", "group.instance.id"),
}


def is_client_key(key: str) -> bool:
    """A bare Kafka client setting StreamsConfig accepts and passes to the clients."""
    return (
        key in PRODUCER_KEYS
        or key in CONSUMER_KEYS
        or key in _OWNED["producer"]
        or key in _OWNED["consumer"]
        or key in _SECURITY_KEYS
        or key.startswith(_SECURITY_PREFIXES)
    )


def _tuning(
    cfg: ClientConfig, role: str, table: Mapping[str, tuple[str, _Parse]], owned: tuple[str, ...]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, raw in cfg.for_role(role).items():
        if key in owned:
            raise ConfigError(f"{key} is set by the runtime and cannot be configured")
        entry = table.get(key)
        if entry is not None:
            kwarg, parse = entry
            out[kwarg] = parse(key, raw)
        elif key not in _SECURITY_KEYS and not key.startswith(_SECURITY_PREFIXES):
            # Kafka logs "supplied but isn't a known config" for these, and goes on.
            logger.debug("client setting not used by %s: %s", role, key)
    return out


def validate(cfg: ClientConfig) -> None:
    """Raise ConfigError now for a client setting a thread would refuse when it starts."""
    _tuning(cfg, "producer", PRODUCER_KEYS, _OWNED["producer"])
    for role in ("main.consumer", "restore.consumer", "global.consumer"):
        _tuning(cfg, role, CONSUMER_KEYS, _OWNED["consumer"])
    _tuning(cfg, "admin", ADMIN_KEYS, ())
    cfg.validate(("main.consumer", "restore.consumer", "global.consumer", "producer", "admin"))


def producer_kwargs(cfg: ClientConfig, client_id: str) -> dict[str, Any]:
    """AIOKafkaProducer kwargs: runtime defaults < ``producer.*``/bare settings < security."""
    out: dict[str, Any] = dict(PRODUCER_DEFAULTS)
    out.update(_tuning(cfg, "producer", PRODUCER_KEYS, _OWNED["producer"]))
    out["max_request_size"] = max(out["max_request_size"], out["max_batch_size"] + 1024)
    out.update(cfg.aiokafka_producer_kwargs())
    out["client_id"] = client_id
    return out


def consumer_kwargs(cfg: ClientConfig, role: str, client_id: str) -> dict[str, Any]:
    """AIOKafkaConsumer kwargs for ``main.consumer``, ``restore.consumer`` or
    ``global.consumer`` (which reads whole topics as a restore does: the restore defaults)."""
    whole_topics = role in ("restore.consumer", "global.consumer")
    defaults = RESTORE_CONSUMER_DEFAULTS if whole_topics else MAIN_CONSUMER_DEFAULTS
    out: dict[str, Any] = dict(defaults)
    out.update(_tuning(cfg, role, CONSUMER_KEYS, _OWNED["consumer"]))
    out.update(cfg.aiokafka_consumer_kwargs(role))
    out["client_id"] = client_id
    out["enable_auto_commit"] = False
    return out


def admin_client(
    cfg: ClientConfig, client_id: str, bootstrap_servers: str | None = None
) -> AdminClient:
    """streamrt's admin client (internal topics, source topic checks, repartition purges) with
    the ``admin.``/bare settings and the admin role's security, as Kafka Streams' admin client."""
    tuning = _tuning(cfg, "admin", ADMIN_KEYS, ())
    bootstrap = bootstrap_servers or cfg.for_role("admin").get("bootstrap.servers")
    if not bootstrap:
        raise ConfigError("bootstrap.servers is not set")
    return AdminClient(
        bootstrap,
        client_id=client_id,
        request_timeout=tuning.get("request_timeout_ms", 30_000) / 1000,
        retry_backoff=tuning.get("retry_backoff_ms", 100) / 1000,
        config=cfg,
    )
