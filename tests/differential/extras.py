"""The built-ins of issue 38's last operators, with the rules of the Java runner's ``Extras``:
stream partitioners, ``KTable.transform_values``' transformers, key-aware value mappers and
``print``'s mappers (same names, same results)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamrt.runtime import ValueMapperWithKey, ValueTransformerWithKey
from tests.differential.builtins import fmt


def partitioner(name: str) -> Callable[[str, Any, Any, int], Any]:
    """``default`` (None), ``drop`` (no partition), ``partitions:0,1`` (that set),
    ``dropKey:X`` / ``dupKey:X`` (drop / send to {0, 1} the key X, default otherwise)."""
    base, _, arg = name.partition(":")
    fixed = {int(p) for p in arg.split(",")} if base == "partitions" else set()
    table: dict[str, Callable[[str, Any, Any, int], Any]] = {
        "default": lambda _t, _k, _v, _n: None,
        "drop": lambda _t, _k, _v, _n: set(),
        "partitions": lambda _t, _k, _v, _n: fixed,
        "dropKey": lambda _t, k, _v, _n: set() if k == arg else None,
        "dupKey": lambda _t, k, _v, _n: {0, 1} if k == arg else None,
    }
    return table[base]


def value_mapper_with_key(name: str) -> ValueMapperWithKey:
    """``keyConcat``: ``"<key>:<value>"`` (None stays None)."""
    assert name == "keyConcat", name
    return ValueMapperWithKey(lambda k, v: None if v is None else f"{fmt(k)}:{fmt(v)}")


def flat_values_with_key(name: str) -> ValueMapperWithKey:
    """``keyAndValue``: ``[key, value]``."""
    assert name == "keyAndValue", name
    return ValueMapperWithKey(lambda k, v: [k, v])


class _Transformer(ValueTransformerWithKey):
    """``keyConcat`` as the mapper; ``countCalls``: ``"<value>#<n>"``, n its calls so far."""

    def __init__(self, counting: bool) -> None:
        self.counting = counting
        self.calls = 0

    def transform(self, key: Any, value: Any) -> Any:
        if self.counting:
            self.calls += 1
            return f"{fmt(value)}#{self.calls}"
        return None if value is None else f"{fmt(key)}:{fmt(value)}"


def transformer(name: str) -> Callable[[], ValueTransformerWithKey]:
    counting = {"keyConcat": False, "countCalls": True}[name]
    return lambda: _Transformer(counting)


def print_mapper(name: str) -> Callable[[Any, Any], str]:
    """``arrow``: ``"<key> -> <value>"``."""
    assert name == "arrow", name
    return lambda k, v: f"{fmt(k)} -> {fmt(v)}"
