"""What the console keeps of one record of ``<application.id>-events``, or why it keeps nothing.

The timeline used to keep every record as parsed, of any size and shape: 300 records of 1 MB
held ~290 MB in the process that runs the stream threads, and one record with a malformed
field made ``/v1/timeline`` answer 500 until thousands of newer ones pushed it out. Now each
record is checked once, when read, and either kept as a small normalized dict (only what
:mod:`streamrt.rest.timeline` reads) or skipped with a reason the endpoint counts:

* ``oversized``: its value is longer than ``rest.console.event.max.bytes`` (not even parsed);
* ``malformed``: not JSON, or not the documented schema (``docs/events.md``) for its type;
* ``untrusted``: a signing key is configured and the record has no valid MAC
  (:func:`streamrt.events.event_mac`): anyone who can write the topic could have written it.
"""

from __future__ import annotations

import hmac
import json
import math
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from streamrt.events import event_mac

__all__ = ("MALFORMED", "OVERSIZED", "TIMELINE_TYPES", "UNTRUSTED", "BadEvent", "check_event")

MALFORMED, OVERSIZED, UNTRUSTED = "malformed", "oversized", "untrusted"

# the types streamrt.rest.timeline reads (app_state also marks a new pid: a restart)
TIMELINE_TYPES = frozenset(
    {
        "rebalance_complete",
        "assignment",
        "app_state",
        "handoff_stopping",
        "restore_complete",
        "member_removed",
        "fenced",
        "fatal_error",
        "thread_failed",
        "commit",
    }
)


class BadEvent(ValueError):
    """A record the console skips; ``kind`` is the counter it goes to."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason[:300])
        self.kind = kind


class _Envelope(BaseModel):
    """The fields every event has (``docs/events.md``), as the timeline reads them."""

    model_config = ConfigDict(extra="ignore")

    v: int
    ts: float
    application_id: str | None
    instance_id: str
    thread: int | None = None
    thread_id: str | None = None
    pid: int
    type: str
    fields: dict[str, Any]

    @field_validator("ts")
    @classmethod
    def _finite(cls, ts: float) -> float:
        if not math.isfinite(ts):
            raise ValueError("ts must be a finite number")
        return ts


class _Generation(BaseModel):
    generation: int
    followup: bool = False  # rebalance_complete: a second (cooperative) round is due


class _Partitions(BaseModel):
    partitions: list[tuple[str, int]]


class _Records(BaseModel):
    records: int = 0


class _NewState(BaseModel):
    new: str


class _Offsets(BaseModel):
    offsets: dict[str, int]


# each type's fields as the timeline reads them; types not listed keep theirs as they are
_FIELDS: dict[str, type[BaseModel]] = {
    "rebalance_complete": _Generation,
    "assignment": _Partitions,
    "restore_complete": _Records,
    "app_state": _NewState,
    "commit": _Offsets,
}


def _verify(event: dict[str, Any], key: str, application_id: str) -> None:
    mac = event.pop("mac", None)
    if not isinstance(mac, str):
        raise BadEvent(UNTRUSTED, "no signature (mac) although rest.directory.secret is set")
    if event.get("application_id") != application_id:
        other = str(event.get("application_id"))[:100]
        raise BadEvent(UNTRUSTED, f"written for another application.id {other!r}")
    if not hmac.compare_digest(mac, event_mac(key, event)):
        raise BadEvent(UNTRUSTED, "its signature does not match this application's secret")


def check_event(
    value: bytes | None, *, max_bytes: int, key: str | None, application_id: str
) -> dict[str, Any] | None:
    """The event the timeline reads, ``None`` for a type it does not read; or BadEvent."""
    if value is None:
        raise BadEvent(MALFORMED, "no value (a tombstone)")
    if len(value) > max_bytes:
        limit = f"rest.console.event.max.bytes={max_bytes}"
        raise BadEvent(OVERSIZED, f"{len(value)} bytes, above {limit}")
    try:
        raw = json.loads(value)
    except ValueError as exc:
        raise BadEvent(MALFORMED, f"not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise BadEvent(MALFORMED, f"not a JSON object but {type(raw).__name__}")
    if raw.get("type") not in TIMELINE_TYPES:
        return None
    if key is not None:
        _verify(raw, key, application_id)
    try:
        event = _Envelope.model_validate(raw)
        shape = _FIELDS.get(event.type)
        extra = shape.model_validate(event.fields).model_dump() if shape else event.fields
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise BadEvent(MALFORMED, f"{raw.get('type')}: {where}: {first['msg']}") from None
    return {
        "ts": event.ts,
        "type": event.type,
        "instance_id": event.instance_id,
        "thread": event.thread,
        "thread_id": event.thread_id,
        "pid": event.pid,
        "fields": extra,
    }
