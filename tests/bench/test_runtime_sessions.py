"""bench/runtime_sessions.py at a tiny size: the sessions app processes every click, then a
lost state directory is restored in full from the changelog and fetched bare for the ratio."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.bench.bench_run import run_bench

pytestmark = pytest.mark.slow


def test_runtime_sessions_processes_and_restores_everything(tmp_path: Path) -> None:
    printed = run_bench(
        "runtime_sessions.py", "--users", "200", "--clicks", "1000", cwd=tmp_path, timeout=180
    )
    restored = re.search(r"full restore: ([\d,]+) records", printed)
    fetched = re.search(r"bare aiokafka fetch of the changelog: ([\d,]+) records", printed)
    assert restored and fetched, printed
    # one changelog record per click (the active segment is not compacted): all of them back
    assert int(restored.group(1).replace(",", "")) >= 200
    assert int(fetched.group(1).replace(",", "")) == 1000
    assert "sessions app, 1 stream thread" in printed
