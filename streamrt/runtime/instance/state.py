"""The instance's overall state (:class:`AppState`), its allowed moves and its listeners."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from streamrt.logs import fields
from streamrt.runtime.instance.metadata import APP_ALLOWED_NEXT, AppState
from streamrt.runtime.metadata import ThreadState

__all__ = ("AppStateMachine", "StateListener")

logger = logging.getLogger(__name__)

StateListener = Callable[[AppState, AppState], None]  # (new, old), as Kafka's StateListener


class AppStateMachine:
    """Responsibilities: move between allowed states, tell the listeners and the events."""

    def __init__(self, emit: Callable[..., None]) -> None:
        self._emit = emit  # emit(type, thread_index, **fields)
        self._state = AppState.CREATED
        self._lock = threading.Lock()
        self._listeners: list[StateListener] = []

    @property
    def state(self) -> AppState:
        return self._state

    def add_listener(self, listener: StateListener) -> None:
        self._listeners.append(listener)

    def move(self, new: AppState) -> bool:
        """Go to ``new`` if allowed from the current state; False (nothing done) if not."""
        with self._lock:
            old = self._state
            if old is new or new not in APP_ALLOWED_NEXT[old]:
                return False
            self._state = new
        logger.info("instance state", extra=fields(old=old.name, new=new.name))
        self._emit("app_state", None, old=old.name, new=new.name)
        for listener in list(self._listeners):
            try:
                listener(new, old)
            except Exception:
                logger.exception("state listener failed")
        return True

    def follow_threads(self, threads: Sequence[ThreadState]) -> None:
        """RUNNING when every thread runs, REBALANCING otherwise (while running at all)."""
        if not self._state.is_running_or_rebalancing:
            return
        running = bool(threads) and all(t is ThreadState.RUNNING for t in threads)
        self.move(AppState.RUNNING if running else AppState.REBALANCING)
