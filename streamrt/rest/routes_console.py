"""The web console (issue 28): its page and static files, and the read-only JSON it polls.

``/console`` is one page (plain ES modules and a vendored uPlot, no build step, nothing from
outside); it polls ``/v1/cluster`` (every instance: threads, the partition x thread map, task
history) and ``/v1/timeline`` (rebalances and restarts from the events topic). Reads are open,
as every read of this API; member removal and reload are the existing ``POST`` calls, which
need the bearer token the operator types into the page (it is never sent to the page).
"""

from __future__ import annotations

import asyncio
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from streamrt.rest.cluster_view import assemble, fetch_views
from streamrt.rest.event_check import MALFORMED, OVERSIZED, UNTRUSTED
from streamrt.rest.event_follower import EventFollower
from streamrt.rest.local_view import local_view
from streamrt.rest.settings import RestSettings
from streamrt.rest.task_history import TaskHistory
from streamrt.rest.timeline import summarize

if TYPE_CHECKING:
    from streamrt.runtime.instance.app import App

__all__ = ("STATIC_DIR", "ConsoleRoutes", "mount_console_page")

STATIC_DIR = Path(str(files("streamrt.rest") / "static"))
SKIP_KINDS = (MALFORMED, OVERSIZED, UNTRUSTED)
FAN_OUT_TIMEOUT_S = 2.0  # per instance; a down instance costs the page at most this
# The page loads and calls only its own origin, and no other site may frame it (its buttons
# must not be clicked through someone else's page).
PAGE_HEADERS = {
    "Cache-Control": "no-cache",
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
    "style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


def mount_console_page(api: FastAPI) -> None:
    """``/console`` and ``/console/static/*``: the page, left out of the OpenAPI document."""

    def page() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", headers=PAGE_HEADERS)

    api.add_api_route("/console", page, include_in_schema=False)
    api.mount("/console/static", StaticFiles(directory=STATIC_DIR), name="console-static")


class ConsoleRoutes:
    """``/v1/tasks``, ``/v1/cluster``, ``/v1/timeline``, ``/v1/console/settings``."""

    def __init__(self, app: App, settings: RestSettings, history: TaskHistory | None) -> None:
        self.app = app
        self.settings = settings
        self.history = history or TaskHistory(app.metadata_for_local_threads)
        self._follower: EventFollower | None = None

    def router(self) -> APIRouter:
        router = APIRouter()
        router.add_api_route("/v1/tasks", self.tasks)
        router.add_api_route("/v1/cluster", self.cluster)
        router.add_api_route("/v1/timeline", self.timeline)
        router.add_api_route("/v1/console/settings", self.console_settings)
        return router

    def tasks(self) -> dict[str, Any]:
        """This instance: health, threads with each task's role, lag and restore progress, and
        per-task lag and records/s over the last minutes."""
        return local_view(self.app, self.history)

    async def cluster(self) -> dict[str, Any]:
        """Every instance (``down`` when it does not answer within 2 s), the partition x thread
        map and every task's history on one time grid."""
        assert self.app.config is not None
        # off the loop: the metadata read takes the App's lock, held while it starts or stops
        local = await asyncio.to_thread(local_view, self.app, self.history)
        others = [
            m for m in self.app.metadata_for_all_clients() if m.instance_id != local["instance_id"]
        ]
        wait = min(FAN_OUT_TIMEOUT_S, self.settings.forward_timeout_ms / 1000)
        views = await fetch_views(others, local, wait)
        return assemble(self.app.config.application_id, self.app.instance_id, views)

    async def timeline(self, limit: int = 30) -> dict[str, Any]:
        """The newest rebalances, restarts and member removals from ``<application.id>-events``
        (who joined and left, the generation, what moved, the longest processing gap), and
        what was skipped and why. ``trusted``: every event an entry came from carried a valid
        MAC (only with a signing key; without one the console cannot tell who wrote them)."""
        follower = self._events()
        events = follower.events()
        signed = follower.mac_key is not None
        entries = summarize(events, max(1, min(limit, 200)))
        for entry in entries:
            entry["trusted"] = signed
        return {
            "topic": follower.topic,
            "events_read": follower.read,
            "error": follower.error,
            "verification": "hmac-sha256" if signed else "none",
            "skipped": {kind: follower.skipped[kind] for kind in SKIP_KINDS},
            "last_skipped": list(follower.last_skipped),
            "kept_bytes": follower.kept_bytes,
            "max_bytes": self.settings.timeline_max_bytes,
            "entries": entries,
        }

    def console_settings(self) -> dict[str, Any]:
        """What the page may offer: the mutating buttons only when a token is configured."""
        assert self.app.config is not None
        return {
            "application_id": self.app.config.application_id,
            "instance_id": self.app.instance_id,
            "mutations_enabled": self.settings.auth_token is not None,
        }

    def _events(self) -> EventFollower:
        if self._follower is None:
            config = self.app.config
            assert config is not None
            self._follower = EventFollower(
                config.bootstrap_servers,
                config.application_id,
                config.client_config(),
                max_bytes=self.settings.timeline_max_bytes,
                event_max_bytes=self.settings.event_max_bytes,
                mac_key=self.settings.host_directory_key,
            )
        return self._follower

    async def close(self) -> None:
        if self._follower is not None:
            await self._follower.stop()
