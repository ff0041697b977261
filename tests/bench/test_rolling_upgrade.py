"""bench/rolling_upgrade.py at a tiny size: a group formed by the previous release's aiokafka
membership (47f9438, its tree from ``git archive``) is upgraded one instance at a time to this
checkout with no rebalance, no record restored and none lost; the old key is refused at
start-up without touching the group. Guards the upgrade path (user data, checkpoints, offsets,
static ids) against later changes to any of them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.bench.bench_run import ROOT, run_bench

pytestmark = pytest.mark.slow

PREV = "47f94382c10639e943961ee5827349da248ffdb1"
TINY = ["--instances", "2", "--partitions", "2", "--keys", "20", "--rate", "50"]
TINY += ["--baseline-seconds", "1", "--after-seconds", "1", "--timeout", "120"]


def _has_prev() -> bool:
    found = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", f"{PREV}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    return found.returncode == 0


@pytest.mark.skipif(not _has_prev(), reason=f"no {PREV[:7]} in this clone (shallow?)")
def test_an_upgrade_from_aiokafka_membership_keeps_the_group_and_every_record(
    tmp_path: Path,
) -> None:
    out = tmp_path / "runs.json"
    args = ["--from", "aiokafka", "--guarantees", "at_least_once", *TINY]
    args += ["--work-dir", str(tmp_path / "work"), "--json", str(out)]
    printed = run_bench("rolling_upgrade.py", *args, cwd=tmp_path, timeout=240)
    (run,) = json.loads(out.read_text())
    assert run["inputs"] > 0 and run["lost"] == 0 and run["keys_short"] == 0, printed
    assert run["members_before"] == run["members_after"], run  # same static members
    assert run["rebalances"] == 0 and run["thread_generations"] == 0, run
    assert run["restored_records"] == 0, run  # the old release's state dirs were kept
    check = run["old_key_check"]
    assert check["exit_code"] not in (0, None), check
    assert "stream.thread.membership no longer exists" in check["message"], check
    assert not check["group_rebalanced"], check
