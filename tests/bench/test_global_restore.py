"""bench/global_restore.py at a tiny size: the global thread restores every record (the script
asserts the store's size) and the timing line names the tree's thread."""

from __future__ import annotations

from pathlib import Path

from tests.bench.bench_run import run_bench


def test_global_restore_runs_and_restores_every_record(tmp_path: Path) -> None:
    out = run_bench("global_restore.py", "--records", "1000", "--runs", "2", cwd=tmp_path)
    assert "streamrt.runtime.engine.thread.global_thread: 1000 records, restore s" in out, out
