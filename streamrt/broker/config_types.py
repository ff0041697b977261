"""The value types of broker and topic configs: parsers tagged with Kafka's
``ConfigDef.Type`` names (what DescribeConfigs reports), and :class:`ConfigDef`, one key."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

__all__ = (
    "MAX_INT",
    "MAX_LONG",
    "ConfigDef",
    "boolean",
    "choice",
    "cleanup_policy",
    "false_only",
    "int_range",
    "ratio",
)

MAX_LONG = 2**63 - 1
MAX_INT = 2**31 - 1


def _kind(kind: str) -> Callable[[Callable[[str], Any]], Callable[[str], Any]]:
    """Tag a parser with Kafka's ``ConfigDef.Type`` name (DescribeConfigs' ``config_type``)."""

    def tag(parse: Callable[[str], Any]) -> Callable[[str], Any]:
        parse.kind = kind  # type: ignore[attr-defined]
        return parse

    return tag


@_kind("BOOLEAN")
def boolean(value: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "false"):
        return v == "true"
    raise ValueError("expected true or false")


def choice(*allowed: str) -> Callable[[str], str]:
    def parse(value: str) -> str:
        v = value.strip()
        if v not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}")
        return v

    return parse


@_kind("BOOLEAN")
def false_only(value: str) -> bool:
    if boolean(value):
        raise ValueError("tiered storage is not available on this broker")
    return False


@_kind("LIST")
def cleanup_policy(value: str) -> str:
    """Empty is valid, as in Kafka: neither deletion nor compaction (infinite retention)."""
    parts = sorted({p.strip() for p in value.split(",") if p.strip()})
    if any(p not in ("compact", "delete") for p in parts):
        raise ValueError("expected delete, compact, compact,delete or empty")
    return ",".join(parts)


def int_range(lo: int, hi: int = MAX_LONG) -> Callable[[str], int]:
    def parse(value: str) -> int:
        n = int(value.strip())
        if not lo <= n <= hi:
            raise ValueError(f"must be between {lo} and {hi}")
        return n

    return _kind("INT" if hi <= MAX_INT else "LONG")(parse)


@_kind("DOUBLE")
def ratio(value: str) -> float:
    f = float(value)
    if not 0.0 <= f <= 1.0:
        raise ValueError("must be between 0 and 1")
    return f


@dataclasses.dataclass(frozen=True, slots=True)
class ConfigDef:
    """One config key: parser (str → typed value, raising ValueError), default, topic name."""

    name: str
    parse: Callable[[str], Any]
    default: str
    doc: str
    topic_name: str | None = None
    sensitive: bool = False  # a secret: DescribeConfigs returns no value, as for Kafka PASSWORD

    @property
    def kind(self) -> str:
        """Kafka's type name: BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD."""
        return str(getattr(self.parse, "kind", "STRING"))
