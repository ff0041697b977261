"""Run one ``bench/`` script as a user would, at a tiny size, and hand back what it printed.

Every benchmark in ``bench/`` has a test that runs it this way (issue 25: a benchmark that
only runs by hand stops working unnoticed, as ``bench/standby_failover.py`` did). The script
runs in its own process with this checkout first on ``PYTHONPATH``, as the commands in
``docs/benchmarks.md`` run it; a non-zero exit fails the test with the end of its output.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
BENCH_PYTHON = ROOT / ".venv-bench" / "bin" / "python"  # `make bench-venv`: Quix Streams


def run_bench(script: str, *args: str, cwd: Path, timeout: float = 120.0) -> str:
    """Run ``bench/<script>`` with ``args`` in ``cwd``; its stdout, or AssertionError."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        tail = (done.stdout[-3000:] + "\n--- stderr ---\n" + done.stderr[-8000:]).strip()
        raise AssertionError(f"bench/{script} exited {done.returncode}:\n{tail}")
    return done.stdout


def jvm_missing() -> str:
    """Why a JVM benchmark peer cannot run here ('' when java and mvn are both installed)."""
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    return f"{' and '.join(missing)} not installed" if missing else ""
