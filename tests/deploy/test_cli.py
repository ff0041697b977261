"""``streamrt deploy rolling`` as a user runs it, against an embedded broker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kafka_helpers import create_topic, produce

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


def test_deploy_rolling_restarts_static_instances_without_a_rebalance(
    broker, tmp_path: Path
) -> None:
    create_topic(broker.bootstrap, "events", 2)
    create_topic(broker.bootstrap, "event-counts-out", 2)
    produce(broker.bootstrap, "events", [(b"k%d" % i, b"v") for i in range(50)])
    timeline = tmp_path / "timeline.json"
    args = [sys.executable, "-m", "streamrt.cli", "deploy", "rolling"]
    args += ["tests.runtime.counting_app:app", "--application-id", "counting"]
    args += ["--bootstrap-server", broker.bootstrap, "--instances", "2", "--threads", "1"]
    args += ["--state-dir", str(tmp_path / "state"), "--timeline-json", str(timeline)]
    # a restart on a loaded machine (a CI run at load 20-37) can take longer than 8 s: the
    # session outlasts it, so only a missed static rejoin could cost a rebalance
    args += ["--config", "session.timeout.ms=30000", "--config", "heartbeat.interval.ms=500"]
    done = subprocess.run(
        args, capture_output=True, text=True, timeout=120, cwd=REPO, env={**os.environ}
    )
    assert done.returncode == 0, done.stderr
    assert "restart 2/2: SIGTERM" in done.stdout
    result = json.loads(timeline.read_text())
    assert [s["instance"] for s in result["steps"]] == ["instance-1", "instance-2"]
    assert all(s["exit_code"] == 0 and s["running"] >= s["started"] for s in result["steps"])
    assert result["rebalances"] == 0
    assert result["restored_records"] == 0
