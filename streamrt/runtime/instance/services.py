"""Services: things that live as long as a started App (e.g. the REST endpoint).

The runtime does not know the REST layer; ``streamrt run`` attaches it as a service.
"""

from __future__ import annotations

import logging
from typing import Protocol

__all__ = ("Service", "Services")

logger = logging.getLogger(__name__)


class Service(Protocol):
    """Something that lives as long as the started app (e.g. the REST endpoint).

    ``start`` runs after the config is resolved and before any stream thread, so a failure
    (a taken port) stops the start; ``stop`` runs first when the app stops.
    """

    def start(self) -> None: ...

    def stop(self) -> None: ...


class Services:
    """Responsibilities: start the services in order, stop the started ones in reverse."""

    def __init__(self) -> None:
        self._all: list[Service] = []
        self._started: list[Service] = []

    def add(self, service: Service) -> None:
        self._all.append(service)

    def start_all(self) -> None:
        """Start each service; the first failure raises (the ones started stay started)."""
        for service in self._all:
            service.start()
            self._started.append(service)

    def stop_all(self) -> None:
        """Stop the started services, newest first; a failing stop is logged, not raised."""
        for service in reversed(self._started):
            try:
                service.stop()
            except Exception:
                logger.exception("service stop failed")
        self._started.clear()
