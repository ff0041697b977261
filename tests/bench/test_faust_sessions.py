"""bench/faust_sessions.py (the rolling deploy's faust-streaming contender) at a tiny size:
the deploy driver restarts its workers and the report verifies every user's profile. Skipped
when faust-streaming is not installed (it is the `faust` extra)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.bench.test_rolling_deploy import deploy

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("faust") is None,
        reason="faust-streaming not installed (pip install -e '.[faust]')",
    ),
]


def test_faust_contender_deploys_and_is_verified(tmp_path: Path) -> None:
    (report,) = deploy(tmp_path, "faust", timeout=240).values()
    correctness = report["correctness"]
    assert isinstance(correctness, dict)
    # every user judged: exact, over (at-least-once counted a click twice) or under. faust
    # itself lost a click now and then across its restarts (1 of 300 users in a CI run here; 1 of
    # 100,000 in docs/bench/history.md's rolling deploy), so the contender's own losses are
    # reported, not failed; the harness's verdict on streamrt is held exact elsewhere
    assert correctness["users"] > 0 and correctness["missing"] == 0
    judged = correctness["exact"] + correctness["over"] + correctness["under"]
    assert judged == correctness["users"], correctness
    assert correctness["under"] <= correctness["users"] // 50, correctness
    assert report["records_out"] >= report["records_in"] > 0
