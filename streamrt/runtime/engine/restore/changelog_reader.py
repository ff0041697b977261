"""What the restorer and the standby updater share: a stream thread's restore consumer.

Both read changelogs with the thread's one restore consumer, list changelog ends through
``offsets`` (not the fetching consumer, whose ListOffsets would queue behind its standbys'
long-poll Fetch on the same connection, see ``clients.py``), and report lifecycle events.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamrt.runtime.engine.restore_consumer import EndOffsets, RestoreConsumer

__all__ = ("ChangelogReader",)


class ChangelogReader:
    """The restore consumer, the end-offset lister (default: ``consumer``), the thread's name
    and ``emit(type, **fields)`` for lifecycle events (default: drop them); a subclass sets
    up its own state in :meth:`_init_state`."""

    def __init__(
        self,
        consumer: RestoreConsumer,
        thread_name: str,
        emit: Callable[..., Any] | None = None,
        offsets: EndOffsets | None = None,
    ) -> None:
        self.consumer = consumer
        self.offsets: EndOffsets = offsets or consumer
        self.thread_name = thread_name
        self.emit = emit or (lambda type_, **kv: None)
        self._init_state()

    def _init_state(self) -> None:
        """A subclass's own fields, set at construction (none here)."""
