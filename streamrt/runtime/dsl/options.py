"""Kafka Streams' operator option objects, beside the keyword shortcuts: :class:`Consumed`,
:class:`Produced`, :class:`Grouped`, :class:`StreamJoined`, :class:`Joined`,
:class:`Repartitioned`, :class:`TableJoined` and :class:`Branched` (a processor's name is the
``name=`` keyword).

Each only carries what the matching keywords carry (``Consumed.with_("str", "json")`` is
``key_serde="str", value_serde="json"``); a keyword given as well wins over the object, so
``stream(topic, Consumed.with_(...), value_serde=...)`` overrides one serde.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from streamrt.runtime.graph.topology import StreamPartitioner
from streamrt.runtime.timestamps import TimestampExtractor
from streamrt.serde import SerdeLike

__all__ = (
    "Branched",
    "Consumed",
    "Grouped",
    "Joined",
    "Produced",
    "Repartitioned",
    "StreamJoined",
    "TableJoined",
    "pick",
    "removed_keywords",
    "removed_positional",
)


def pick(keyword: Any, option: Any) -> Any:
    """The keyword's value if given, else the option object's."""
    return keyword if keyword is not None else option


def removed_positional(operator: str, extra: tuple[Any, ...], replacement: str) -> None:
    """An old positional argument (e.g. ``count("store")``) is gone: say what replaces it."""
    if extra:
        raise TypeError(
            f"{operator}() takes no more positional arguments here: pass {replacement} "
            f"(got {', '.join(repr(a) for a in extra)})"
        )


_REPLACEMENTS = {
    "materialized": "store=",
    "named": "name=",
    "size_ms": "windows=TimeWindows.of_size_...(...)",
    "advance_ms": "windows=TimeWindows.of_size_...(...).advance_by(...)",
    "stores": "positional store names",
}


def removed_keywords(operator: str, keywords: dict[str, Any]) -> None:
    """Keywords of the old spellings are gone: name each one's replacement."""
    if keywords:
        hints = ", ".join(
            f"{k}= (use {_REPLACEMENTS[k]})" if k in _REPLACEMENTS else f"{k}=" for k in keywords
        )
        raise TypeError(f"{operator}() got unexpected keyword argument(s): {hints}")


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
    """How a sink writes its topic: serdes, the sink's name (Kafka's ``Produced.as``) and a
    stream partitioner (``partitioner=``)."""

    key_serde: SerdeLike = None
    value_serde: SerdeLike = None
    name: str | None = None
    partitioner: StreamPartitioner | None = None

    @classmethod
    def with_(cls, key_serde: SerdeLike = None, value_serde: SerdeLike = None) -> Produced:
        return cls(key_serde, value_serde)

    @classmethod
    def as_(cls, name: str) -> Produced:
        return cls(name=name)

    @classmethod
    def stream_partitioner(cls, partitioner: StreamPartitioner) -> Produced:
        return cls(partitioner=partitioner)

    def with_name(self, name: str) -> Produced:
        return replace(self, name=name)

    def with_stream_partitioner(self, partitioner: StreamPartitioner) -> Produced:
        return replace(self, partitioner=partitioner)


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


@dataclass(frozen=True, slots=True)
class Joined:
    """A stream-table join's name, serdes and grace period (Kafka's ``Joined``): the stream's
    key and value serdes are used if the stream must be repartitioned first; the table's
    (``other_value_serde``) is the table's own in streamrt, so it is accepted and unused."""

    key_serde: SerdeLike = None
    value_serde: SerdeLike = None
    other_value_serde: SerdeLike = None
    name: str | None = None
    grace: int | timedelta | None = None

    @classmethod
    def with_(
        cls, key_serde: SerdeLike = None, value_serde: SerdeLike = None, other: SerdeLike = None
    ) -> Joined:
        return cls(key_serde, value_serde, other)

    @classmethod
    def as_(cls, name: str) -> Joined:
        return cls(name=name)

    def with_name(self, name: str) -> Joined:
        return replace(self, name=name)

    def with_grace_period(self, grace: int | timedelta) -> Joined:
        return replace(self, grace=grace)

    def with_key_serde(self, serde: SerdeLike) -> Joined:
        return replace(self, key_serde=serde)

    def with_value_serde(self, serde: SerdeLike) -> Joined:
        return replace(self, value_serde=serde)

    def with_other_value_serde(self, serde: SerdeLike) -> Joined:
        return replace(self, other_value_serde=serde)


