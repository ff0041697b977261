"""The named built-ins scenarios use instead of user code, with the rules of the Java runner's
``Fns`` (tests/differential/runner): same names, same results, ``None`` where Java has null.

Values are JSON scalars: strings and integers. ``fmt`` is Java's ``String.valueOf``, so
joiners and string aggregators print a missing side as ``null`` on both sides.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from streamrt.runtime import ValueJoinerWithKey

KV = tuple[Any, Any]


def fmt(value: Any) -> str:
    """``String.valueOf``: ``None`` is ``"null"``."""
    return "null" if value is None else str(value)


def _arg(name: str) -> tuple[str, str]:
    base, _, arg = name.partition(":")
    return base, arg


def predicate(name: str) -> Callable[[Any, Any], bool]:
    """``len>N``, ``even``, ``startsWith:X``, ``keyIs:X``, ``notNull``."""
    if name.startswith("len>"):
        n = int(name[4:])
        return lambda _k, v: isinstance(v, str) and len(v) > n
    base, arg = _arg(name)
    table: dict[str, Callable[[Any, Any], bool]] = {
        "even": lambda _k, v: isinstance(v, int) and v % 2 == 0,
        "startsWith": lambda _k, v: isinstance(v, str) and v.startswith(arg),
        "keyIs": lambda k, _v: k == arg,
        "notNull": lambda _k, v: v is not None,
    }
    return table[base]


def value_mapper(name: str) -> Callable[[Any], Any]:
    """``upper``, ``len``, ``double``, ``suffix:X``, ``identity`` (``None`` stays ``None``)."""
    base, arg = _arg(name)
    table: dict[str, Callable[[Any], Any]] = {
        "upper": lambda v: v.upper(),
        "len": len,
        "double": lambda v: v * 2,
        "suffix": lambda v: fmt(v) + arg,
    }
    if base == "identity":
        return lambda v: v
    fn = table[base]
    return lambda v: None if v is None else fn(v)


def _first(text: Any) -> Any:
    return None if text is None or fmt(text) == "" else fmt(text)[0]


def key_selector(name: str) -> Callable[[Any, Any], Any]:
    """``value``, ``firstChar`` (of the value), ``keyFirstChar``, ``key``."""
    table: dict[str, Callable[[Any, Any], Any]] = {
        "value": lambda _k, v: None if v is None else fmt(v),
        "firstChar": lambda _k, v: _first(v),
        "keyFirstChar": lambda k, _v: _first(k),
        "key": lambda k, _v: k,
    }
    return table[name]


def mapper(name: str) -> Callable[[Any, Any], KV]:
    """``swap``, ``keyUpper``, ``valueFirstChar``, ``keyFirstChar``, ``windowKey`` (a windowed
    table's record key) → (new key, value)."""
    table: dict[str, Callable[[Any, Any], KV]] = {
        "swap": lambda k, v: (None if v is None else fmt(v), k),
        "keyUpper": lambda k, v: (None if k is None else k.upper(), v),
        "valueFirstChar": lambda _k, v: (_first(v), v),
        "keyFirstChar": lambda k, v: (_first(k), v),
        "windowKey": lambda k, v: (k.key, v),
    }
    return table[name]


def flat_values(name: str) -> Callable[[Any], Iterable[Any]]:
    """``words`` (split on spaces), ``dup``."""
    table: dict[str, Callable[[Any], Iterable[Any]]] = {
        "words": lambda v: [] if v is None else fmt(v).split(" "),
        "dup": lambda v: [v, v],
    }
    return table[name]


def flat_mapper(name: str) -> Callable[[Any, Any], Iterable[KV]]:
    """``words``: one (word, word) record per word."""
    if name != "words":
        raise KeyError(name)
    return lambda _k, v: [] if v is None else [(w, w) for w in fmt(v).split(" ")]


def initializer(name: str) -> Callable[[], Any]:
    """``empty`` (``""``), ``zero`` (``0``)."""
    return {"empty": lambda: "", "zero": lambda: 0}[name]


def _remove(agg: Any, v: Any) -> str:
    text, part = fmt(agg), fmt(v)
    return text.replace(part, "", 1)


_COMBINERS: dict[str, Callable[[Any, Any], Any]] = {
    "concat": lambda agg, v: fmt(agg) + fmt(v),
    "sum": lambda agg, v: agg + v,
    "max": max,
    "sub": lambda agg, v: agg - v,
    "remove": _remove,
}


def reducer(name: str) -> Callable[[Any, Any], Any]:
    """``concat``, ``sum``, ``max``, ``sub``, ``remove``: ``(aggregate, value)``."""
    return _COMBINERS[name]


def aggregator(name: str) -> Callable[[Any, Any, Any], Any]:
    """A combiner as ``(key, value, aggregate)``."""
    fn = _COMBINERS[name]
    return lambda _k, v, agg: fn(agg, v)


def merger(name: str) -> Callable[[Any, Any, Any], Any]:
    """A combiner as a session merger ``(key, aggregate1, aggregate2)``."""
    fn = _COMBINERS[name]
    return lambda _k, a, b: fn(a, b)


def joiner(name: str) -> Any:
    """``concat``: ``"<left>+<right>"``; the key-aware ``keyConcat``: ``"<key>:<left>+<right>"``
    (a :class:`ValueJoinerWithKey`)."""
    if name == "keyConcat":
        return ValueJoinerWithKey(lambda key, left, right: f"{fmt(key)}:{fmt(left)}+{fmt(right)}")
    if name != "concat":
        raise KeyError(name)
    return lambda left, right: f"{fmt(left)}+{fmt(right)}"


def foreign_key(name: str) -> Callable[[Any], Any]:
    """``value``, ``prefix`` (the part before the first ``:``)."""
    table: dict[str, Callable[[Any], Any]] = {
        "value": lambda v: None if v is None else fmt(v),
        "prefix": lambda v: None if v is None else fmt(v).split(":", 1)[0],
    }
    return table[name]


def global_key(name: str) -> Callable[[Any, Any], Any]:
    """``key``, ``value``, ``prefix``: the global table's key for a stream record."""
    if name == "key":
        return lambda k, _v: k
    fk = foreign_key(name)
    return lambda _k, v: fk(v)


def topic_extractor(name: str) -> Callable[[Any, Any, Any], str]:
    """Topic-name extractors: ``keyFirstChar`` ("out-" + the key's first character) and
    ``sourceTopic`` ("out-" + the record context's topic)."""
    table: dict[str, Callable[[Any, Any, Any], str]] = {
        "keyFirstChar": lambda k, _v, _ctx: "out-" + k[:1],
        "sourceTopic": lambda _k, _v, ctx: "out-" + ctx.topic,
    }
    return table[name]
