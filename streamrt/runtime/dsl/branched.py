"""``KStream.split()``'s result, Kafka's ``BranchedKStream``: branches added one by one with
a predicate and a :class:`~.options.Branched`, then ``default_branch()`` or
``no_default_branch()`` returns the branches by name.

A record goes to the first branch whose predicate matches; without a default branch, a
record no predicate matches is dropped. Names are Kafka's: the split's name (given, or a
generated ``KSTREAM-BRANCH-...``) followed by the branch's name, else its position from 1
(the default branch: ``0``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from streamrt.errors import ConfigError
from streamrt.runtime.dsl.options import Branched
from streamrt.runtime.graph.nodes import StreamNode
from streamrt.runtime.processor import Processor
from streamrt.runtime.processors import stateless as ops

__all__ = ("BranchedKStream",)

S = TypeVar("S")
Predicate = Callable[[Any, Any], bool]


class BranchedKStream(Generic[S]):
    """The branches of one split; ``wrap`` makes the API stream of a branch's graph node."""

    def __init__(self, node: StreamNode, name: str, wrap: Callable[[StreamNode], S]) -> None:
        self._name, self._wrap = name, wrap
        self._pairs: list[tuple[Predicate, str]] = []
        self._fallback: list[str] = []  # the default branch's node, once added
        self._done = False
        self._branched: dict[str, S] = {}
        self._node = node.then(name, self._processor)

    def _processor(self) -> Processor:
        """Built per task, once the branches are known."""
        pairs = list(self._pairs)
        if self._fallback:
            return ops.BranchWithDefaultProcessor(pairs, self._fallback[0])
        return ops.BranchProcessor(pairs)

    def branch(self, predicate: Predicate, branched: Branched | None = None) -> BranchedKStream[S]:
        """Records ``predicate(key, value)`` accepts (and no earlier branch took)."""
        self._check_open()
        child = self._child(branched, str(len(self._pairs) + 1))
        self._pairs.append((predicate, child))
        self._add(child, branched)
        return self

    def default_branch(self, branched: Branched | None = None) -> dict[str, S]:
        """The records no branch took go to this last branch; the branches by name."""
        self._check_open()
        child = self._child(branched, "0")
        self._fallback.append(child)
        self._add(child, branched)
        self._done = True
        return dict(self._branched)

    def no_default_branch(self) -> dict[str, S]:
        """The records no branch took are dropped; the branches by name."""
        self._check_open()
        self._done = True
        return dict(self._branched)

    def _check_open(self) -> None:
        if self._done:
            raise ConfigError(f"split {self._name!r} is already closed (a default was chosen)")

    def _child(self, branched: Branched | None, position: str) -> str:
        if branched is not None and not isinstance(branched, Branched):
            raise ConfigError(f"a branch takes a Branched, got {branched!r}")
        child = f"{self._name}{branched.name if branched and branched.name else position}"
        if child in self._branched or any(c == child for _, c in self._pairs):
            raise ConfigError(f"split {self._name!r} has two branches named {child!r}")
        return child

    def _add(self, child: str, branched: Branched | None) -> None:
        stream: S | None = self._wrap(self._node.then(child, ops.PassThroughProcessor))
        if branched is not None and branched.consumer is not None:
            branched.consumer(stream)
            return
        if branched is not None and branched.function is not None:
            stream = branched.function(stream)
        if stream is not None:
            self._branched[child] = stream
