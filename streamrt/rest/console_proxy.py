"""The ``streamrt console`` server: the console page, its JSON read through an instance.

It holds no state of the application: every ``/v1/*`` call the page makes is passed to one
instance's REST endpoint (the first of ``--url`` that answers, then any instance it reported
up), so the page is the same as the one every instance serves at ``/console``. Mutating calls
are refused here unless the console was given the application's token, and then only with
that token, checked from the headers before the body is read (the same
:class:`~streamrt.rest.limits.RequestGuard` as an instance's); the instance checks it again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from streamrt.rest.errors import ApiError, on_api_error
from streamrt.rest.limits import RequestGuard
from streamrt.rest.routes_console import FAN_OUT_TIMEOUT_S, mount_console_page
from streamrt.rest.settings import DEFAULT_HEADER_TIMEOUT_MS, RestSettings
from streamrt.rest.slow_clients import with_header_timeout

__all__ = ("ConsoleProxy", "ConsoleThread", "create_console_app")

READS = ("/v1/cluster", "/v1/timeline", "/v1/tasks", "/v1/console/settings", "/v1/instances")
MUTATIONS = ("/v1/members:remove", "/v1/reload")
UPSTREAM_TIMEOUT_S = FAN_OUT_TIMEOUT_S * 3  # the instance's own fan-out, and some slack


class ConsoleProxy:
    """Passes the page's calls to the first upstream that answers."""

    def __init__(self, urls: Sequence[str], token: str | None) -> None:
        self.configured = [u.rstrip("/") for u in urls]
        self.learned: list[str] = []
        self.token = token

    def upstreams(self) -> list[str]:
        return list(dict.fromkeys([*self.configured, *self.learned]))

    async def call(self, request: Request, path: str) -> Response:
        headers = {"Accept": "application/json"}
        if request.method == "POST":
            headers["Authorization"] = request.headers.get("authorization", "")
            headers["Content-Type"] = request.headers.get("content-type", "application/json")
        body = await request.body() if request.method == "POST" else None
        errors: list[str] = []
        async with httpx.AsyncClient(timeout=UPSTREAM_TIMEOUT_S) as client:
            for base in self.upstreams():
                try:
                    response = await client.request(
                        request.method,
                        base + path,
                        params=request.query_params,
                        headers=headers,
                        content=body,
                    )
                    data = response.json()
                except (httpx.HTTPError, ValueError) as exc:
                    errors.append(f"{base}: {type(exc).__name__}")
                    continue
                self._learn(path, data)
                return JSONResponse(self._adjust(path, data), status_code=response.status_code)
        raise ApiError(502, "NO_INSTANCE", "no instance answered: " + "; ".join(errors))

    def _learn(self, path: str, data: Any) -> None:
        """Remember the instances a cluster view reported up, to fail over to them."""
        if path != "/v1/cluster" or not isinstance(data, dict):
            return
        self.learned = [
            f"http://{i['application_server']}"
            for i in data.get("instances", [])
            if i.get("status") == "up" and i.get("application_server")
        ]

    def _adjust(self, path: str, data: Any) -> Any:
        if path == "/v1/console/settings" and isinstance(data, dict):
            data["mutations_enabled"] = bool(data.get("mutations_enabled")) and bool(self.token)
        return data


def create_console_app(urls: Sequence[str], token: str | None) -> FastAPI:
    proxy = ConsoleProxy(urls, token)
    api = FastAPI(title="streamrt console", docs_url=None, redoc_url=None, openapi_url=None)
    api.add_exception_handler(ApiError, on_api_error)

    def route(path: str, method: str) -> None:
        async def handler(request: Request) -> Response:
            return await proxy.call(request, path)

        api.add_api_route(path, handler, methods=[method])

    for path in READS:
        route(path, "GET")
    for path in MUTATIONS:
        route(path, "POST")
    mount_console_page(api)
    api.add_middleware(
        RequestGuard,
        settings=RestSettings(auth_token=token),
        protected={("POST", p) for p in MUTATIONS},
    )
    return api


class ConsoleThread:
    """The console server in a daemon thread of this process (``streamrt demo`` runs one while
    its deploys run); ``start`` returns once it listens."""

    def __init__(
        self, urls: Sequence[str], token: str | None, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        import uvicorn

        config = uvicorn.Config(
            create_console_app(urls, token),
            host=host,
            port=port,
            log_level="warning",
            access_log=False,
            lifespan="off",
            http=with_header_timeout(DEFAULT_HEADER_TIMEOUT_MS / 1000),
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True, name="console")
        self.host = host

    @property
    def url(self) -> str:
        servers = self._server.servers
        port = servers[0].sockets[0].getsockname()[1] if servers else 0
        return f"http://{self.host}:{port}/console"

    def start(self, timeout: float = 10.0) -> ConsoleThread:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started and self._thread.is_alive():
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if not self._server.started:
            raise OSError(f"the console could not listen on {self.host}")
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)
