"""Supervision of the stream threads: replace a dead one, after a backoff, or give up.

A dead thread is replaced with the same index (so its static member id is kept) after a delay
that doubles while threads keep dying on the same record or with the same error
(``errors.retry.backoff.ms`` up to ``errors.retry.backoff.max.ms``); after
``errors.retry.max.attempts`` replacements, or at once on a fatal error (a fenced instance id),
the instance stops into ERROR. Deaths are grouped by :func:`failure_key`, computed once for
both thread kinds: a stream thread process computes it in the child and sends it along.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from streamrt.logs import fields
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.engine.thread.thread import FatalThreadError
from streamrt.runtime.exception_handlers import RecordFailedError
from streamrt.runtime.instance.process_thread import ChildThreadError
from streamrt.runtime.instance.thread_handle import ThreadHandle

__all__ = ("RestartBackoff", "Supervisor", "failure_key")

logger = logging.getLogger(__name__)

POLL_S = 0.2  # how often dead threads are looked for


def failure_key(error: BaseException | None) -> str:
    """What groups thread deaths for the backoff: the record that failed, else the error.

    A stream thread process's error carries the key its child computed with this function.
    """
    if isinstance(error, ChildThreadError):
        return error.key
    if isinstance(error, RecordFailedError):
        return f"record {error.context.record_id}"
    return f"error {type(error).__name__}: {error}"


_QUIET_MIN_S = 60.0


@dataclass(frozen=True, slots=True)
class _Failures:
    """Deaths with one key: how many, and when the last one was."""

    count: int
    last: float


@dataclass(frozen=True, slots=True)
class Attempt:
    """One death counted: its number for its key, and the delay before the replacement
    (None: give up)."""

    key: str
    count: int
    delay_ms: int | None


class RestartBackoff:
    """Kafka Streams' ``errors.retry.*``: exponential backoff per failure key."""

    def __init__(self, max_attempts: int, backoff_ms: int, backoff_max_ms: int) -> None:
        self.max_attempts = max_attempts
        self.backoff_ms = backoff_ms
        self.backoff_max_ms = backoff_max_ms
        self._failures: dict[str, _Failures] = {}

    @classmethod
    def from_config(cls, config: StreamsConfig) -> RestartBackoff:
        return cls(
            config.errors_retry_max_attempts,
            config.errors_retry_backoff_ms,
            config.errors_retry_backoff_max_ms,
        )

    @property
    def quiet_s(self) -> float:
        """How long after a death with a key a death with the same key starts a new series:
        4 x ``errors.retry.backoff.max.ms``, and never under a minute. Why the floor: the time
        between two deaths includes the replacement's start (join, restore, reaching the record
        again), which is not quiet time; with a 200 ms max backoff on a loaded machine that took
        over 0.8 s, the series restarted and a poison record killed the thread 5 times where
        ``errors.retry.max.attempts=2`` allows 3."""
        return max(4 * self.backoff_max_ms / 1000, _QUIET_MIN_S)

    def failed(self, key: str, now: float) -> Attempt:
        """Count a death with ``key`` at ``now`` (monotonic seconds)."""
        previous = self._failures.get(key)
        # a failure long after the last one with the same key starts a new series
        if previous is None or now - previous.last > self.quiet_s:
            previous = _Failures(0, now)
        failures = _Failures(previous.count + 1, now)
        self._failures[key] = failures
        attempts = failures.count - 1  # replacements already made for this key
        if attempts >= self.max_attempts:
            return Attempt(key, failures.count, None)
        delay_ms = min(self.backoff_ms * 2**attempts, self.backoff_max_ms)
        return Attempt(key, failures.count, delay_ms)


@dataclass(frozen=True, slots=True)
class SupervisorHooks:
    """What the supervisor does to the App: its threads, restarts, giving up, events."""

    threads: Callable[[], Mapping[int, ThreadHandle]]  # by index, a snapshot
    restart: Callable[[int], object]  # start a new thread with this index
    give_up: Callable[[int, BaseException | None, str], None]  # index, error, reason
    emit: Callable[..., None]  # emit(type, thread_index, **fields)


class Supervisor:
    """Responsibilities: find dead threads, count their deaths, replace them or give up."""

    def __init__(
        self,
        backoff: RestartBackoff,
        hooks: SupervisorHooks,
        lock: threading.RLock,
        stopping: threading.Event,
        name: str,
    ) -> None:
        self.backoff = backoff
        self.deaths = 0  # stream thread deaths (not counting clean stops)
        self._hooks = hooks
        self._lock = lock  # the App's: threads are started and removed under it
        self._stopping = stopping
        self._restart_at: dict[int, float] = {}  # dead thread index → when to replace it
        self._thread = threading.Thread(target=self._run, daemon=True, name=name)

    @property
    def started(self) -> bool:
        return self._thread.ident is not None

    def start(self) -> None:
        self._thread.start()

    def forget(self, index: int) -> None:
        """A removed thread is not replaced."""
        self._restart_at.pop(index, None)

    def _run(self) -> None:
        while not self._stopping.wait(POLL_S):
            with self._lock:
                if not self.check():
                    return

    def check(self) -> bool:
        """One round over the threads; False once the instance gave up (call under the lock)."""
        for index, thread in list(self._hooks.threads().items()):
            if thread.alive or self._stopping.is_set():
                continue
            if isinstance(thread.error, FatalThreadError):
                self._hooks.give_up(index, thread.error, str(thread.error))
                return False
            if index not in self._restart_at:
                reason = self._count_death(index, thread)
                if reason is not None:
                    self._hooks.give_up(index, thread.error, reason)
                    return False
            if time.monotonic() >= self._restart_at[index]:
                del self._restart_at[index]
                self._hooks.emit("thread_replaced", index, error=repr(thread.error))
                self._hooks.restart(index)
        return True

    def _count_death(self, index: int, thread: ThreadHandle) -> str | None:
        """Count a death and schedule the replacement; the reason to give up, if so."""
        error = thread.error
        self.deaths += 1
        now = time.monotonic()
        attempt = self.backoff.failed(failure_key(error), now)
        event: dict[str, Any] = {"error": str(error), "key": attempt.key, "attempt": attempt.count}
        if attempt.delay_ms is None:
            self._hooks.emit("thread_failed", index, **event, retry_in_ms=None)
            return (
                f"stream thread {index} failed {attempt.count} times on {attempt.key}; giving up "
                f"(errors.retry.max.attempts={self.backoff.max_attempts}): {error}"
            )
        self._restart_at[index] = now + attempt.delay_ms / 1000
        logger.warning(
            "stream thread died, replacing it after a backoff",
            extra=fields(
                thread=thread.name,
                error=repr(error),
                attempt=attempt.count,
                retry_in_ms=attempt.delay_ms,
            ),
        )
        self._hooks.emit("thread_failed", index, **event, retry_in_ms=attempt.delay_ms)
        return None
