"""Health and alerting for a poison record: /healthz 503 with the reason, Prometheus
metrics, and ``streamrt run`` exiting with its documented code once the instance is in ERROR."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from streamrt.rest.wiring import attach_rest
from streamrt.run import EXIT_APP_ERROR
from streamrt.runtime import AppState
from tests.kafka_helpers import create_topic, produce, wait_until
from tests.rest.instances import free_port
from tests.runtime.poison_app import make_app

RECORDS = [(b"a", b'{"amount": 1}'), (b"p", b'{"x": 1}'), (b"c", b'{"amount": 3}')]
FAST_RETRY = {
    "errors.retry.backoff.ms": "100",
    "errors.retry.backoff.max.ms": "200",
    "errors.retry.max.attempts": "2",
    "session.timeout.ms": "6000",
    "heartbeat.interval.ms": "500",
    "commit.interval.ms": "200",
}


def setup(bootstrap: str) -> None:
    create_topic(bootstrap, "orders", 1)
    create_topic(bootstrap, "doubled", 1)
    produce(bootstrap, "orders", RECORDS)


def metric(text: str, name: str) -> dict[str, float]:
    """``{labels: value}`` of one metric family in Prometheus text."""
    out = {}
    for line in text.splitlines():
        if line.startswith(name + "{"):
            labels, _, value = line[len(name) :].rpartition(" ")
            out[labels] = float(value)
    return out


def test_fail_handler_turns_healthz_503_with_the_reason_and_metrics_say_why(
    broker, tmp_path: Path
) -> None:
    setup(broker.bootstrap)
    port = free_port()
    app = make_app(
        {
            "bootstrap.servers": broker.bootstrap,
            "state.dir": str(tmp_path),
            "application.server": f"127.0.0.1:{port}",
            **FAST_RETRY,
        }
    )
    attach_rest(app)
    app.start()
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: app.state is AppState.ERROR, what="ERROR")
        r = httpx.get(base + "/healthz")
        assert r.status_code == 503
        body = r.json()
        assert body["error"] == "FATAL_ERROR"
        assert body["message"].startswith("ERROR: ")
        assert "orders-0@1" in body["message"] and "KeyError" in body["message"]
        text = httpx.get(base + "/metrics").text
        assert list(metric(text, "streamrt_thread_failures_total").values()) == [3.0]
        states = metric(text, "streamrt_app_state")
        assert [k for k, v in states.items() if v == 1.0] == [
            f'{{instance_id="{app.instance_id}",state="ERROR"}}'
        ]
    finally:
        app.stop()


def test_continue_handler_counts_skipped_records_in_metrics(broker, tmp_path: Path) -> None:
    setup(broker.bootstrap)
    port = free_port()
    app = make_app(
        {
            "bootstrap.servers": broker.bootstrap,
            "state.dir": str(tmp_path),
            "application.server": f"127.0.0.1:{port}",
            "processing.exception.handler": "continue",
            **FAST_RETRY,
        }
    )
    attach_rest(app)
    app.start()
    base = f"http://127.0.0.1:{port}"
    try:
        skipped = "streamrt_records_skipped_total"
        wait_until(lambda: metric(httpx.get(base + "/metrics").text, skipped), what="a skip")
        text = httpx.get(base + "/metrics").text
        assert metric(text, skipped) == {
            f'{{handler="continue",instance_id="{app.instance_id}",stage="processing"}}': 1.0
        }
        assert list(metric(text, "streamrt_thread_failures_total").values()) == [0.0]
        assert httpx.get(base + "/healthz").status_code == 200
    finally:
        app.stop()


def test_streamrt_run_exits_with_the_error_code_when_a_record_keeps_failing(
    broker, tmp_path: Path
) -> None:
    setup(broker.bootstrap)
    args = [
        sys.executable,
        "-m",
        "streamrt.cli",
        "run",
        "tests.runtime.poison_app:app",
        "--bootstrap-server",
        broker.bootstrap,
        "--state-dir",
        str(tmp_path),
        "--no-events-topic",
    ]
    for key, value in FAST_RETRY.items():
        args += ["--config", f"{key}={value}"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == EXIT_APP_ERROR == 4, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("streamrt: error: the instance ended in ERROR")
    assert "orders-0@1" in last and "giving up" in last


def test_streamrt_run_takes_application_server_from_config(broker, tmp_path: Path) -> None:
    """``--config application.server=...`` alone attaches the REST endpoint: a flag that is
    not given must not erase what --config said (it did: the endpoint never came up)."""
    create_topic(broker.bootstrap, "events", 1)
    create_topic(broker.bootstrap, "event-counts-out", 1)
    port = free_port()
    args = [
        sys.executable,
        "-m",
        "streamrt.cli",
        "run",
        "tests.runtime.counting_app:app",
        "--bootstrap-server",
        broker.bootstrap,
        "--state-dir",
        str(tmp_path),
        "--no-events-topic",
        "--config",
        f"application.server=127.0.0.1:{port}",
        "--config",
        "group.instance.id=from-config",
    ]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen(args, env=env, stderr=subprocess.PIPE, text=True)
    try:

        def threads() -> object:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/v1/threads", timeout=2)
            except httpx.HTTPError:
                return None
            return r.status_code == 200 and r.json()

        listed = wait_until(threads, 90, "the REST endpoint from --config")
        assert [t["group_instance_id"] for t in listed] == ["from-config-thread-1"]
    finally:
        proc.terminate()
        proc.wait(30)
