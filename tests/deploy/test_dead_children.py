"""Nothing waits on a dead child: the demo and ``streamrt deploy rolling`` stop as soon as an
instance exits, with its name, its exit code and the last lines of its log (issue 41)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from streamrt.broker.embedded import BrokerThread
from streamrt.deploy import EventTail, InstanceSpec, LocalInstance, wait_all_running
from streamrt.errors import ChildExited

REPO = Path(__file__).resolve().parents[2]
# Generous: a dead child is noticed within a poll (0.1 s); the bound is the process start-up
# on a loaded 2-core machine, and it is far below the waits' own timeouts (600 s, 300 s).
BOUND_S = 120


def test_demo_stops_with_the_instance_s_code_and_log_when_its_instances_die(
    tmp_path: Path,
) -> None:
    """A bad ``SESSIONS_STARTUP_DELAY`` makes the sessions app fail at import, as a broken
    deploy would: every instance exits 1 at once, and the demo must say so and stop."""
    args = [sys.executable, "-m", "streamrt.cli", "demo", "--users", "50", "--instances", "2"]
    args += ["--threads", "1", "--partitions", "2", "--static-only", "--no-handoff", "--no-eos"]
    args += ["--console-port", "-1", "--work-dir", str(tmp_path)]
    env = {**os.environ, "SESSIONS_STARTUP_DELAY": "not-a-number"}
    done = subprocess.run(
        args, capture_output=True, text=True, timeout=BOUND_S, cwd=tmp_path, env=env
    )
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert re.search(r"instance-\d exited with code 1 \(log: .*instance-\d\.log\)", done.stderr)
    # the log's tail: the child's own error line
    assert "could not convert string to float: 'not-a-number'" in done.stderr, done.stderr
    assert "side by side" not in done.stdout


def test_deploy_rolling_stops_with_a_bad_app_s_exit_code_and_log(
    broker: BrokerThread, tmp_path: Path
) -> None:
    args = [sys.executable, "-m", "streamrt.cli", "deploy", "rolling", "no_such_app:app"]
    args += ["--application-id", "nope", "--bootstrap-server", broker.bootstrap]
    args += ["--instances", "2", "--threads", "1", "--state-dir", str(tmp_path / "state")]
    done = subprocess.run(args, capture_output=True, text=True, timeout=BOUND_S, cwd=tmp_path)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    # whichever of the two is seen dead first
    assert re.search(r"instance-[12] exited with code 1 \(log: ", done.stderr), done.stderr
    assert "No module named 'no_such_app'" in done.stderr


def test_a_killed_instance_ends_the_wait_with_its_signal(
    broker: BrokerThread, tmp_path: Path
) -> None:
    """SIGKILL before it is RUNNING: the wait raises at once (not after its 300 s timeout), and
    the tool would exit 128+9 as a shell reports a killed process."""
    spec = InstanceSpec(
        name="instance-7",
        target="streamrt.examples.wordcount:app",
        bootstrap=broker.bootstrap,
        state_dir=tmp_path / "state",
        threads=1,
        instance_id="instance-7",
        log_path=tmp_path / "instance-7.log",
        cwd=tmp_path,
    )
    instance = LocalInstance(spec)
    with EventTail(broker.bootstrap, "wordcount") as tail:
        pid = instance.start()
        try:
            os.kill(pid, signal.SIGKILL)  # as the OOM killer would: not a stop the driver asked
            began = time.monotonic()
            with pytest.raises(ChildExited) as caught:
                wait_all_running(tail, [instance], threads=1, timeout=300)
            assert time.monotonic() - began < BOUND_S  # noticed, not timed out
        finally:
            instance.stop(signal.SIGKILL)
    assert caught.value.name == "instance-7"
    assert caught.value.exit_code == -signal.SIGKILL
    assert caught.value.exit_status == 128 + signal.SIGKILL
    assert "instance-7 exited with code -9" in str(caught.value)
