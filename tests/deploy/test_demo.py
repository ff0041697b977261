"""``streamrt demo``, the README's first command, at a tiny size through the real CLI: its
static (classic and streams group protocol) and dynamic deploys are also the suite's
end-to-end check of each (their reports, from ``--json``), so
tests/deploy/test_rolling_scenario.py does not run them again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def test_demo_runs_the_deploys_and_prints_them_side_by_side(tmp_path: Path) -> None:
    sizes = ["--instances", "2", "--threads", "1", "--partitions", "4", "--users", "300"]
    sizes += ["--rate", "50", "--restart-delay", "0.5"]
    # Kafka's default session timeout: a restart on a loaded machine (CI beside a CPU hog) can
    # take longer than the demo's 10 s, and the static column would then rebalance.
    sizes += ["--session-timeout-ms", "45000"]
    where = ["--work-dir", str(tmp_path), "--json", str(tmp_path / "r.json")]
    where += ["--console-port", "0"]  # the default 8070 may be taken (another test, a user)
    out = subprocess.run(
        [sys.executable, "-m", "streamrt.cli", "demo", *sizes, *where],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    lines = out.stdout.splitlines()
    table = lines[lines.index(next(x for x in lines if x.startswith("== side by side"))) + 1 :]
    header = ["streamrt", "static", "streamrt", "static,", "streams", "protocol"]
    header += ["streamrt", "handoff", "streamrt", "static", "EOS"]
    assert table[0].split() == [*header, "streamrt", "dynamic"]
    rows = {line[:30].strip(): line[30:].split() for line in table[1:] if line.strip()}
    assert rows["rebalances during deploy"][:4] == ["0", "0", "0", "0"]
    assert int(rows["rebalances during deploy"][4]) >= 1
    assert rows["counted by the broker"][:4] == ["0", "0", "0", "0"]
    # static, classic or streams protocol: every instance got its own tasks back, restoring
    # nothing, and neither survivor was touched while the other restarted
    assert rows["tasks moved"][:2] == ["0", "0"]
    assert rows["records restored"][1:4] == ["0", "0", "0"]
    assert rows["survivors not reconciled"][:2] == ["2/2", "2/2"]
    assert rows["output correct"] == ["yes"] * 5
    assert any(x.startswith("streamrt handoff: each new process started up") for x in lines)
    assert any(x.startswith("streamrt static: nothing moved") for x in lines)
    assert any(x.startswith("streamrt static, streams protocol: nothing moved") for x in lines)
    assert any(x.startswith("console: http://127.0.0.1:") for x in lines)
    reports = {r["contender"]: r for r in json.loads((tmp_path / "r.json").read_text())}
    static, dynamic = reports["streamrt static"], reports["streamrt dynamic"]
    streams = reports["streamrt static, streams protocol"]
    # the streams-protocol deploy: its instances were streams-group members (the broker saw
    # the group: its epoch was read before and after), nothing moved, every user right
    assert streams["settings"]["group_protocol"] == "streams"
    assert streams["coordinator_rebalances"] == streams["tasks_moved"] == 0
    assert streams["restored_bytes"] == 0
    assert streams["survivors_not_reconciled"] == streams["survivors"] == 2
    assert [s["exit_code"] for s in streams["timeline"]["steps"]] == [0, 0]
    assert streams["correctness"]["ok"] and streams["correctness"]["users"] == 300
    # static: every instance replaced cleanly (a SIGTERM commits: nothing processed twice),
    # the broker agrees nothing rebalanced, and the leader's instance was among those restarted
    assert [s["exit_code"] for s in static["timeline"]["steps"]] == [0, 0]
    assert static["coordinator_rebalances"] == static["restored_bytes"] == 0
    assert static["correctness"]["over"] == 0
    assert static["records_out"] == static["records_in"] > 100
    assert static["leader"]["instance_id"] in ("instance-1", "instance-2")
    assert static["leader"]["restart_step"] == int(static["leader"]["instance_id"][-1])
    # dynamic: the rebalances the broker counted, generations only going up, every user right
    assert dynamic["coordinator_rebalances"] == dynamic["rebalances"] >= 1
    assert dynamic["generations"] == sorted(dynamic["generations"])
    assert dynamic["correctness"]["ok"] and dynamic["correctness"]["users"] == 300
    assert any(x.startswith("console: http://127.0.0.1:") for x in lines)
