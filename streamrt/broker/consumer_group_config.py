"""The broker configs of KIP-848 consumer groups, with Kafka's names and defaults."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from streamrt.broker.config_types import MAX_INT, ConfigDef, int_range

__all__ = (
    "CONSUMER_GROUP_CONFIGS",
    "ConsumerGroupConfig",
    "migration_policy",
    "rebalance_protocols",
)

PROTOCOLS = ("classic", "consumer", "streams")
ASSIGNORS = ("uniform", "range")
#: Kafka's ``ConsumerGroupMigrationPolicy`` values
MIGRATION_POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")


def rebalance_protocols(value: str) -> str:
    """Kafka's ``group.coordinator.rebalance.protocols``: a list that must contain ``classic``;
    ``consumer`` turns KIP-848 on, ``streams`` KIP-1071 (``streams_group_config.py``)."""
    parts = [p.strip() for p in value.split(",") if p.strip()]
    unknown = [p for p in parts if p not in PROTOCOLS]
    if unknown:
        raise ValueError(f"unsupported protocols {unknown}; expected a list of {PROTOCOLS}")
    if "classic" not in parts:
        raise ValueError("the classic protocol cannot be disabled")
    return ",".join(dict.fromkeys(parts))


def assignor_names(value: str) -> str:
    """Kafka's ``group.consumer.assignors`` by short name; the first is the default."""
    parts = [p.strip() for p in value.split(",") if p.strip()]
    if not parts or any(p not in ASSIGNORS for p in parts):
        raise ValueError(f"expected a non-empty list of {ASSIGNORS}")
    return ",".join(dict.fromkeys(parts))


def migration_policy(value: str) -> str:
    """Kafka's ``group.consumer.migration.policy`` (case-insensitive, as Kafka parses it)."""
    policy = value.strip().lower()
    if policy not in MIGRATION_POLICIES:
        raise ValueError(f"expected one of {MIGRATION_POLICIES}")
    return policy


_protocols: Callable[[str], Any] = rebalance_protocols
_protocols.kind = "LIST"  # type: ignore[attr-defined]
_assignors: Callable[[str], Any] = assignor_names
_assignors.kind = "LIST"  # type: ignore[attr-defined]

CONSUMER_GROUP_CONFIGS: tuple[ConfigDef, ...] = (
    ConfigDef(
        "group.coordinator.rebalance.protocols",
        _protocols,
        "classic,consumer,streams",
        "Group protocols served; without consumer, ConsumerGroupHeartbeat answers "
        "UNSUPPORTED_VERSION (KIP-848 off); without streams, StreamsGroupHeartbeat does "
        "(KIP-1071 off).",
    ),
    ConfigDef(
        "group.consumer.heartbeat.interval.ms",
        int_range(1, MAX_INT),
        "5000",
        "Heartbeat interval given to consumer-protocol members.",
    ),
    ConfigDef(
        "group.consumer.session.timeout.ms",
        int_range(1, MAX_INT),
        "45000",
        "A consumer-protocol member without a heartbeat for this long is fenced.",
    ),
    ConfigDef(
        "group.consumer.max.size",
        int_range(1, MAX_INT),
        str(MAX_INT),
        "Members per consumer group; one more joining gets GROUP_MAX_SIZE_REACHED.",
    ),
    ConfigDef(
        "group.consumer.assignors",
        _assignors,
        "uniform,range",
        "Server assignors; the first is the default (uniform and range are available).",
    ),
    ConfigDef(
        "group.consumer.migration.policy",
        migration_policy,
        "bidirectional",
        "Online conversion of a group with members between the classic and the consumer "
        "protocol: upgrade (a consumer-protocol member joining a classic group), downgrade "
        "(the last consumer-protocol member leaving classic members behind), bidirectional "
        "or disabled. Empty groups are converted whatever the policy.",
    ),
)


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerGroupConfig:
    enabled: bool = True
    heartbeat_interval_ms: int = 5000
    session_timeout_ms: int = 45000
    assignors: tuple[str, ...] = ("uniform", "range")
    max_size: int = MAX_INT
    migration_policy: str = "bidirectional"
    #: ``group.max.size``: a downgrade makes a classic group, which must fit it
    classic_max_size: int = MAX_INT

    @property
    def upgrade_enabled(self) -> bool:
        return self.migration_policy in ("upgrade", "bidirectional")

    @property
    def downgrade_enabled(self) -> bool:
        return self.migration_policy in ("downgrade", "bidirectional")

    @classmethod
    def from_broker(cls, config: Any) -> ConsumerGroupConfig:
        names = tuple(config["group.consumer.assignors"].split(","))
        return cls(
            enabled="consumer" in config["group.coordinator.rebalance.protocols"].split(","),
            heartbeat_interval_ms=config["group.consumer.heartbeat.interval.ms"],
            session_timeout_ms=config["group.consumer.session.timeout.ms"],
            assignors=names,
            max_size=config["group.consumer.max.size"],
            migration_policy=config["group.consumer.migration.policy"],
            classic_max_size=config["group.max.size"],
        )
