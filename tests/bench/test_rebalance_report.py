"""The rebalance benchmark's verdict on its output, and what it prints when that output is
wrong (a CI run that fails there leaves nothing else behind)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from _rebalance_report import Observed, correctness, explain


def observed(counts: dict[str, list[int]]) -> Observed:
    events = [
        {"ts": 99.0, "type": "rebalance_complete", "thread_id": "i4-thread-1", "fields": {}},
        {"ts": 99.5, "type": "commit", "thread_id": "i1-thread-1", "fields": {}},
        {"ts": 100.5, "type": "restore_complete", "thread_id": "i4-thread-1", "fields": {}},
    ]
    return Observed(
        partitions=2,
        sent={"p0-k0": 4, "p1-k0": 3},
        arrivals={0: [], 1: []},
        counts=counts,
        events=events,
        t_change=100.0,
        t_end=110.0,
        baseline=3.0,
        before={"i1"},
    )


def test_duplicated_counts_are_counted_and_explained_key_by_key() -> None:
    o = observed({"p0-k0": [1, 2, 3, 2, 3, 4], "p1-k0": [1, 2, 3]})
    assert correctness(o) == (0, 2)
    text = explain(o)
    assert "p0-k0: sent 4, counts 1..3 2..4" in text
    assert "p1-k0" not in text  # exact keys are not listed
    assert "-1.000s i4-thread-1 rebalance_complete" in text
    assert "+0.500s i4-thread-1 restore_complete" in text
    assert "commit" not in text.replace("restore_complete", "")  # commits are left out
    o.held = {"p0-k0": 4, "p1-k0": 3}  # the input topic as read back: the app counted twice
    assert "p0-k0: sent 4, the input holds 4, counts 1..3 2..4" in explain(o)


def test_exact_output_has_nothing_wrong() -> None:
    o = observed({"p0-k0": [1, 2, 3, 4], "p1-k0": [1, 2, 3]})
    assert correctness(o) == (0, 0)
    assert "0 wrong key(s)" in explain(o)
