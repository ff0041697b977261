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
    # faust is at-least-once: a restart may count a click twice, never lose one
    assert correctness["ok"], correctness
    assert correctness["users"] > 0 and correctness["missing"] == 0
    assert report["records_out"] >= report["records_in"] > 0
