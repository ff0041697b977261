"""The one Kafka error-code table and streamrt's typed exceptions.

Kafka's codes come from kio (generated from Kafka's ``Errors.java``); core modules raise
:class:`KafkaError` subclasses carrying a code and the network layer maps them to responses.
``ErrorCode`` is imported on first use: kio's import costs a stream process that never touches
the wire codec about 0.15 s of every restart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kio.schema.errors import ErrorCode

__all__ = ("ConfigError", "ErrorCode", "KafkaError", "StreamrtError")


class StreamrtError(Exception):
    """Base class of every streamrt exception."""


class ConfigError(StreamrtError, ValueError):
    """A configuration value is missing or invalid; the message names the key."""


class KafkaError(StreamrtError):
    """An error with a Kafka error code, raised by core code and mapped at the wire seam."""

    def __init__(self, code: ErrorCode, message: str = "") -> None:
        super().__init__(message or code.name)
        self.code = code

    def __repr__(self) -> str:
        return f"KafkaError({self.code.name}, {self.args[0]!r})"


def __getattr__(name: str) -> Any:
    if name == "ErrorCode":
        from kio.schema.errors import ErrorCode

        return ErrorCode
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
