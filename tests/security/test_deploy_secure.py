"""The deploy driver against a secured cluster: every client it creates (topic creation, load
generator, event tail, lag and output readers) and every ``streamrt run`` instance it starts
authenticates with SCRAM over TLS, configured once with Kafka's names; the password is on no
command line and in no log, event or report the driver writes."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from streamrt.broker.embedded import BrokerThread
from streamrt.client_config import ClientConfig
from streamrt.deploy import ScenarioConfig, run_scenario
from streamrt.deploy.processes import InstanceSpec, write_client_properties
from streamrt.deploy.scenario import BROKER_OVERRIDES
from tests.kafka_helpers import create_topic, produce, read_all
from tests.security.conftest import USERS, Pki, _users, address, secure_overrides

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
SECRET = USERS["bob"]


def _client(pki: Pki) -> dict[str, str]:
    return {
        "security.protocol": "SASL_SSL",
        "ssl.truststore.location": str(pki.ca),
        "ssl.truststore.type": "PEM",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="bob" password="{SECRET}";',
    }


@pytest.fixture
def deploy_broker(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    """A fresh secured broker with the deploy scenario's group settings (topics are fixed)."""
    data_dir = tmp_path_factory.mktemp("deploy-secure-broker")
    _users(data_dir)
    with BrokerThread(data_dir, secure_overrides(pki, **BROKER_OVERRIDES)) as broker:
        yield broker


def _files_without_secret(root: Path, allowed: set[Path]) -> list[Path]:
    """Every regular file under ``root`` but ``allowed``, checked for the password; returns the
    files looked at (so the test can show it looked at logs at all)."""
    seen = []
    for path in root.rglob("*"):
        if path.is_file() and path not in allowed:
            assert SECRET.encode() not in path.read_bytes(), f"password in {path}"
            seen.append(path)
    return seen


def test_rolling_deploy_over_sasl_ssl(deploy_broker, pki: Pki, tmp_path: Path) -> None:
    cfg = ScenarioConfig(
        work_dir=tmp_path / "run",
        instances=2,
        threads=2,
        partitions=4,
        users=500,
        rate=100,
        baseline_seconds=1.0,
        after_seconds=1.0,
        timeout=120,
        # restarts start slowly on a loaded machine: the member must outlive them
        session_timeout_ms=30_000,
        bootstrap=address(deploy_broker, "SASL_SSL"),  # the driver knows no other listener
        client=_client(pki),
    )
    report = run_scenario(cfg)
    assert [s.exit_code for s in report.timeline.steps] == [0, 0]
    assert report.rebalances == 0  # static members rolled without a rebalance
    assert report.restored_records == 0
    assert report.correctness.ok and report.correctness.users == 500
    assert report.records_out == report.records_in > 500

    client_file = cfg.work_dir / "client-config.json"
    assert stat.S_IMODE(client_file.stat().st_mode) == 0o600
    (cfg.work_dir / "report.json").write_text(json.dumps(report.to_json()))
    seen = _files_without_secret(cfg.work_dir, {client_file})
    logs = [p for p in seen if p.parent == cfg.work_dir / "logs"]
    assert len(logs) == 2 and all(p.stat().st_size > 0 for p in logs)
    assert "[hidden]" in (cfg.work_dir / "report.json").read_text()
    events = read_all(address(deploy_broker, "PLAINTEXT"), "sessions-events")
    assert len(events) > 10  # the instances published their events over SASL_SSL
    assert all(SECRET.encode() not in (r.value or b"") for r in events)


def test_instances_get_the_properties_in_a_private_file_not_on_the_command_line(
    pki: Pki, tmp_path: Path
) -> None:
    client = ClientConfig.from_properties(_client(pki))
    path = write_client_properties(tmp_path / "client.json", client)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == _client(pki)
    spec = InstanceSpec(
        name="i",
        target="apps.sessions:app",
        bootstrap="127.0.0.1:1",
        state_dir=tmp_path,
        threads=1,
        instance_id="i",
        log_path=tmp_path / "i.log",
        client_config_file=path,
    )
    command = spec.command()
    assert command[command.index("--config-file") + 1] == str(path)
    assert not any(SECRET in part for part in command)


def test_deploy_rolling_cli_takes_command_config(deploy_broker, pki: Pki, tmp_path: Path) -> None:
    plain = address(deploy_broker, "PLAINTEXT")
    create_topic(plain, "events", 2)
    create_topic(plain, "event-counts-out", 2)
    produce(plain, "events", [(b"k%d" % i, b"v") for i in range(50)])
    props = tmp_path / "client.properties"
    props.write_text("".join(f"{k}={v}\n" for k, v in _client(pki).items()))
    timeline = tmp_path / "timeline.json"
    state = tmp_path / "state"
    args = [sys.executable, "-m", "streamrt.cli", "deploy", "rolling"]
    args += ["tests.runtime.counting_app:app", "--application-id", "counting"]
    args += ["--bootstrap-server", address(deploy_broker, "SASL_SSL")]
    args += ["--command-config", str(props), "--instances", "2", "--threads", "1"]
    args += ["--state-dir", str(state), "--timeline-json", str(timeline)]
    args += ["--config", "session.timeout.ms=30000", "--config", "heartbeat.interval.ms=1000"]
    done = subprocess.run(
        args, capture_output=True, text=True, timeout=180, cwd=REPO, env={**os.environ}
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(timeline.read_text())
    assert all(s["exit_code"] == 0 for s in result["steps"])
    assert result["rebalances"] == 0
    assert SECRET not in done.stdout + done.stderr
    _files_without_secret(state, {state / "client-config.json"})
    counts = read_all(plain, "event-counts-out")
    assert {r.key for r in counts} == {b"k%d" % i for i in range(50)}
