"""An aborted transaction's window-store writes are dropped, stream time goes back (EOS)."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamrt.state.window_store import SegmentedStore, SegmentSpec, window_key


@pytest.mark.parametrize("persistent", [True, False], ids=["rocksdb", "in-memory"])
def test_discard_drops_staged_window_writes_and_stream_time(
    tmp_path: Path, persistent: bool
) -> None:
    store = SegmentedStore(
        "w", SegmentSpec(60_000, "start"), tmp_path / "w" if persistent else None
    )
    store.open()
    committed = window_key(b"k", 1_000, 2_000)
    store.put(committed, b"1")
    store.flush(7)
    time_at_commit = store.observed_stream_time
    aborted = window_key(b"k", 5_000, 6_000)
    store.put(aborted, b"2")
    store.put(committed, b"9")
    assert store.get(committed) == b"9"  # read-your-writes inside the transaction
    assert store.observed_stream_time == 5_000
    store.discard()
    assert store.get(committed) == b"1"
    assert store.get(aborted) is None
    assert store.observed_stream_time == time_at_commit
    store.flush(None)
    assert store.changelog_offset() == 7
    assert [e.start for e in store.fetch(b"k", 0, 10_000)] == [1_000]
    store.close()
