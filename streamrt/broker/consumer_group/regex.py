"""Subscription regexes compiled with RE2, the engine of Kafka's RE2/J: the same syntax, and
matching in linear time, so no client's pattern can stall the broker (Python's ``re``
backtracks: ``(a+)+$`` on a long topic name would block the event loop)."""

from __future__ import annotations

import functools
from typing import Any

import re2

__all__ = ("InvalidRegex", "compile_regex")

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # an invalid pattern is the client's error, answered, not logged

InvalidRegex = re2.error


@functools.lru_cache(maxsize=256)
def compile_regex(pattern: str) -> Any:
    """The compiled pattern (cached: every heartbeat resolves its group's subscriptions);
    raises :data:`InvalidRegex`."""
    return re2.compile(pattern, _OPTIONS)
