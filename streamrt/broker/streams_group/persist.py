"""Streams groups in ``__consumer_offsets``: not persisted yet (groups live in memory)."""

from __future__ import annotations

from streamrt.broker.coordination.result import CoordinatorRecord
from streamrt.broker.streams_group.group import StreamsGroup

__all__ = ("GroupImage", "image", "rebuild", "records_between", "replay")

GroupImage = StreamsGroup


def image(group: StreamsGroup | None) -> GroupImage | None:
    return None


def records_between(
    group_id: str, before: GroupImage | None, after: GroupImage | None
) -> tuple[CoordinatorRecord, ...]:
    return ()


def rebuild(group_id: str, image: GroupImage) -> StreamsGroup:
    return StreamsGroup(group_id)


def replay(groups: dict[str, StreamsGroup], key: bytes, value: bytes | None) -> bool:
    return False
