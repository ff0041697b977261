"""The member's settings, in Kafka's dotted names, and the errors it raises."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Literal

from streamrt.errors import ErrorCode, KafkaError, StreamrtError

__all__ = (
    "CommitFailedError",
    "FencedInstanceError",
    "MemberConfig",
    "MembershipError",
    "RebalanceProtocol",
)

RebalanceProtocol = Literal["eager", "cooperative"]

_SECURITY_PREFIXES = ("security.", "ssl.", "sasl.")


class MembershipError(StreamrtError):
    """The member cannot stay in the group (a fatal coordinator answer or bad settings)."""


class FencedInstanceError(MembershipError, KafkaError):
    """Another member took this ``group.instance.id`` (KIP-345): this one must stop."""

    def __init__(self, instance_id: str | None, what: str) -> None:
        KafkaError.__init__(
            self,
            ErrorCode.fenced_instance_id,
            f"{what}: FENCED_INSTANCE_ID: another member joined with group.instance.id "
            f"{instance_id!r}; this member is fenced and stops",
        )


class CommitFailedError(KafkaError):
    """An offset commit the group refused (stale generation, unknown member, rebalance)."""


@dataclasses.dataclass(frozen=True, slots=True)
class MemberConfig:
    """Kafka consumer settings that concern group membership (``from_config`` reads them)."""

    bootstrap_servers: str
    group_id: str
    group_instance_id: str | None = None
    session_timeout_ms: int = 45_000
    rebalance_timeout_ms: int = 300_000  # Kafka sends max.poll.interval.ms as this
    heartbeat_interval_ms: int = 3_000
    rebalance_protocol: RebalanceProtocol = "eager"
    client_id: str = "streamrt-member"
    client_rack: str | None = None
    request_timeout_ms: int = 30_000
    retry_backoff_ms: int = 100
    metadata_max_age_ms: int = 300_000  # the leader re-reads partition counts this often
    security: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    _KEYS = {  # dotted name → field
        "bootstrap.servers": "bootstrap_servers",
        "group.id": "group_id",
        "group.instance.id": "group_instance_id",
        "session.timeout.ms": "session_timeout_ms",
        "rebalance.timeout.ms": "rebalance_timeout_ms",
        "max.poll.interval.ms": "rebalance_timeout_ms",
        "heartbeat.interval.ms": "heartbeat_interval_ms",
        "rebalance.protocol": "rebalance_protocol",
        "client.id": "client_id",
        "client.rack": "client_rack",
        "request.timeout.ms": "request_timeout_ms",
        "retry.backoff.ms": "retry_backoff_ms",
        "metadata.max.age.ms": "metadata_max_age_ms",
    }

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> MemberConfig:
        """Settings by Kafka's names; ``security.*``/``ssl.*``/``sasl.*`` go to the connection."""
        values: dict[str, Any] = {}
        security: dict[str, Any] = {}
        for key, value in config.items():
            if key.startswith(_SECURITY_PREFIXES):
                security[key] = value
            elif key in cls._KEYS:
                field = cls._KEYS[key]
                values[field] = int(value) if field.endswith("_ms") else value
            else:
                raise MembershipError(f"unknown group member setting {key!r}")
        for required in ("bootstrap.servers", "group.id"):
            if cls._KEYS[required] not in values:
                raise MembershipError(f"{required} is required")
        return cls(**values, security=security)

    def __post_init__(self) -> None:
        if not self.group_id:
            raise MembershipError("group.id must not be empty")
        if self.rebalance_protocol not in ("eager", "cooperative"):
            raise MembershipError(
                f"rebalance.protocol must be 'eager' or 'cooperative', "
                f"not {self.rebalance_protocol!r}"
            )
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise MembershipError(
                f"heartbeat.interval.ms ({self.heartbeat_interval_ms}) must be lower than "
                f"session.timeout.ms ({self.session_timeout_ms})"
            )

    @property
    def static(self) -> bool:
        return self.group_instance_id is not None
