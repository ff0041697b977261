"""Rebuilding a partition's producer state and start offset at open, and choosing segments
past retention.

Producer state (idempotent sequences, open transactions) and the aborted-transaction index
are restored from the last snapshot when it matches a segment boundary, then rebuilt from the
batch headers (and markers) after it, as Kafka's ``ProducerStateManager`` recovery does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from streamrt.broker.log.batch import BatchHeader
from streamrt.broker.log.control import parse_marker
from streamrt.broker.log.producer_state import ProducerStateManager
from streamrt.broker.log.segment import LogSegment
from streamrt.broker.log.storage_errors import CorruptMetadataError
from streamrt.broker.log.txn_index import TxnIndex

__all__ = (
    "PRODUCER_SNAPSHOT",
    "TXN_INDEX",
    "expired_segments",
    "load_producer_state",
    "read_start_offset",
)

PRODUCER_SNAPSHOT = "producer-state.json"
TXN_INDEX = "aborted-txns.json"


def load_producer_state(
    directory: Path, segments: Sequence[LogSegment]
) -> tuple[ProducerStateManager, TxnIndex]:
    """The producer state and aborted-transaction index as of the log end."""
    bases = [s.base_offset for s in segments]
    state = ProducerStateManager()
    start = segments[0].base_offset
    snapshot = ProducerStateManager.read_snapshot(directory / PRODUCER_SNAPSHOT)
    txn_index = TxnIndex()
    if snapshot is not None and (snapshot[0] == segments[-1].next_offset or snapshot[0] in bases):
        saved = TxnIndex.read(directory / TXN_INDEX, snapshot[0])
        if saved is not None:
            start, state = snapshot
            txn_index = saved
    for seg in segments:
        if seg.base_offset >= start:
            for h in seg.headers_from(0):
                if h.is_control:
                    _replay_marker(state, txn_index, seg, h)
                else:
                    state.load_batch(h)
    txn_index.drop_before(segments[0].base_offset)
    return state, txn_index


def _replay_marker(
    state: ProducerStateManager, txn_index: TxnIndex, seg: LogSegment, h: BatchHeader
) -> None:
    """Load-time twin of ``PartitionLog.append_marker`` (the ``.txnindex`` rebuild)."""
    marker = parse_marker(seg.pread(h.position, h.size))
    if marker is None or h.producer_id < 0:
        return
    aborted = state.complete_txn(
        h.producer_id, h.producer_epoch, h.base_offset, marker.commit, h.max_timestamp
    )
    if aborted is not None:
        txn_index.append(aborted)


def expired_segments(segments: Sequence[LogSegment], config: Mapping[str, Any], now_ms: int) -> int:
    """How many of the oldest non-active segments are past ``retention.ms`` or
    ``retention.bytes`` (-1: no limit)."""
    candidates = segments[:-1]
    by_time = 0
    retention_ms = config["retention.ms"]
    if retention_ms >= 0:
        while (
            by_time < len(candidates) and now_ms - candidates[by_time].max_timestamp > retention_ms
        ):
            by_time += 1
    by_size = 0
    retention_bytes = config["retention.bytes"]
    if retention_bytes >= 0:
        excess = sum(s.size for s in segments) - retention_bytes
        while by_size < len(candidates) and excess - candidates[by_size].size >= 0:
            excess -= candidates[by_size].size
            by_size += 1
    return max(by_time, by_size)


def read_start_offset(path: Path) -> int:
    """DeleteRecords' start offset; a damaged file stops the start-up, because reading it as 0
    would serve the deleted records again (it is written atomically, so a crash cannot tear
    it)."""
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return 0
    try:
        offset = int(text.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        offset = -1
    if offset < 0:
        raise CorruptMetadataError(
            path,
            f"expected a log start offset, got {text[:40]!r}",
            "restore it, or write the log start offset DeleteRecords last returned",
        )
    return offset
