"""ListGroups shows consumer groups beside the classic ones (type ``consumer``, protocol type
``consumer``, their state), with the request's state and type filters, as Kafka's."""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

from streamrt.broker.consumer_group.coordinator import ConsumerGroupCoordinator
from streamrt.wire.codec import build

__all__ = ("with_consumer_groups",)


def with_consumer_groups(response: Any, consumer: ConsumerGroupCoordinator, request: Any) -> Any:
    states = {s.lower() for s in getattr(request, "states_filter", ())}
    types = {t.lower() for t in getattr(request, "types_filter", ())}
    if types and "consumer" not in types:
        return response
    listed = list(response.groups)
    cls = importlib.import_module(type(response).__module__).ListedGroup
    for group_id, group in sorted(consumer.groups.items()):
        state = group.state.value
        if states and state.lower() not in states:
            continue
        listed.append(
            build(
                cls,
                group_id=group_id,
                protocol_type="consumer",
                group_state=state,
                group_type="consumer",
            )
        )
    return dataclasses.replace(response, groups=tuple(listed))
