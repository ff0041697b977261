"""Slow clients (issue 42): late headers and late bodies are cut off, the server keeps answering.

Raw sockets, as an attacker sends them: a partial request line and nothing more (before
``rest.header.timeout.ms`` the server kept such connections open forever), and headers
announcing a body of which only a part comes (``rest.body.timeout.ms``).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from streamrt.runtime import App
from tests.kafka_helpers import create_topic, wait_until
from tests.rest.instances import TOKEN, running, start_instance, url

pytestmark = pytest.mark.slow

TIMEOUT_MS = 1000
SLOW = 20
DEADLINE_S = 30.0  # generous on a loaded machine: the point is "closed", not "how fast"


@pytest.fixture
def instance(broker_factory: Callable[..., object], tmp_path: Path) -> Iterator[App]:
    bootstrap = broker_factory().bootstrap  # type: ignore[attr-defined]
    create_topic(bootstrap, "events", 1)
    create_topic(bootstrap, "event-counts-out", 1)
    limits = {"rest.header.timeout.ms": str(TIMEOUT_MS), "rest.body.timeout.ms": str(TIMEOUT_MS)}
    app = start_instance(bootstrap, tmp_path, "web-1", threads=1, extra=limits)
    try:
        wait_until(lambda: running(app, partitions=1), 60, "instance running")
        yield app
    finally:
        app.stop()


def _connect(app: App) -> socket.socket:
    assert app.config is not None and app.config.application_server is not None
    host, port = app.config.application_server.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=DEADLINE_S)


def _read_until_closed(sock: socket.socket) -> bytes:
    """What the server sends until it closes the connection (socket.timeout: it did not)."""
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


def test_slow_headers_are_closed_and_the_server_still_answers(instance: App) -> None:
    slow = [_connect(instance) for _ in range(SLOW)]
    try:
        for sock in slow:
            sock.sendall(b"GET /v1/ta")  # a partial request line, then nothing
        assert httpx.get(url(instance) + "/v1/tasks", timeout=30).status_code == 200
        began = time.monotonic()
        for sock in slow:
            assert _read_until_closed(sock) == b""  # closed without an answer
        assert time.monotonic() - began < DEADLINE_S
    finally:
        for sock in slow:
            sock.close()
    assert httpx.get(url(instance) + "/v1/tasks", timeout=30).status_code == 200


def test_a_body_that_stops_coming_is_answered_408_and_closed(instance: App) -> None:
    head = (
        "POST /v1/reload HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Length: 100\r\n\r\n"
    )
    with _connect(instance) as sock:
        sock.sendall(head.encode() + b'{"a": ')  # 6 of the 100 bytes announced
        answer = _read_until_closed(sock)
    status_line = answer.partition(b"\r\n")[0]
    assert status_line.split()[1] == b"408", answer
    assert b"BODY_TIMEOUT" in answer
    assert httpx.get(url(instance) + "/v1/tasks", timeout=30).status_code == 200
