"""Attach the REST endpoint to an App as one of its services.

The runtime does not import the REST layer; whoever runs the app (``streamrt run``, a test,
an embedding program) calls :func:`attach_rest` before ``app.start()``. The endpoint starts
only when ``application.server`` is set, after the config is resolved and before any stream
thread, so a taken port fails the start at once.
"""

from __future__ import annotations

from streamrt.rest.server import RestServer
from streamrt.rest.settings import RestSettings
from streamrt.runtime.instance.app import App

__all__ = ("RestService", "attach_rest")


class RestService:
    """The app's REST endpoint and host directory, as an
    :class:`~streamrt.runtime.instance.app.Service`."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.server: RestServer | None = None

    def start(self) -> None:
        config = self.app.config
        if config is None or config.application_server is None:
            return
        self.server = RestServer(self.app, RestSettings.from_mapping(self.app.settings))
        self.server.start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None


def attach_rest(app: App) -> RestService:
    """Serve ``app``'s REST endpoint while it runs (when ``application.server`` is set)."""
    service = RestService(app)
    app.add_service(service)
    return service
