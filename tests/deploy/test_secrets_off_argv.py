"""Secrets never on a child's command line; unknown ``STREAMRT_*`` variables never fatal (issue 42).

A ``streamrt run`` child started through the public deploy API (what ``streamrt deploy`` and
the demo use) with ``rest.auth.token`` and ``rest.directory.secret``: ``ps`` (its
``/proc/<pid>/cmdline``) shows neither, and the child has the token (its console offers
mutations, a wrong token is refused and the right one is not). Its environment also carries
a variable of streamrt's own tools and an unknown one: the child starts anyway, and names the
unknown one once in its log.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import httpx
import pytest

from streamrt.deploy.processes import InstanceSpec, LocalInstance
from tests.kafka_helpers import create_topic, wait_until
from tests.rest.instances import free_port

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]
REPO = Path(__file__).resolve().parents[2]
TOKEN = "tok-7f3a9c-never-in-argv"
SECRET = "dir-51b2e8-never-in-argv"
UNKNOWN = "STREAMRT_NOT_A_SETTING_AT_ALL"


def test_secrets_go_in_the_environment_and_unknown_variables_are_warned(
    broker, tmp_path: Path
) -> None:
    create_topic(broker.bootstrap, "events", 1)
    create_topic(broker.bootstrap, "event-counts-out", 1)
    port = free_port()
    spec = InstanceSpec(
        name="web-1",
        target="tests.runtime.counting_app:app",
        bootstrap=broker.bootstrap,
        state_dir=tmp_path / "state",
        threads=1,
        instance_id="web-1",
        log_path=tmp_path / "web-1.log",
        settings={
            "application.id": "counting",
            "session.timeout.ms": "8000",
            "rest.auth.token": TOKEN,
            "rest.directory.secret": SECRET,
        },
        cwd=REPO,
        env={UNKNOWN: "1", "STREAMRT_CACHE_DIR": str(tmp_path / "cache")},
        application_server=f"127.0.0.1:{port}",
    )
    instance = LocalInstance(spec)
    pid = instance.start()
    base = f"http://127.0.0.1:{port}"
    try:
        proc = Path(f"/proc/{pid}/cmdline")
        # right after the exec the kernel may still show an empty command line
        wait_until(lambda: b"--instance-id" in proc.read_bytes(), 30, "the child's command line")
        cmdline = proc.read_bytes()
        assert TOKEN.encode() not in cmdline and SECRET.encode() not in cmdline

        def answers() -> bool:
            assert instance.running, spec.log_path.read_text()[-3000:]
            try:
                return httpx.get(base + "/v1/console/settings", timeout=5).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(answers, 90, "the child's REST endpoint")
        assert httpx.get(base + "/v1/console/settings").json()["mutations_enabled"] is True
        remove = base + "/v1/members:remove"
        wrong = httpx.post(remove, json={}, headers={"Authorization": "Bearer nope"}, timeout=30)
        assert wrong.status_code == 403
        right = httpx.post(
            remove, json={}, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
        )
        assert right.status_code not in (401, 403), right.text
    finally:
        assert instance.stop(signal.SIGTERM) is not None
    lines = [json.loads(line) for line in spec.log_path.read_text().splitlines() if line[:1] == "{"]
    warned = [line for line in lines if UNKNOWN in str(line.get("msg"))]
    assert len(warned) == 1, warned
    assert not any("STREAMRT_CACHE_DIR" in str(line.get("msg")) for line in lines)
