"""StreamsConfig: the runtime's settings under Kafka Streams' names.

Loaded from code, a file (``key=value`` properties or JSON), the environment
(``STREAMRT_APPLICATION_ID`` for ``application.id``) and the CLI, later sources winning.
Every value is checked once, at start, and a bad one is refused with a message naming its key.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamrt.errors import ConfigError
from streamrt.state.store import IN_MEMORY, ROCKS_DB, StoreKind

__all__ = ("ENV_PREFIX", "StreamsConfig", "load_config_file", "read_env")

ENV_PREFIX = "STREAMRT_"

MIN_PROBING_REBALANCE_INTERVAL_MS = 60_000
_GUARANTEES = ("at_least_once",)
_DESER_HANDLERS = ("log_and_continue", "log_and_fail")
_HOST_PORT = re.compile(r"^[^:\s]+:\d{1,5}$")
_APP_ID = re.compile(r"^[A-Za-z0-9._-]+$")


@dataclass(frozen=True, slots=True)
class StreamsConfig:
    """Validated runtime settings. Field names are Kafka's with ``.`` → ``_``."""

    application_id: str
    bootstrap_servers: str = "localhost:9092"
    group_instance_id: str | None = None
    num_stream_threads: int = 1
    state_dir: str = "state"
    commit_interval_ms: int = 30_000
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 300_000
    application_server: str | None = None
    processing_guarantee: str = "at_least_once"
    default_deserialization_exception_handler: str = "log_and_fail"
    default_dsl_store: StoreKind = ROCKS_DB
    # Standby replicas and warm-ups (KIP-441), with Kafka Streams' defaults and minimums.
    num_standby_replicas: int = 0
    acceptable_recovery_lag: int = 10_000
    max_warmup_replicas: int = 2
    probing_rebalance_interval_ms: int = 600_000
    extra: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> StreamsConfig:
        """Build from Kafka-style keys (``application.id``), refusing unknown or bad values."""
        known = {f.replace("_", "."): f for f in cls.__dataclass_fields__ if f != "extra"}
        kwargs: dict[str, Any] = {}
        extra: dict[str, str] = {}
        for key, raw in values.items():
            if raw is None:
                continue
            name = known.get(key)
            if name is None:
                if key.startswith(("consumer.", "producer.")):
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
        config = cls(**kwargs, extra=extra)
        config.validate()
        return config

    def validate(self) -> None:
        if not _APP_ID.match(self.application_id):
            raise ConfigError(f"application.id {self.application_id!r} must match [A-Za-z0-9._-]+")
        for server in self.bootstrap_servers.split(","):
            if not _HOST_PORT.match(server.strip()):
                raise ConfigError(f"bootstrap.servers entry {server!r} is not host:port")
        if self.group_instance_id is not None and not _APP_ID.match(self.group_instance_id):
            raise ConfigError(
                f"group.instance.id {self.group_instance_id!r} must match [A-Za-z0-9._-]+"
            )
        if self.num_stream_threads < 1:
            raise ConfigError("num.stream.threads must be at least 1")
        if self.commit_interval_ms < 1:
            raise ConfigError("commit.interval.ms must be positive")
        if self.session_timeout_ms < 1:
            raise ConfigError("session.timeout.ms must be positive")
        if not 0 < self.heartbeat_interval_ms < self.session_timeout_ms:
            raise ConfigError("heartbeat.interval.ms must be positive and below session.timeout.ms")
        if self.application_server is not None and not _HOST_PORT.match(self.application_server):
            raise ConfigError(f"application.server {self.application_server!r} is not host:port")
        if self.processing_guarantee not in _GUARANTEES:
            raise ConfigError(
                f"processing.guarantee {self.processing_guarantee!r} is not supported; "
                f"only {', '.join(_GUARANTEES)}"
            )
        if self.default_deserialization_exception_handler not in _DESER_HANDLERS:
            raise ConfigError(
                "default.deserialization.exception.handler must be one of "
                f"{', '.join(_DESER_HANDLERS)}"
            )

        if self.num_standby_replicas < 0:
            raise ConfigError("num.standby.replicas must be at least 0")
        if self.acceptable_recovery_lag < 0:
            raise ConfigError("acceptable.recovery.lag must be at least 0")
        if self.max_warmup_replicas < 1:
            raise ConfigError("max.warmup.replicas must be at least 1")
        if self.probing_rebalance_interval_ms < MIN_PROBING_REBALANCE_INTERVAL_MS:
            raise ConfigError(
                "probing.rebalance.interval.ms must be at least "
                f"{MIN_PROBING_REBALANCE_INTERVAL_MS} (one minute, as Kafka Streams)"
            )

    @property
    def app_state_dir(self) -> Path:
        """``<state.dir>/<application.id>``: where this application's task directories live."""
        return Path(self.state_dir) / self.application_id


def _coerce(key: str, name: str, raw: Any) -> Any:
    annotation = str(StreamsConfig.__dataclass_fields__[name].type)
    if annotation.startswith("int"):
        try:
            return int(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"{key} must be an integer, got {raw!r}") from None
    if not isinstance(raw, str):
        raise ConfigError(f"{key} must be a string, got {raw!r}")
    return raw


def read_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``STREAMRT_APPLICATION_ID=x`` → ``{"application.id": "x"}``."""
    env = os.environ if environ is None else environ
    return {
        k[len(ENV_PREFIX) :].lower().replace("_", "."): v
        for k, v in env.items()
        if k.startswith(ENV_PREFIX)
    }


def load_config_file(path: str | Path) -> dict[str, str]:
    """A JSON object, or Java-style properties (``key=value``, ``#`` comments)."""
    text = Path(path).read_text(encoding="utf-8")
    if text.lstrip().startswith("{"):
        data = json.loads(text)
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
