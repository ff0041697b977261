"""Removing a stopped thread's static member from the group at once (KIP-345)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from streamrt.logs import fields
from streamrt.runtime.instance.queries import StreamsQueries

__all__ = ("leave_group",)

logger = logging.getLogger(__name__)


def leave_group(
    queries: StreamsQueries, thread_instance_id: str, emit: Callable[..., None]
) -> None:
    """A static member sends no LeaveGroup on stop; remove it by its instance id (batch
    LeaveGroup) so its partitions move now, not after ``session.timeout.ms``."""
    try:
        results = queries.remove_members([thread_instance_id])
    except Exception as exc:  # the group still drops it after session.timeout.ms
        logger.warning(
            "could not remove the stopped thread's static member",
            extra=fields(member=thread_instance_id, error=repr(exc)),
        )
        return
    error = results.get(thread_instance_id)
    logger.info(
        "removed the stopped thread's static member from the group",
        extra=fields(member=thread_instance_id, error=str(error) if error else None),
    )
    emit("member_removed", None, member=thread_instance_id, error=error and str(error))
