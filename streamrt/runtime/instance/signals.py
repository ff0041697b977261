"""SIGTERM and SIGINT stop a running instance (``App.run``, ``streamrt run``)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ("on_stop_signals",)


@contextlib.contextmanager
def on_stop_signals(stop: Callable[[], None]) -> Iterator[bool]:
    """While inside, SIGTERM and SIGINT call ``stop()``; the previous handlers come back on
    exit. Signal handlers belong to the main thread: elsewhere nothing is installed. Yields
    whether they were (i.e. whether this is the main thread)."""
    previous: dict[signal.Signals, Any] = {}
    main = threading.current_thread() is threading.main_thread()
    if main:
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, lambda *_: stop())
    try:
        yield main
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
