"""bench/coordinator_static.py at a tiny size: the group forms and a rolling bounce of every
static member causes no rebalance (the script exits 1 otherwise)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench.bench_run import run_bench

pytestmark = pytest.mark.slow


def test_coordinator_static_bounce_without_rebalance(tmp_path: Path) -> None:
    args = ["--members", "20", "--seconds", "0.5", "--initial-delay-ms", "0"]
    result = json.loads(run_bench("coordinator_static.py", *args, cwd=tmp_path, timeout=120))
    assert result["members"] == 20
    assert result["rebalances_during_bounce"] == 0
    assert result["heartbeat_errors"] == {}
    assert result["heartbeat_errors_during_bounce"] == {}
    assert result["generation_after_bounce"] == result["generation_after_formation"]
