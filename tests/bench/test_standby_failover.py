"""bench/standby_failover.py at a tiny size: the survivor gets its task (the step that timed
out before the assignor fix, da7309d), the lost task is taken over with 0 and 1 standby, and
with a caught-up standby far less is restored than the whole changelog."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.bench.bench_run import run_bench

pytestmark = pytest.mark.slow

ROW = re.compile(r"^\| (\d) \| (\d+) \| ([\d.]+) \| ([\d.]+) \|", re.MULTILINE)


def test_standby_failover_takes_over_with_and_without_standby(tmp_path: Path) -> None:
    keys = 300
    printed = run_bench(
        "standby_failover.py", "--keys", str(keys), "--rate", "50", cwd=tmp_path, timeout=240
    )
    rows = {int(m[0]): (int(m[1]), float(m[2]), float(m[3])) for m in ROW.findall(printed)}
    assert set(rows) == {0, 1}, printed
    (restored_0, takeover_0, _gap_0), (restored_1, takeover_1, _gap_1) = rows[0], rows[1]
    assert restored_0 >= keys  # no standby: the whole changelog of the lost task comes back
    assert restored_1 < restored_0 / 2  # the standby had applied it before the kill
    assert takeover_0 > 0 and takeover_1 > 0
