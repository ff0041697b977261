"""The configuration of joins: ``JoinWindows`` (stream-stream), the join kinds, the joiner."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, Literal

from streamrt.errors import ConfigError
from streamrt.runtime.windows import to_ms

__all__ = ("JoinKind", "JoinWindows", "Joiner", "KeyJoiner", "ValueJoinerWithKey", "key_joiner")

JoinKind = Literal["inner", "left", "outer"]
Joiner = Callable[[Any, Any], Any]
KeyJoiner = Callable[[Any, Any, Any], Any]  # (key, left, right) -> result


@dataclass(frozen=True, slots=True)
class ValueJoinerWithKey:
    """A joiner that also reads the record's key: ``fn(key, left, right)``, as Kafka's
    ``ValueJoinerWithKey``; stream joins (with a stream, a table or a global table) take it in
    place of ``joiner(left, right)``."""

    fn: KeyJoiner

    def __call__(self, key: Any, left: Any, right: Any) -> Any:
        return self.fn(key, left, right)


def key_joiner(joiner: Joiner | ValueJoinerWithKey) -> KeyJoiner:
    """Every joiner as ``(key, left, right)``: the processors always pass the key."""
    if isinstance(joiner, ValueJoinerWithKey):
        return joiner.fn
    return lambda _key, left, right: joiner(left, right)


@dataclass(frozen=True, slots=True)
class JoinWindows:
    """A right record r joins a left record l iff ``l.ts - before <= r.ts <= l.ts + after``.

    Records stay joinable (and left/outer results wait) until stream time passes their window
    end plus ``grace_ms``. Negative values are refused when the windows are built.
    """

    before_ms: int
    after_ms: int
    grace_ms: int = 0

    def __post_init__(self) -> None:
        if self.before_ms + self.after_ms < 0:
            raise ConfigError(
                f"JoinWindows: before + after must be >= 0, got {self.before_ms} + {self.after_ms}"
            )
        if self.grace_ms < 0:
            raise ConfigError(f"JoinWindows: grace must be >= 0, got {self.grace_ms}")

    @classmethod
    def of_time_difference_with_no_grace(cls, difference: int | timedelta) -> JoinWindows:
        """Durations here are ms (int) or a ``timedelta``, as everywhere in the DSL."""
        return cls.of_time_difference_and_grace(difference, 0)

    @classmethod
    def of_time_difference_and_grace(
        cls, difference: int | timedelta, grace: int | timedelta
    ) -> JoinWindows:
        difference_ms = to_ms(difference, "JoinWindows time difference")
        if difference_ms < 0:
            raise ConfigError(f"JoinWindows: time difference must be >= 0, got {difference_ms}")
        return cls(difference_ms, difference_ms, to_ms(grace, "JoinWindows grace"))

    of_time_difference = of_time_difference_with_no_grace

    def before(self, before: int | timedelta) -> JoinWindows:
        return replace(self, before_ms=to_ms(before, "JoinWindows before"))

    def after(self, after: int | timedelta) -> JoinWindows:
        return replace(self, after_ms=to_ms(after, "JoinWindows after"))

    def grace(self, grace: int | timedelta) -> JoinWindows:
        return replace(self, grace_ms=to_ms(grace, "JoinWindows grace"))

    @property
    def size_ms(self) -> int:
        return self.before_ms + self.after_ms

    @property
    def retention_ms(self) -> int:
        return self.before_ms + self.after_ms + self.grace_ms
