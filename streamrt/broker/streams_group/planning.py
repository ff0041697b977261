"""The coordinator's view of the topic checks and the task assignor.

``configure`` sizes a topology against the broker's topics (``configured_topology``) and
``assign`` runs Kafka's sticky task assignor (``task_assignor``); both are pure. This module
only converts between their types and the coordinator's, so the state machine depends on one
small interface.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from streamrt.broker.streams_group.group import Status
from streamrt.broker.streams_group.member import StreamsMember, Tasks
from streamrt.broker.streams_group.topology import StreamsTopology

__all__ = ("Configured", "assign", "configure")


@dataclasses.dataclass(frozen=True, slots=True)
class Configured:
    """A topology sized against the topics: tasks per subtopology when ready (else empty),
    the statuses to report, the internal topics to create, or an invalid-topology error."""

    tasks: Mapping[str, int] = dataclasses.field(default_factory=dict)
    stateful: frozenset[str] = frozenset()
    status: tuple[Status, ...] = ()
    to_create: Mapping[str, tuple[int, int, dict[str, str]]] = dataclasses.field(
        default_factory=dict
    )
    invalid: str | None = None

    @property
    def ready(self) -> bool:
        return self.invalid is None and not self.status and bool(self.tasks)


def configure(topology: StreamsTopology, topics: Mapping[str, int]) -> Configured:
    raise NotImplementedError("bound to configured_topology when it lands")


def assign(
    members: Mapping[str, StreamsMember],
    configured: Configured,
    standby_replicas: int,
) -> dict[str, Tasks]:
    raise NotImplementedError("bound to task_assignor when it lands")
