"""The checkpoint hint file: store → changelog offset, beside a task's stores.

The offset inside each store's own WriteBatch stays the truth for restoration; this file is a
hint readable without opening (and locking) the stores, as Kafka Streams' ``.checkpoint``, so
the assignor can prefer the instance that already holds a task's state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

__all__ = ("CHECKPOINT_HINT", "read_checkpoint_hint", "write_checkpoint_hint")

CHECKPOINT_HINT = ".checkpoint"


def write_checkpoint_hint(directory: Path, offsets: Mapping[str, int | None]) -> None:
    """Written after the stores were flushed, so it never claims more than they hold."""
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / (CHECKPOINT_HINT + ".tmp")
    tmp.write_text(json.dumps({k: v for k, v in offsets.items() if v is not None}))
    tmp.replace(directory / CHECKPOINT_HINT)


def read_checkpoint_hint(directory: Path) -> dict[str, int]:
    """The offsets last written by :func:`write_checkpoint_hint`; empty if none or unreadable."""
    try:
        raw = json.loads((directory / CHECKPOINT_HINT).read_text())
        return {str(k): int(v) for k, v in raw.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}
