"""RestServer: uvicorn in a thread of the instance's process, plus the host directory.

All run on that thread's own event loop, so they never touch the stream threads' loops; the
console's task history is sampled there too, so its charts cover the minutes before anyone
opened the page.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from typing import TYPE_CHECKING

import uvicorn

from streamrt.logs import fields
from streamrt.rest.api import create_api
from streamrt.rest.host_directory import HostDirectory
from streamrt.rest.settings import RestSettings
from streamrt.rest.slow_clients import with_header_timeout
from streamrt.rest.task_history import TaskHistory

if TYPE_CHECKING:
    from streamrt.runtime.instance.app import App

__all__ = ("RestServer",)

logger = logging.getLogger(__name__)


class RestServer:
    def __init__(self, app: App, settings: RestSettings) -> None:
        assert app.config is not None and app.config.application_server is not None
        self.app = app
        self.settings = settings
        self.port = int(app.config.application_server.rsplit(":", 1)[1])
        self.history = TaskHistory(app.metadata_for_local_threads)
        self.api = create_api(app, settings, self.history)
        config = uvicorn.Config(
            self.api,
            host=settings.bind_address,
            port=self.port,
            log_level="warning",
            access_log=False,
            lifespan="off",
            http=with_header_timeout(settings.header_timeout_ms / 1000),
        )
        self._server = uvicorn.Server(config)
        self.directory = HostDirectory(
            app.config.client_config(),
            app.config.application_id,
            app.instance_id,
            app.config.application_server,
            settings.host_directory_key,
            self._on_hosts,
        )
        self._thread = threading.Thread(
            target=self._run, daemon=True, name=f"{app.instance_id}-rest"
        )

    def start(self, timeout: float = 10.0) -> None:
        """Start serving; returns once the port listens (raises if it could not bind)."""
        self._thread.start()
        waited = 0.0
        while not self._server.started and self._thread.is_alive() and waited < timeout:
            self._thread.join(0.05)
            waited += 0.05
        if not self._server.started:
            address = f"{self.settings.bind_address}:{self.port}"
            raise OSError(f"REST endpoint could not listen on {address}")
        logger.info(
            "REST endpoint listening",
            extra=fields(address=self.settings.bind_address, port=self.port),
        )

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout)

    def _on_hosts(self, hosts: dict[str, str]) -> None:
        self.app.queries.set_peer_hosts(hosts)

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        stopping = asyncio.Event()
        directory = asyncio.create_task(self._follow_hosts(stopping))
        sampler = asyncio.create_task(self._sample(stopping))
        try:
            await self._server.serve()
        finally:
            stopping.set()
            await self.api.state.console.close()
            with contextlib.suppress(asyncio.CancelledError):
                await directory
                await sampler

    async def _sample(self, stopping: asyncio.Event) -> None:
        """Sample the task history on its grid until the server stops. In a worker thread:
        reading the threads' metadata takes the App's lock, which ``App.start`` holds while it
        starts this server."""
        while not stopping.is_set():
            try:
                await asyncio.to_thread(self.history.sample)
            except Exception as exc:  # metadata read while threads change: skip this slot
                logger.debug("task history sample failed", extra=fields(error=repr(exc)))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), self.history.interval_s / 2)

    async def _follow_hosts(self, stopping: asyncio.Event) -> None:
        """Keep following peers' hosts; a broker hiccup is retried, never fatal."""
        while not stopping.is_set():
            try:
                await self.directory.run(stopping)
            except Exception as exc:
                logger.warning("host directory failed, retrying", extra=fields(error=repr(exc)))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stopping.wait(), 1.0)
