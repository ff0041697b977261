"""Scale-in by removal on ``group.protocol=streams``: two ``streamrt run`` processes (static
members of a KIP-1071 streams group on the embedded broker, the counting app over 8
partitions), one stopped with SIGTERM keeps its tasks at member epoch -2, ``streamrt instances
remove`` sends one LeaveGroup by instance id through the survivor's REST endpoint, and the
survivor takes the tasks over at its next heartbeat, long before the session timeout, and the
counts stay exact.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from streamrt.admin.connection import BrokerConnection
from streamrt.cli import main as cli_main
from streamrt.wire.api_keys import ApiKey
from tests.kafka_helpers import produce, wait_until
from tests.rest.instances import free_port
from tests.runtime.test_membership_integration import counts, events, expected, setup_topics
from tests.runtime.test_streams_protocol_integration import plus

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TOKEN = "removal-token"
SESSION_MS = 120_000  # far beyond every wait below: a takeover here is never an expiry
BROKER = {
    "group.streams.session.timeout.ms": str(SESSION_MS),
    "group.streams.heartbeat.interval.ms": "1000",
}


def run_instance(bootstrap: str, state: Path, instance: str, port: int) -> subprocess.Popen[str]:
    args = [sys.executable, "-m", "streamrt.cli", "run", "tests.runtime.counting_app:app"]
    args += ["--instance-id", instance, "--bootstrap-server", bootstrap]
    args += ["--state-dir", str(state / instance)]
    for key, value in {
        "group.protocol": "streams",
        "commit.interval.ms": "200",
        "application.server": f"127.0.0.1:{port}",
        "rest.auth.token": TOKEN,
    }.items():
        args += ["--config", f"{key}={value}"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
    )


def members(port: int) -> dict[str, tuple[int, set[int]]]:
    """The broker's view: instance id -> (member epoch, active tasks' partitions)."""

    async def go() -> Any:
        conn = await BrokerConnection.open("127.0.0.1", port)
        try:
            return await conn.call(
                ApiKey.STREAMS_GROUP_DESCRIBE,
                group_ids=["counting"],
                include_authorized_operations=False,
            )
        finally:
            await conn.close()

    (group,) = asyncio.run(go()).groups
    return {
        str(m.instance_id): (
            int(m.member_epoch),
            {p for t in m.assignment.active_tasks for p in t.partitions},
        )
        for m in group.members
    }


def tasks(port: int) -> dict[str, set[int]]:
    return {instance: active for instance, (_, active) in members(port).items()}


def test_a_stopped_static_instance_is_removed_and_the_survivor_takes_its_tasks(
    broker_factory: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broker = broker_factory(BROKER)
    setup_topics(broker.bootstrap)
    produce(broker.bootstrap, "events", events(160))
    port = free_port()
    survivor = run_instance(broker.bootstrap, tmp_path, "web-1", port)
    gone = run_instance(broker.bootstrap, tmp_path, "web-2", free_port())
    try:
        wait_until(
            lambda: sorted(len(t) for t in tasks(broker.port).values()) == [4, 4],
            60,
            "two instances with 4 tasks each",
        )
        wait_until(lambda: counts(broker.bootstrap) == expected(160), 60, "first counts")
        kept = tasks(broker.port)["web-1-thread-1"]

        # -- stop web-2: a static member leaves with epoch -2, its tasks wait for it ----------
        gone.send_signal(signal.SIGTERM)
        assert gone.wait(60) == 0, gone.stderr.read() if gone.stderr else ""
        wait_until(lambda: members(broker.port)["web-2-thread-1"][0] == -2, 30, "epoch -2")
        assert tasks(broker.port)["web-2-thread-1"] == set(range(8)) - kept
        produce(broker.bootstrap, "events", events(80))
        time.sleep(3)  # three heartbeats of the survivor: nothing moves without the removal
        assert tasks(broker.port)["web-1-thread-1"] == kept

        # -- remove its members through the survivor's REST endpoint ---------------------------
        began = time.monotonic()
        url = f"http://127.0.0.1:{port}"
        exit_code = cli_main(
            ["instances", "remove", "--url", url, "--instance", "web-2", "--token", TOKEN]
        )
        assert capsys.readouterr().out == "web-2-thread-1: removed\n"
        assert exit_code == 0
        wait_until(
            lambda: tasks(broker.port) == {"web-1-thread-1": set(range(8))},
            60,
            "the survivor owns the 8 tasks",
        )
        took = time.monotonic() - began
        print(f"survivor took the 8 tasks {took:.1f} s after the removal")
        assert took < SESSION_MS / 1000  # by the removal, not by an expiry
        wait_until(
            lambda: counts(broker.bootstrap) == plus(160, 80), 60, "exact counts after scale-in"
        )
    finally:
        for proc in (survivor, gone):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(60)
