"""Kafka Streams' operator option objects, beside the keyword shortcuts: :class:`Consumed`,
:class:`Produced`, :class:`Grouped`, :class:`StreamJoined` and :class:`Named`.

Each only carries what the matching keywords carry (``Consumed.with_("str", "json")`` is
``key_serde="str", value_serde="json"``); a keyword given as well wins over the object, so
``stream(topic, Consumed.with_(...), value_serde=...)`` overrides one serde.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from streamrt.runtime.timestamps import TimestampExtractor
from streamrt.serde import SerdeLike

__all__ = ("Consumed", "Grouped", "Named", "Produced", "StreamJoined", "name_of", "pick")


def pick(keyword: Any, option: Any) -> Any:
    """The keyword's value if given, else the option object's."""
    return keyword if keyword is not None else option


@dataclass(frozen=True, slots=True)
class Named:
    """The name of an operator's processor (Kafka's ``Named.as``)."""

    name: str

    @classmethod
    def as_(cls, name: str) -> Named:
        return cls(name)


def name_of(named: Named | str | None) -> str | None:
    return named.name if isinstance(named, Named) else named


@dataclass(frozen=True, slots=True)
class Consumed:
    """How a source reads its topic: serdes and a timestamp extractor."""

    key_serde: SerdeLike = None
    value_serde: SerdeLike = None
    timestamp_extractor: TimestampExtractor | None = None

    @classmethod
    def with_(cls, key_serde: SerdeLike = None, value_serde: SerdeLike = None) -> Consumed:
        return cls(key_serde, value_serde)

    def with_timestamp_extractor(self, extractor: TimestampExtractor) -> Consumed:
        return replace(self, timestamp_extractor=extractor)


@dataclass(frozen=True, slots=True)
class Produced:
    """How a sink writes its topic: serdes."""

    key_serde: SerdeLike = None
    value_serde: SerdeLike = None

    @classmethod
    def with_(cls, key_serde: SerdeLike = None, value_serde: SerdeLike = None) -> Produced:
        return cls(key_serde, value_serde)


@dataclass(frozen=True, slots=True)
class Grouped:
    """A grouping's repartition topic name and serdes."""

    name: str | None = None
    key_serde: SerdeLike = None
    value_serde: SerdeLike = None

    @classmethod
    def as_(cls, name: str) -> Grouped:
        return cls(name)

    @classmethod
    def with_(cls, key_serde: SerdeLike = None, value_serde: SerdeLike = None) -> Grouped:
        return cls(None, key_serde, value_serde)

    def with_name(self, name: str) -> Grouped:
        return replace(self, name=name)


@dataclass(frozen=True, slots=True)
class StreamJoined:
    """A stream-stream join's name (its processors, stores and repartition topics) and store
    kind (Kafka's ``StreamJoined``; streamrt's join stores hold bytes, so no serdes here)."""

    name: str | None = None
    in_memory: bool | None = None

    @classmethod
    def as_(cls, name: str) -> StreamJoined:
        return cls(name)

    def with_name(self, name: str) -> StreamJoined:
        return replace(self, name=name)

    def with_store_name(self, name: str) -> StreamJoined:
        return replace(self, name=name)

    def with_in_memory(self, in_memory: bool = True) -> StreamJoined:
        return replace(self, in_memory=in_memory)
