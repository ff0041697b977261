"""The host directory trusts only what the app's own members wrote (issue 29, item 7).

Two instances on a real broker; an attacker with write access to ``counting-metadata`` (the
default PLAINTEXT listener, no ACLs) writes the issue's two records: ``web-2`` pointing at a
URL with a path and query on the attacker's own HTTP server, and ``web-2:notaport``; then a
well-formed ``host:port`` that is not signed, and one signed with another secret. None of them
may be forwarded to or break ``/v1/metadata``, ``/v1/instances`` or a key query.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from streamrt.rest.host_records import HostRecord, sign
from tests.kafka_helpers import create_topic, produce, wait_until
from tests.rest.instances import TOKEN, free_port, get, running, start_instance

pytestmark = pytest.mark.slow

TOPIC = "counting-metadata"


class _Attacker(BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_GET(self) -> None:
        _Attacker.seen.append(self.path)
        body = json.dumps({"store": "event-counts", "key": "x", "value": "pwned"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def attacker() -> Iterator[int]:
    _Attacker.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Attacker)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


def _unsigned(instance: str, server: str) -> tuple[bytes, bytes]:
    value = {"instance_id": instance, "application_server": server, "updated_ms": _now()}
    return instance.encode(), json.dumps(value).encode()


def _signed(secret: str, instance: str, server: str) -> tuple[bytes, bytes]:
    return instance.encode(), sign(secret, "counting", HostRecord(instance, server, _now()))


def _now() -> int:
    return int(time.time() * 1000) + 60_000  # newer than anything the instances wrote


def test_forged_and_malformed_hosts_are_ignored(
    broker_factory: Callable[..., object], tmp_path: Path, attacker: int
) -> None:
    broker = broker_factory({"group.min.session.timeout.ms": "1000"})
    bootstrap = broker.bootstrap  # type: ignore[attr-defined]
    create_topic(bootstrap, "events", 4)
    create_topic(bootstrap, "event-counts-out", 4)
    apps = [start_instance(bootstrap, tmp_path, f"web-{i}", threads=1) for i in (1, 2)]
    try:
        wait_until(lambda: running(*apps, partitions=4), 60, "both running")
        real = {a.instance_id: a.config.application_server for a in apps if a.config}
        wait_until(lambda: apps[0].queries.peer_hosts == real, 15, "web-1 knows both hosts")
        keys = [f"k{i}" for i in range(12)]
        remote = [k for k in keys if _owner(apps[0], k) == "web-2"]
        assert remote, "some key must live on web-2"
        produce(bootstrap, "events", [(k.encode(), b"e") for k in keys])

        produce(
            bootstrap,
            TOPIC,
            [
                _unsigned("web-2", f"127.0.0.1:{attacker}/internal/admin?via=:1"),
                _unsigned("web-2", "web-2:notaport"),
                _unsigned("web-2", f"127.0.0.1:{attacker}"),  # well-formed, not signed
                _signed("another-apps-secret", "web-2", f"127.0.0.1:{attacker}"),
                _signed(TOKEN, "web-9", f"127.0.0.1:{free_port()}"),  # a member's: the marker
            ],
            partition=0,
        )
        for app in apps:  # every record before the marker has been read
            wait_until(lambda app=app: "web-9" in app.queries.peer_hosts, 15, "the marker")
            assert app.queries.peer_hosts["web-2"] == real["web-2"]

        for app in apps:
            for path in ("/v1/metadata", "/v1/instances"):
                response = get(app, path)
                assert response.status_code == 200, (path, response.text)
            listed = get(app, "/v1/instances").json()["instances"]
            assert {i["instance_id"]: i["application_server"] for i in listed} == real
        for key in keys:  # local and forwarded key queries: the owner's answer
            answer = wait_until(lambda key=key: _count(apps[0], key), 30, f"count of {key}")
            assert answer["value"] == 1 and answer["instance_id"] == _owner(apps[0], key)
        assert _Attacker.seen == []
    finally:
        for app in apps:
            app.stop()


def _owner(app: object, key: str) -> str:
    owner = app.metadata_for_key("event-counts", key)  # type: ignore[attr-defined]
    assert owner is not None
    return str(owner.instance_id)


def _count(app: object, key: str) -> dict[str, object] | None:
    response = get(app, f"/v1/stores/event-counts/keys/{key}")  # type: ignore[arg-type]
    assert response.status_code in (200, 503), response.text
    body: dict[str, object] = response.json()
    return body if response.status_code == 200 and body["found"] else None
