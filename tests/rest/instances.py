"""In-process application instances with REST endpoints, for the REST tests."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import httpx

from streamrt.admin import AdminClient
from streamrt.admin.consumer_protocol import decode_assignment
from streamrt.events import EventPublisher, install_event_publisher
from streamrt.rest.wiring import attach_rest
from streamrt.runtime import App
from tests.runtime.counting_app import make_app

TOKEN = "s3cret-token"
PUBLISHERS: list[EventPublisher] = []


def close_publishers() -> None:
    while PUBLISHERS:
        PUBLISHERS.pop().close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_instance(
    bootstrap: str,
    state: Path,
    instance: str,
    *,
    threads: int = 2,
    session_timeout_ms: int = 8000,
    port: int | None = None,
    token: str | None = TOKEN,
    extra: dict[str, str] | None = None,
    events: bool = False,
) -> App:
    """``events``: publish lifecycle events to ``counting-events`` (as ``streamrt run`` does,
    signed with the directory secret, else the token); :func:`close_publishers` flushes them
    after the apps stopped."""
    settings = {
        "bootstrap.servers": bootstrap,
        "state.dir": str(state / instance),
        "group.instance.id": instance,
        "num.stream.threads": str(threads),
        "session.timeout.ms": str(session_timeout_ms),
        "heartbeat.interval.ms": "500",
        "commit.interval.ms": "200",
        "application.server": f"127.0.0.1:{port or free_port()}",
    }
    if token:
        settings["rest.auth.token"] = token
    settings.update(extra or {})
    app = make_app(settings)
    attach_rest(app)
    if events:
        key = settings.get("rest.directory.secret") or token
        PUBLISHERS.append(install_event_publisher(app, mac_key=key))
    app.start()
    return app


def url(app: App) -> str:
    assert app.config is not None and app.config.application_server is not None
    return f"http://{app.config.application_server}"


def get(app: App, path: str) -> httpx.Response:
    return httpx.get(url(app) + path, timeout=30)


def owned(*apps: App) -> set[tuple[str, int]]:
    return {p for a in apps for t in a.metadata_for_local_threads() for p in t.topic_partitions}


def running(*apps: App, partitions: int = 8) -> bool:
    states = {t.state.name for a in apps for t in a.metadata_for_local_threads()}
    return len(owned(*apps)) == partitions and states == {"RUNNING"}


def group_members(bootstrap: str, group: str = "counting") -> dict[str, list[tuple[str, int]]]:
    """The coordinator's view: group.instance.id → assigned partitions (DescribeGroups)."""

    async def go() -> dict[str, list[tuple[str, int]]]:
        async with AdminClient(bootstrap) as admin:
            described = (await admin.describe_groups([group]))[group]
        out: dict[str, list[tuple[str, int]]] = {}
        for m in described.members:
            # decoded here, not via m.assignment: the admin client drops the assignment when
            # the subscription does not decode, and the runtime's assignor labels its
            # subscription v1 without v1's owned_partitions field
            parts = decode_assignment(m.assignment_bytes).partitions if m.assignment_bytes else {}
            out[str(m.group_instance_id)] = sorted((t, p) for t, ps in parts.items() for p in ps)
        return out

    return asyncio.run(go())
