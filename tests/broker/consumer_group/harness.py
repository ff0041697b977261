"""A consumer-group coordinator on a manual clock and timer, and a heartbeat helper."""

from __future__ import annotations

from typing import Any

from streamrt.broker.consumer_group.coordinator import ConsumerGroupCoordinator
from streamrt.broker.consumer_group.requests import HeartbeatAnswer, HeartbeatRequest
from streamrt.broker.consumer_group_config import ConsumerGroupConfig
from streamrt.broker.group.timer import ManualTimer
from streamrt.clock import ManualClock
from streamrt.errors import ErrorCode

GROUP = "g"


class Harness:
    def __init__(self, topics: dict[str, int] | None = None, **config: Any) -> None:
        self.clock = ManualClock(1_000_000)
        self.timer = ManualTimer(self.clock)
        self.topics: dict[str, int] = dict(topics or {"t": 6})
        self.config = ConsumerGroupConfig(**config)
        self.coordinator = ConsumerGroupCoordinator(
            self.config, self.clock, self.timer, lambda: dict(self.topics)
        )

    def join(
        self,
        member_id: str,
        topics: tuple[str, ...] = ("t",),
        *,
        instance_id: str | None = None,
        regex: str | None = None,
        assignor: str | None = None,
        rebalance_timeout_ms: int = 30_000,
        classic_active: bool = False,
    ) -> HeartbeatAnswer:
        return self.coordinator.heartbeat(
            HeartbeatRequest(
                group_id=GROUP,
                member_id=member_id,
                member_epoch=0,
                instance_id=instance_id,
                rebalance_timeout_ms=rebalance_timeout_ms,
                subscribed_topic_names=None if regex else topics,
                subscribed_topic_regex=regex,
                server_assignor=assignor,
                owned={},
            ),
            classic_active,
        )

    def beat(
        self,
        member_id: str,
        epoch: int,
        owned: dict[str, set[int]] | None = None,
        *,
        instance_id: str | None = None,
        topics: tuple[str, ...] | None = None,
    ) -> HeartbeatAnswer:
        return self.coordinator.heartbeat(
            HeartbeatRequest(
                group_id=GROUP,
                member_id=member_id,
                member_epoch=epoch,
                instance_id=instance_id,
                subscribed_topic_names=topics,
                owned=None if owned is None else {t: frozenset(p) for t, p in owned.items()},
            )
        )

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        self.timer.poll()

    @property
    def group(self) -> Any:
        return self.coordinator.groups[GROUP]


def parts(answer: HeartbeatAnswer, topic: str = "t") -> set[int]:
    assert answer.error == ErrorCode.none, answer
    assert answer.assignment is not None, answer
    return set(answer.assignment.get(topic, frozenset()))
