"""Health: what ``/healthz`` reports about an instance, and how it is decided."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from streamrt.runtime.instance.metadata import AppState
from streamrt.runtime.instance.thread_handle import ThreadHandle

__all__ = ("Health", "health_of")


@dataclass(frozen=True, slots=True)
class Health:
    """What ``/healthz`` reports: unhealthy once the instance is in (or going to) ERROR."""

    healthy: bool
    state: str
    reason: str | None
    threads: dict[str, str]
    thread_failures: int


def health_of(
    state: AppState,
    fatal_error: BaseException | None,
    threads: Sequence[ThreadHandle],
    thread_failures: int,
) -> Health:
    """Healthy unless the instance is in (or on its way to) ERROR; the reason says why."""
    failed = fatal_error is not None or state in (AppState.ERROR, AppState.PENDING_ERROR)
    by_name = {t.name: t.state.value for t in threads}
    reason = str(fatal_error) if fatal_error is not None else None
    return Health(not failed, state.value, reason, by_name, thread_failures)
