"""The broker in-process, for tests and apps: ``async with EmbeddedBroker(dir) as bootstrap``.

:class:`BrokerThread` runs one on its own event loop in a background thread, for synchronous
code (tests driving real clients, the demo) that needs a broker beside it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from streamrt.broker.broker import Broker
from streamrt.broker.config import BrokerConfig

__all__ = ("BrokerThread", "EmbeddedBroker")


class EmbeddedBroker:
    """An async context manager around :class:`Broker` on a free 127.0.0.1 port."""

    def __init__(
        self,
        data_dir: Path | str,
        overrides: Mapping[str, str] | None = None,
        *,
        port: int = 0,
        metrics_port: int | None = None,
    ) -> None:
        self.broker = Broker(
            data_dir, BrokerConfig(overrides or {}), port=port, metrics_port=metrics_port
        )

    async def __aenter__(self) -> str:
        await self.broker.start()
        return self.broker.bootstrap

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.broker.stop()


class BrokerThread:
    """A broker on its own loop in a daemon thread. ``with BrokerThread(dir) as b: b.bootstrap``."""

    def __init__(
        self,
        data_dir: Path | str,
        overrides: Mapping[str, str] | None = None,
        *,
        port: int = 0,
        metrics_port: int | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.overrides = dict(overrides or {})
        self.port = port
        self.metrics_port = metrics_port
        self.broker: Broker | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopped: asyncio.Event | None = None

    @property
    def bootstrap(self) -> str:
        assert self.broker is not None
        return self.broker.bootstrap

    def start(self) -> BrokerThread:
        ready = threading.Event()
        failure: list[BaseException] = []

        async def main() -> None:
            self._stopped = asyncio.Event()
            self.broker = Broker(
                self.data_dir,
                BrokerConfig(self.overrides),
                port=self.port,
                metrics_port=self.metrics_port,
            )
            try:
                await self.broker.start()
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            await self._stopped.wait()
            await self.broker.stop()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            try:
                self._loop.run_until_complete(main())
            finally:
                self._loop.close()

        self._thread = threading.Thread(target=run, name="streamrt-broker", daemon=True)
        self._thread.start()
        ready.wait(60)
        if failure:
            raise failure[0]
        if self.broker is None or self.broker.core is None:
            raise RuntimeError("broker did not start within 60 s")
        # Keep the chosen port across restart() of the same object.
        self.port = self.broker.core.port
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stopped is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._stopped.set)
            self._thread.join(30)
        self._thread = None

    def restart(self) -> BrokerThread:
        """Stop and start again on the same data dir and port (clients reconnect)."""
        self.stop()
        return self.start()

    def __enter__(self) -> BrokerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
