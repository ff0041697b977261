"""Turn a key from a URL path into the store's key type, as its key serde expects it."""

from __future__ import annotations

import json
from typing import Any

from streamrt.serde import BytesSerde, IntSerde, JsonSerde, Serde, StrSerde

__all__ = ("BadKeyError", "parse_key", "to_json_value")


class BadKeyError(ValueError):
    """The text cannot be a key of this store."""


def parse_key(serde: Serde[Any], text: str) -> Any:
    """``"42"`` → 42 for an int serde, JSON for a JSON serde (else the text), text otherwise;
    the result must serialize, so a key the serde cannot encode is refused here."""
    key: Any = text
    if isinstance(serde, IntSerde):
        try:
            key = int(text)
        except ValueError:
            raise BadKeyError(f"key {text!r} is not an integer") from None
    elif isinstance(serde, BytesSerde):
        key = text.encode()
    elif isinstance(serde, JsonSerde):
        try:
            key = json.loads(text)
        except ValueError:
            key = text
    elif not isinstance(serde, StrSerde):
        key = text
    try:
        encoded = serde.serialize(key)
    except Exception as exc:
        raise BadKeyError(f"key {text!r} cannot be encoded by the key serde: {exc}") from exc
    if encoded is None:
        raise BadKeyError(f"key {text!r} encodes to null")
    return key


def to_json_value(value: Any) -> Any:
    """Values as JSON: bytes as text when they are UTF-8, else hex; other objects by repr."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            return value.hex()
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value
