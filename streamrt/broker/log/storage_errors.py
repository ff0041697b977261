"""Turning a failed disk operation into Kafka's ``KAFKA_STORAGE_ERROR`` (code 56).

A full disk (``ENOSPC``) or an I/O error while appending must reach the client as the retriable
storage error Kafka answers, not as ``UNKNOWN_SERVER_ERROR``; the segment has already cut back
any partial write, so nothing acknowledged is affected and a retry may succeed once space frees.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

from streamrt.errors import ErrorCode, KafkaError
from streamrt.logs import fields

__all__ = ("storage_errors",)

logger = logging.getLogger(__name__)


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
