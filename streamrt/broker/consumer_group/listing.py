"""ListGroups shows consumer groups beside the classic ones (type ``consumer``, protocol type
``consumer``, their state), with the request's state and type filters, as Kafka's; streams
groups use the same listing (``with_groups``) with their type."""

from __future__ import annotations

import dataclasses
import enum
import importlib
from collections.abc import Mapping
from typing import Any, Protocol

from streamrt.broker.consumer_group.coordinator import ConsumerGroupCoordinator
from streamrt.wire.codec import build

__all__ = ("with_consumer_groups", "with_groups")


class _Stated(Protocol):
    @property
    def state(self) -> enum.Enum: ...


def with_consumer_groups(response: Any, consumer: ConsumerGroupCoordinator, request: Any) -> Any:
    return with_groups(response, consumer.groups, request, "consumer")


def with_groups(response: Any, groups: Mapping[str, _Stated], request: Any, group_type: str) -> Any:
    """``response`` with ``groups`` listed as ``group_type`` (also their protocol type)."""
    states = {s.lower() for s in getattr(request, "states_filter", ())}
    types = {t.lower() for t in getattr(request, "types_filter", ())}
    if types and group_type not in types:
        return response
    listed = list(response.groups)
    cls = importlib.import_module(type(response).__module__).ListedGroup
    for group_id, group in sorted(groups.items()):
        state = str(group.state.value)
        if states and state.lower() not in states:
            continue
        listed.append(
            build(
                cls,
                group_id=group_id,
                protocol_type=group_type,
                group_state=state,
                group_type=group_type,
            )
        )
    return dataclasses.replace(response, groups=tuple(listed))
