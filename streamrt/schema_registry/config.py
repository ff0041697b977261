"""Schema Registry serde settings under Kafka's names, translated for confluent-kafka.

A Java Kafka Streams app configures its registry serdes with ``schema.registry.url``,
``basic.auth.*``, ``auto.register.schemas``, ``use.latest.version`` and the subject name
strategies; the same names work here, so a team's existing config can be pasted as is.
:func:`registry_settings` splits them into the client's and the (de)serializers' settings and
refuses what it does not know, naming the key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka.schema_registry import (
    record_subject_name_strategy,
    topic_record_subject_name_strategy,
    topic_subject_name_strategy,
)

from streamrt.errors import ConfigError

__all__ = ("RegistrySettings", "registry_settings")

SubjectNameStrategy = Callable[[Any, str | None], str | None]

_STRATEGIES: dict[str, SubjectNameStrategy] = {
    "topicnamestrategy": topic_subject_name_strategy,
    "recordnamestrategy": record_subject_name_strategy,
    "topicrecordnamestrategy": topic_record_subject_name_strategy,
}
_BOOLEANS = ("auto.register.schemas", "use.latest.version", "normalize.schemas")
# confluent-kafka's SchemaRegistryClient settings, given with the ``schema.registry.`` prefix
_CLIENT_KEYS = frozenset(
    {
        "ssl.ca.location",
        "ssl.certificate.location",
        "ssl.key.location",
        "ssl.key.password",
        "timeout",
        "max.retries",
        "retries.wait.ms",
        "retries.max.wait.ms",
        "cache.capacity",
        "cache.latest.ttl.sec",
        "proxy",
    }
)
_PREFIX = "schema.registry."


@dataclass(frozen=True, slots=True)
class RegistrySettings:
    """What one registry serde needs: the client's settings and its serializer options."""

    client: Mapping[str, Any]
    options: Mapping[str, bool] = field(default_factory=dict)
    key_strategy: SubjectNameStrategy = topic_subject_name_strategy
    value_strategy: SubjectNameStrategy = topic_subject_name_strategy

    @property
    def url(self) -> str:
        return str(self.client["url"])

    def serializer_conf(self, is_key: bool) -> dict[str, Any]:
        strategy = self.key_strategy if is_key else self.value_strategy
        return {**self.options, "subject.name.strategy": strategy}

    def deserializer_conf(self, is_key: bool) -> dict[str, Any]:
        strategy = self.key_strategy if is_key else self.value_strategy
        conf: dict[str, Any] = {"subject.name.strategy": strategy}
        if "use.latest.version" in self.options:
            conf["use.latest.version"] = self.options["use.latest.version"]
        return conf

    def cache_key(self) -> tuple[tuple[str, str], ...]:
        """Serdes with equal client settings share one client (and its schema-id cache)."""
        return tuple(sorted((k, str(v)) for k, v in self.client.items()))


def _bool(key: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise ConfigError(f"{key} must be true or false, got {value!r}")


def _strategy(key: str, value: object) -> SubjectNameStrategy:
    if callable(value):
        return value  # type: ignore[return-value]
    name = str(value).strip().rsplit(".", 1)[-1].lower()
    try:
        return _STRATEGIES[name]
    except KeyError:
        raise ConfigError(
            f"{key} must be TopicNameStrategy, RecordNameStrategy or TopicRecordNameStrategy "
            f"(or a callable), got {value!r}"
        ) from None


def _auth(config: Mapping[str, Any]) -> dict[str, str]:
    """``basic.auth.credentials.source`` USER_INFO (``basic.auth.user.info``) or URL."""
    source = str(config.get("basic.auth.credentials.source", "USER_INFO")).upper()
    info = config.get("basic.auth.user.info", config.get(_PREFIX + "basic.auth.user.info"))
    if source == "URL":
        return {}  # the user info is in schema.registry.url (http://user:pass@host)
    if source != "USER_INFO":
        raise ConfigError(f"basic.auth.credentials.source must be USER_INFO or URL, got {source!r}")
    return {} if info is None else {"basic.auth.user.info": str(info)}


_KNOWN = frozenset(
    {
        "schema.registry.url",
        "basic.auth.credentials.source",
        "basic.auth.user.info",
        _PREFIX + "basic.auth.user.info",
        "subject.name.strategy",
        "key.subject.name.strategy",
        "value.subject.name.strategy",
        *_BOOLEANS,
    }
)


def registry_settings(config: Mapping[str, Any]) -> RegistrySettings:
    """Kafka's registry serde names → :class:`RegistrySettings`; unknown keys are refused."""
    url = config.get("schema.registry.url")
    if not url:
        raise ConfigError("a registry serde needs schema.registry.url")
    client: dict[str, Any] = {"url": str(url), **_auth(config)}
    for key, value in config.items():
        if key.startswith(_PREFIX) and key[len(_PREFIX) :] in _CLIENT_KEYS:
            client[key[len(_PREFIX) :]] = value
        elif key not in _KNOWN:
            raise ConfigError(
                f"unknown registry serde setting {key!r}; known: {sorted(_KNOWN)} and "
                f"{_PREFIX}{{{', '.join(sorted(_CLIENT_KEYS))}}}"
            )
    options = {key: _bool(key, config[key]) for key in _BOOLEANS if key in config}
    default = config.get("subject.name.strategy", "TopicNameStrategy")
    return RegistrySettings(
        client=client,
        options=options,
        key_strategy=_strategy(
            "key.subject.name.strategy", config.get("key.subject.name.strategy", default)
        ),
        value_strategy=_strategy(
            "value.subject.name.strategy", config.get("value.subject.name.strategy", default)
        ),
    )
