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

__all__ = ("ChildExited", "ConfigError", "ErrorCode", "KafkaError", "StreamrtError")


class StreamrtError(Exception):
    """Base class of every streamrt exception."""


class ConfigError(StreamrtError, ValueError):
    """A configuration value is missing or invalid; the message names the key."""


class ChildExited(StreamrtError):
    """A child process a tool was waiting on (a deploy's instance) exited: the message names
    it, its exit code and its log's last lines, so nothing waits on a dead child in silence.
    ``exit_status`` is what the tool exits with: the child's code, or 128+N for signal N."""

    def __init__(self, name: str, exit_code: int, log_tail: str = "", log_path: str = "") -> None:
        where = f" (log: {log_path})" if log_path else ""
        tail = f"; its last log lines:\n{log_tail}" if log_tail.strip() else ""
        super().__init__(f"{name} exited with code {exit_code}{where}{tail}")
        self.name = name
        self.exit_code = exit_code
        self.log_tail = log_tail

    @property
    def exit_status(self) -> int:
        if self.exit_code < 0:  # killed by a signal: the shell's 128+N
            return 128 - self.exit_code
        return self.exit_code if 0 < self.exit_code < 256 else 1


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
