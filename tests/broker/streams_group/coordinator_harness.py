"""A streams-group coordinator on a manual clock and timer, with the real topic sizing and the
real sticky task assignor, and heartbeat helpers speaking its request type."""

from __future__ import annotations

from typing import Any

from streamrt.broker.group.timer import ManualTimer
from streamrt.broker.streams_group.coordinator import StreamsGroupCoordinator
from streamrt.broker.streams_group.member import Tasks
from streamrt.broker.streams_group.requests import StreamsHeartbeatAnswer, StreamsHeartbeatRequest
from streamrt.broker.streams_group.topology import StreamsTopology, Subtopology, TopicInfo
from streamrt.broker.streams_group_config import StreamsGroupConfig
from streamrt.clock import ManualClock
from streamrt.errors import ErrorCode

GROUP = "app"

#: a count with a repartition: subtopology 0 reads ``in`` and writes the repartition topic,
#: subtopology 1 reads it and keeps a count (a changelog, so it is stateful)
REPARTITION = "app-KSTREAM-REPARTITION-0000000003-repartition"
CHANGELOG = "app-KSTREAM-AGGREGATE-STATE-STORE-0000000004-changelog"


def count_topology(epoch: int = 1) -> StreamsTopology:
    return StreamsTopology(
        epoch,
        (
            Subtopology("0", source_topics=("in",), repartition_sink_topics=(REPARTITION,)),
            Subtopology(
                "1",
                repartition_source_topics=(TopicInfo(REPARTITION),),
                state_changelog_topics=(TopicInfo(CHANGELOG),),
            ),
        ),
    )


def stateless_topology(epoch: int = 1) -> StreamsTopology:
    return StreamsTopology(epoch, (Subtopology("0", source_topics=("in",)),))


def tasks(
    active: dict[str, set[int]] | None = None, standby: dict[str, set[int]] | None = None
) -> Tasks:
    return Tasks.of(
        {s: frozenset(p) for s, p in (active or {}).items()},
        {s: frozenset(p) for s, p in (standby or {}).items()},
        {},
    )


class Harness:
    def __init__(self, topics: dict[str, int] | None = None, **config: Any) -> None:
        self.clock = ManualClock(1_000_000)
        self.timer = ManualTimer(self.clock)
        self.topics: dict[str, int] = {"in": 4} if topics is None else dict(topics)
        self.coordinator = StreamsGroupCoordinator(
            StreamsGroupConfig(**config), self.timer, lambda: dict(self.topics)
        )

    def join(
        self,
        member_id: str,
        *,
        process: str | None = None,
        instance_id: str | None = None,
        topology: StreamsTopology | None = None,
        endpoint: tuple[str, int] | None = None,
        endpoint_epoch: int = 0,
    ) -> StreamsHeartbeatAnswer:
        return self.coordinator.heartbeat(
            StreamsHeartbeatRequest(
                group_id=GROUP,
                member_id=member_id,
                member_epoch=0,
                endpoint_information_epoch=endpoint_epoch,
                instance_id=instance_id,
                rebalance_timeout_ms=30_000,
                topology=topology or stateless_topology(),
                owned=Tasks(),
                process_id=process or f"p-{member_id}",
                user_endpoint=endpoint,
                client_tags=(),
            )
        )

    def beat(
        self,
        member_id: str,
        epoch: int,
        owned: Tasks | None = None,
        *,
        instance_id: str | None = None,
        shutdown: bool = False,
        endpoint_epoch: int = 0,
    ) -> StreamsHeartbeatAnswer:
        return self.coordinator.heartbeat(
            StreamsHeartbeatRequest(
                group_id=GROUP,
                member_id=member_id,
                member_epoch=epoch,
                endpoint_information_epoch=endpoint_epoch,
                instance_id=instance_id,
                owned=owned,
                shutdown_application=shutdown,
            )
        )

    def settle(self, *member_ids: str, rounds: int = 6) -> dict[str, Tasks]:
        """Heartbeat every member, reporting what it was last told, until nothing moves."""
        held = {m: self.group.members[m].assigned for m in member_ids}
        for _ in range(rounds):
            for m in member_ids:
                answer = self.beat(m, self.group.members[m].member_epoch, held[m])
                assert answer.error == ErrorCode.none, answer
                if answer.tasks is not None:
                    held[m] = answer.tasks
        return held

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        self.timer.poll()

    @property
    def group(self) -> Any:
        return self.coordinator.groups[GROUP]


def actives(t: Tasks | None, sub: str = "0") -> set[int]:
    assert t is not None
    return set(t.active.get(sub, frozenset()))