@dataclass(frozen=True, slots=True)
class Repartitioned:
    """A ``repartition``'s topic name, partition count, serdes and stream partitioner
    (Kafka's ``Repartitioned``)."""

    name: str | None = None
    partitions: int | None = None
    key_serde: SerdeLike = None
    value_serde: SerdeLike = None
    partitioner: StreamPartitioner | None = None

    @classmethod
    def as_(cls, name: str) -> Repartitioned:
        return cls(name)

    @classmethod
    def with_(cls, key_serde: SerdeLike = None, value_serde: SerdeLike = None) -> Repartitioned:
        return cls(None, None, key_serde, value_serde)

    @classmethod
    def number_of_partitions(cls, partitions: int) -> Repartitioned:
        return cls(None, partitions)

    def with_name(self, name: str) -> Repartitioned:
        return replace(self, name=name)

    def with_number_of_partitions(self, partitions: int) -> Repartitioned:
        return replace(self, partitions=partitions)

    def with_key_serde(self, serde: SerdeLike) -> Repartitioned:
        return replace(self, key_serde=serde)

    def with_value_serde(self, serde: SerdeLike) -> Repartitioned:
        return replace(self, value_serde=serde)

    @classmethod
    def stream_partitioner(cls, partitioner: StreamPartitioner) -> Repartitioned:
        return cls(partitioner=partitioner)

    def with_stream_partitioner(self, partitioner: StreamPartitioner) -> Repartitioned:
        return replace(self, partitioner=partitioner)


@dataclass(frozen=True, slots=True)
class TableJoined:
    """A foreign-key join's name and partitioners (Kafka's ``TableJoined``): ``partitioner``
    places this table's keys (the response topic), ``other_partitioner`` the other table's
    (the subscription topic); each is called with a ``None`` value and must answer None or
    one partition."""

    partitioner: StreamPartitioner | None = None
    other_partitioner: StreamPartitioner | None = None
    name: str | None = None

    @classmethod
    def with_(
        cls, partitioner: StreamPartitioner | None, other_partitioner: StreamPartitioner | None
    ) -> TableJoined:
        return cls(partitioner, other_partitioner)

    @classmethod
    def as_(cls, name: str) -> TableJoined:
        return cls(name=name)

    def with_partitioner(self, partitioner: StreamPartitioner | None) -> TableJoined:
        return replace(self, partitioner=partitioner)

    def with_other_partitioner(self, partitioner: StreamPartitioner | None) -> TableJoined:
        return replace(self, other_partitioner=partitioner)

    def with_name(self, name: str) -> TableJoined:
        return replace(self, name=name)


@dataclass(frozen=True, slots=True)
class Branched:
    """One branch of a ``split()`` (Kafka's ``Branched``): its name (the key in the result
    after the split's name) and either a ``function(stream) -> stream`` whose result goes in
    the result instead (None: left out), or a ``consumer(stream)`` (the branch left out)."""

    name: str | None = None
    function: Any = None  # Callable[[KStream], KStream | None]
    consumer: Any = None  # Callable[[KStream], None]

    @classmethod
    def as_(cls, name: str) -> Branched:
        return cls(name)

    @classmethod
    def with_function(cls, function: Any, name: str | None = None) -> Branched:
        return cls(name, function=function)

    @classmethod
    def with_consumer(cls, consumer: Any, name: str | None = None) -> Branched:
        return cls(name, consumer=consumer)
