"""The broker configs of KIP-1071 streams groups, with Kafka 4.3's names and defaults.

The switch is ``streams`` in ``group.coordinator.rebalance.protocols``
(``consumer_group_config.py``); these tune the groups it serves. Kafka's group-level
override of the standby count (the group config ``streams.num.standby.replicas``, bounded by
``group.streams.max.standby.replicas``) is not served: there is no GROUP config resource here,
so the broker's count applies to every group.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from streamrt.broker.config_types import MAX_INT, ConfigDef, int_range

__all__ = ("STREAMS_GROUP_CONFIGS", "StreamsGroupConfig")

STREAMS_GROUP_CONFIGS: tuple[ConfigDef, ...] = (
    ConfigDef(
        "group.streams.heartbeat.interval.ms",
        int_range(1, MAX_INT),
        "5000",
        "Heartbeat interval given to streams-group members.",
    ),
    ConfigDef(
        "group.streams.session.timeout.ms",
        int_range(1, MAX_INT),
        "45000",
        "A streams-group member without a heartbeat for this long is fenced (a static member "
        "that left with epoch -2 too, and its tasks are then reassigned).",
    ),
    ConfigDef(
        "group.streams.max.size",
        int_range(1, MAX_INT),
        str(MAX_INT),
        "Members per streams group; one more joining gets GROUP_MAX_SIZE_REACHED.",
    ),
    ConfigDef(
        "group.streams.num.standby.replicas",
        int_range(0, MAX_INT),
        "0",
        "Standby tasks per stateful task (on other processes than the active one).",
    ),
    ConfigDef(
        "group.streams.max.standby.replicas",
        int_range(0, MAX_INT),
        "2",
        "Kafka's upper bound of the group config streams.num.standby.replicas; accepted for "
        "compatibility, unused: group configs are not served here, the broker's "
        "group.streams.num.standby.replicas applies to every group.",
    ),
)


@dataclasses.dataclass(frozen=True, slots=True)
class StreamsGroupConfig:
    enabled: bool = True
    heartbeat_interval_ms: int = 5000
    session_timeout_ms: int = 45000
    max_size: int = MAX_INT
    num_standby_replicas: int = 0
    max_standby_replicas: int = 2
    #: Kafka's ``acceptable.recovery.lag`` and task offset interval, sent back as Kafka does
    acceptable_recovery_lag: int = 10000
    task_offset_interval_ms: int = 60000

    @classmethod
    def from_broker(cls, config: Any) -> StreamsGroupConfig:
        return cls(
            enabled="streams" in config["group.coordinator.rebalance.protocols"].split(","),
            heartbeat_interval_ms=config["group.streams.heartbeat.interval.ms"],
            session_timeout_ms=config["group.streams.session.timeout.ms"],
            max_size=config["group.streams.max.size"],
            num_standby_replicas=config["group.streams.num.standby.replicas"],
            max_standby_replicas=config["group.streams.max.standby.replicas"],
        )
