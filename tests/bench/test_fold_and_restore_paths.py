"""bench/session_fold_path.py and bench/restore_path.py at a tiny size: the fold sends a
changelog and a sink record per click (the script asserts it) and the restore writes every
record; both print their rates."""

from __future__ import annotations

from pathlib import Path

from tests.bench.bench_run import run_bench


def test_the_session_fold_path_runs(tmp_path: Path) -> None:
    out = run_bench("session_fold_path.py", "500", "2", cwd=tmp_path)
    assert "500 clicks x 2: median" in out, out


def test_the_restore_path_runs(tmp_path: Path) -> None:
    out = run_bench("restore_path.py", "600", "2", cwd=tmp_path)
    assert "600 records x 2, process: median" in out, out
    assert "600 records x 2, thread: median" in out, out
