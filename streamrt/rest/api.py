"""The FastAPI application one instance serves at its ``application.server``.

Reads are open; the mutating calls (member removal, reload) need ``Authorization: Bearer <token>``
matching ``rest.auth.token``, checked before their body is read, and no body may pass
``rest.max.request.bytes`` (:mod:`streamrt.rest.limits`). Every error is a 4xx/5xx with a JSON
body ``{error, message}``; bad input is always a 4xx. The routes live in one router per concern:
status and metadata, interactive queries, mutations, and the web console (its page at
``/console`` and the JSON it polls).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import FastAPI
from fastapi.routing import APIRoute

from streamrt.rest.errors import ApiError, on_api_error
from streamrt.rest.forward import FORWARDED_HEADER
from streamrt.rest.limits import RequestGuard
from streamrt.rest.routes_console import ConsoleRoutes, mount_console_page
from streamrt.rest.routes_members import MemberRoutes
from streamrt.rest.routes_status import StatusRoutes
from streamrt.rest.routes_stores import StoreRoutes
from streamrt.rest.settings import RestSettings
from streamrt.rest.task_history import TaskHistory

if TYPE_CHECKING:
    from streamrt.runtime.instance.app import App

__all__ = ("FORWARDED_HEADER", "ApiError", "create_api")


def create_api(app: App, settings: RestSettings, history: TaskHistory | None = None) -> FastAPI:
    """``history``: the task history a background sampler fills (default: sampled per request);
    the console's routes are at ``api.state.console``."""
    api = FastAPI(
        title="streamrt instance API",
        version="1",
        description="Metadata, interactive queries, static-member removal and metrics of one "
        "instance of a streamrt application.",
    )
    api.add_exception_handler(ApiError, on_api_error)
    mutations = MemberRoutes(app, settings).router()
    api.include_router(StatusRoutes(app).router())
    api.include_router(StoreRoutes(app, settings).router())
    api.include_router(mutations)
    console = ConsoleRoutes(app, settings, history)
    api.include_router(console.router())
    mount_console_page(api)
    api.state.console = console
    protected = {
        (method, route.path)
        for route in mutations.routes
        if isinstance(route, APIRoute)
        for method in route.methods or ()
    }
    api.add_middleware(RequestGuard, settings=settings, protected=protected)
    return api
