"""Request bodies: refused without the token before they are read, capped with it (issue 29).

Raw sockets, so the test sees what the server does while the body is still unsent: a server
that read the body first would wait for the 47 MiB the headers announce and never answer.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from streamrt.runtime import App
from tests.kafka_helpers import create_topic, wait_until
from tests.rest.instances import TOKEN, running, start_instance, url

pytestmark = pytest.mark.slow

BIG = 47 * 1024 * 1024
LIMIT = 64 * 1024


@pytest.fixture
def instance(broker_factory: Callable[..., object], tmp_path: Path) -> Iterator[App]:
    bootstrap = broker_factory().bootstrap  # type: ignore[attr-defined]
    create_topic(bootstrap, "events", 1)
    create_topic(bootstrap, "event-counts-out", 1)
    app = start_instance(
        bootstrap, tmp_path, "web-1", threads=1, extra={"rest.max.request.bytes": str(LIMIT)}
    )
    try:
        wait_until(lambda: running(app, partitions=1), 60, "instance running")
        yield app
    finally:
        app.stop()


def _address(app: App) -> tuple[str, int]:
    assert app.config is not None and app.config.application_server is not None
    host, port = app.config.application_server.rsplit(":", 1)
    return host, int(port)


def _exchange(app: App, head: str, body: bytes) -> tuple[int, dict[str, str]]:
    """Send ``head`` and the first part of a body, then read the answer (10 s at most)."""
    with socket.create_connection(_address(app), timeout=10) as sock:
        sock.sendall(head.encode() + b"\r\n" + body)
        data = b""
        while b"\r\n\r\n" not in data or not _complete(data):
            chunk = sock.recv(65536)  # socket.timeout here: the server waits for the body
            if not chunk:
                break
            data += chunk
    status_line, _, rest = data.partition(b"\r\n")
    return int(status_line.split()[1]), json.loads(rest.partition(b"\r\n\r\n")[2])


def _complete(data: bytes) -> bool:
    head, _, body = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":")[1])
    return False


def _post(path: str, length: int | None, token: str | None) -> str:
    lines = [f"POST {path} HTTP/1.1", "Host: x", "Content-Type: application/json"]
    lines.append(
        f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    )
    if token is not None:
        lines.append(f"Authorization: Bearer {token}")
    return "\r\n".join(lines) + "\r\n"


@pytest.mark.parametrize("path", ["/v1/members:remove", "/v1/reload"])
def test_no_token_is_refused_before_the_body(instance: App, path: str) -> None:
    status, body = _exchange(instance, _post(path, BIG, None), b"[" * 65536)
    assert (status, body["error"]) == (401, "UNAUTHENTICATED")
    status, body = _exchange(instance, _post(path, BIG, "wrong"), b"[" * 65536)
    assert (status, body["error"]) == (403, "FORBIDDEN")


def test_a_body_over_the_cap_is_413(instance: App) -> None:
    # announced: answered from the headers, the body never read
    status, body = _exchange(instance, _post("/v1/members:remove", BIG, TOKEN), b"[" * 65536)
    assert (status, body["error"]) == (413, "BODY_TOO_LARGE")
    # chunked, no length: answered once the bytes read pass the cap
    chunk = b"%x\r\n%s\r\n" % (32 * 1024, b" " * 32 * 1024)
    status, body = _exchange(instance, _post("/v1/members:remove", None, TOKEN), chunk * 3)
    assert (status, body["error"]) == (413, "BODY_TOO_LARGE")
    # on a read-only route too
    status, _ = _exchange(instance, _post("/v1/metadata", BIG, None), b"x")
    assert status == 413


def test_bodies_within_the_cap_still_work(instance: App) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    ids = ["web-9" + "x" * 200] * 100  # the largest legal request, about 20 KiB
    response = httpx.post(
        url(instance) + "/v1/members:remove", json={"instance_ids": ids}, headers=headers
    )
    assert response.status_code == 200, response.text
    assert {r["error"] for r in response.json()["results"]} == {"UNKNOWN_MEMBER_ID"}
    chunks = [b'{"instance_ids": ', b'["web-9"]}']  # chunked within the cap
    response = httpx.post(
        url(instance) + "/v1/members:remove",
        content=iter(chunks),
        headers={**headers, "Content-Type": "application/json"},
    )
    assert response.status_code == 200, response.text
    response = httpx.post(url(instance) + "/v1/members:remove", json={"instance_ids": ["web-9"]})
    assert response.status_code == 401
