"""Turning a failed disk operation into Kafka's ``KAFKA_STORAGE_ERROR`` (code 56).

A full disk (``ENOSPC``) or an I/O error while appending must reach the client as the retriable
storage error Kafka answers, not as ``UNKNOWN_SERVER_ERROR``; the segment has already cut back
any partial write, so nothing acknowledged is affected and a retry may succeed once space frees.
A damaged file the broker cannot start safely without is :class:`CorruptMetadataError`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

from streamrt.errors import ErrorCode, KafkaError, StreamrtError
from streamrt.logs import fields

__all__ = ("CorruptMetadataError", "storage_errors")

logger = logging.getLogger(__name__)

_DROP_TOPIC = (
    "restore it, or move it away to drop the topic; its partition directories are then kept "
    "aside as -stray"
)


class CorruptMetadataError(StreamrtError):
    """A metadata file cannot be read; the message names it, what is wrong and what to do. The
    broker refuses to start rather than guess what the file said."""

    def __init__(self, path: Path, problem: str, remedy: str = _DROP_TOPIC) -> None:
        super().__init__(f"corrupt metadata file {path}: {problem} ({remedy})")
        self.path = path


@contextlib.contextmanager
def storage_errors(
    directory: Path, on_error: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Re-raise an ``OSError`` of the block as ``KafkaError(KAFKA_STORAGE_ERROR)``, telling
    ``on_error`` the reason first."""
    try:
        yield
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if on_error is not None:
            on_error(reason)
        logger.error("log write failed", extra=fields(path=str(directory), error=reason))
        raise KafkaError(
            ErrorCode.kafka_storage_error, f"cannot write to {directory.name}: {reason}"
        ) from exc
