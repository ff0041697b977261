"""The stateless stream operators: map, filter, flat_map, peek, foreach, branch, merge."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from streamrt.runtime.processor import Processor

__all__ = (
    "BranchProcessor",
    "BranchWithDefaultProcessor",
    "FilterProcessor",
    "FlatMapProcessor",
    "FlatMapValuesProcessor",
    "ForeachProcessor",
    "MapProcessor",
    "MapValuesProcessor",
    "PassThroughProcessor",
    "PeekProcessor",
)


class PassThroughProcessor(Processor):
    """Forwards every record unchanged (merge, to_stream)."""


class MapProcessor(Processor):
    def __init__(self, fn: Callable[[Any, Any], tuple[Any, Any]]) -> None:
        self.fn = fn

    def process(self, key: Any, value: Any) -> None:
        new_key, new_value = self.fn(key, value)
        self.context.forward(new_key, new_value)


class MapValuesProcessor(Processor):
    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def process(self, key: Any, value: Any) -> None:
        self.context.forward(key, self.fn(value))


class FilterProcessor(Processor):
    def __init__(self, predicate: Callable[[Any, Any], bool]) -> None:
        self.predicate = predicate

    def process(self, key: Any, value: Any) -> None:
        if self.predicate(key, value):
            self.context.forward(key, value)


class FlatMapProcessor(Processor):
    def __init__(self, fn: Callable[[Any, Any], Iterable[tuple[Any, Any]]]) -> None:
        self.fn = fn

    def process(self, key: Any, value: Any) -> None:
        for new_key, new_value in self.fn(key, value):
            self.context.forward(new_key, new_value)


class PeekProcessor(Processor):
    def __init__(self, action: Callable[[Any, Any], None]) -> None:
        self.action = action

    def process(self, key: Any, value: Any) -> None:
        self.action(key, value)
        self.context.forward(key, value)


class BranchProcessor(Processor):
    """Sends each record to the first branch whose predicate matches (``split``)."""

    def __init__(self, branches: list[tuple[Callable[[Any, Any], bool], str]]) -> None:
        self.branches = branches

    def process(self, key: Any, value: Any) -> None:
        for predicate, child in self.branches:
            if predicate(key, value):
                self.context.forward(key, value, to=child)
                return


class ForeachProcessor(Processor):
    """A terminal action per record (``foreach``): forwards nothing."""

    def __init__(self, action: Callable[[Any, Any], None]) -> None:
        self.action = action

    def process(self, key: Any, value: Any) -> None:
        self.action(key, value)


class FlatMapValuesProcessor(Processor):
    def __init__(self, fn: Callable[[Any], Iterable[Any]]) -> None:
        self.fn = fn

    def process(self, key: Any, value: Any) -> None:
        for new_value in self.fn(value):
            self.context.forward(key, new_value)


class BranchWithDefaultProcessor(BranchProcessor):
    """``split`` with a default branch: a record no predicate matches goes to ``default``."""

    def __init__(self, branches: list[tuple[Callable[[Any, Any], bool], str]], default: str):
        super().__init__(branches)
        self.default = default

    def process(self, key: Any, value: Any) -> None:
        for predicate, child in self.branches:
            if predicate(key, value):
                self.context.forward(key, value, to=child)
                return
        self.context.forward(key, value, to=self.default)
