"""Offsets in Spark's Kafka-source conventions: option parsing, resolution and checkpoint JSON.

``startingOffsets``/``endingOffsets`` are ``earliest``, ``latest`` or per-partition JSON such as
``{"t":{"0":23,"1":-2}}`` where -2 means earliest and -1 latest. Streaming checkpoints use the
same JSON shape with string keys, because Spark round-trips offsets through JSON (int keys
would come back as strings).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from streamrt.errors import ConfigError

__all__ = (
    "EARLIEST",
    "LATEST",
    "OffsetSpec",
    "TopicPartition",
    "Watermarks",
    "offsets_from_json",
    "offsets_to_json",
    "parse_offset_spec",
    "resolve_offsets",
)

EARLIEST = -2
LATEST = -1


class TopicPartition(NamedTuple):
    """A topic-partition; ``str()`` gives Kafka's ``topic-partition`` spelling for messages."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class Watermarks(NamedTuple):
    """The log start offset (low) and the high watermark (next offset to be written)."""

    low: int
    high: int


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """A parsed offsets option: a default (EARLIEST or LATEST) plus explicit per-partition offsets.

    Partitions not named in the JSON take ``default``; a JSON value of -2/-1 is stored as-is.
    """

    option: str
    default: int
    specific: Mapping[TopicPartition, int] = field(default_factory=dict)


def parse_offset_spec(option: str, text: str | None, default: int) -> OffsetSpec:
    """Parse the value of ``option`` (``earliest``, ``latest`` or JSON) into an OffsetSpec."""
    if text is None or text.strip() == "":
        return OffsetSpec(option, default)
    word = text.strip().lower()
    if word == "earliest":
        return OffsetSpec(option, EARLIEST)
    if word == "latest":
        return OffsetSpec(option, LATEST)
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"option {option}: expected 'earliest', 'latest' or JSON like "
            f'{{"topic":{{"0":23}}}}, got {text!r} ({exc.msg})'
        ) from None
    return OffsetSpec(option, default, _offsets_from_mapping(option, parsed))


def _offsets_from_mapping(option: str, parsed: Any) -> dict[TopicPartition, int]:
    if not isinstance(parsed, dict):
        raise ConfigError(f"option {option}: JSON must be an object of topics, got {parsed!r}")
    out: dict[TopicPartition, int] = {}
    for topic, partitions in parsed.items():
        if not isinstance(partitions, dict):
            raise ConfigError(
                f"option {option}: topic {topic!r} must map partitions to offsets, "
                f"got {partitions!r}"
            )
        for partition, offset in partitions.items():
            try:
                tp = TopicPartition(str(topic), int(partition))
            except ValueError:
                raise ConfigError(
                    f"option {option}: partition {partition!r} of topic {topic!r} is not an integer"
                ) from None
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < EARLIEST:
                raise ConfigError(
                    f"option {option}: offset for {tp} must be an integer >= -2, got {offset!r}"
                )
            out[tp] = offset
    return out


def resolve_offsets(
    spec: OffsetSpec, watermarks: Mapping[TopicPartition, Watermarks]
) -> dict[TopicPartition, int]:
    """Turn a spec into concrete offsets for exactly the partitions in ``watermarks``.

    Raises ConfigError naming the option and topic-partition when the JSON names a partition
    that does not exist or an offset outside ``[low, high]`` (Kafka's valid fetch positions).
    """
    unknown = sorted(set(spec.specific) - set(watermarks))
    if unknown:
        names = ", ".join(str(tp) for tp in unknown)
        raise ConfigError(f"option {spec.option}: unknown topic-partition(s) {names}")
    out: dict[TopicPartition, int] = {}
    for tp, marks in watermarks.items():
        wanted = spec.specific.get(tp, spec.default)
        if wanted == EARLIEST:
            out[tp] = marks.low
        elif wanted == LATEST:
            out[tp] = marks.high
        elif marks.low <= wanted <= marks.high:
            out[tp] = wanted
        else:
            raise ConfigError(
                f"option {spec.option}: offset {wanted} for {tp} is out of range "
                f"[{marks.low}, {marks.high}]"
            )
    return out


def offsets_to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """The checkpointable form: ``{"topic": {"0": 23}}`` with string partition keys."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
    return out


def offsets_from_json(data: Mapping[str, Any]) -> dict[TopicPartition, int]:
    """Inverse of :func:`offsets_to_json`; accepts int or string partition keys and offsets."""
    return {
        TopicPartition(topic, int(partition)): int(offset)
        for topic, partitions in data.items()
        for partition, offset in partitions.items()
    }
