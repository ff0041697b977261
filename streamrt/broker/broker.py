"""One broker: log manager, group coordinator, Kafka listener, background log work, metrics."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from pathlib import Path

from streamrt.broker.config import BrokerConfig
from streamrt.broker.core import BrokerCore
from streamrt.broker.handlers import build_api_table
from streamrt.broker.log import LogManager
from streamrt.broker.metrics import BrokerMetrics
from streamrt.broker.security.manager import BrokerSecurity
from streamrt.broker.server import KafkaServer
from streamrt.clock import Clock, SystemClock
from streamrt.logs import fields

__all__ = ("Broker",)

logger = logging.getLogger(__name__)


def _cluster_id(data_dir: Path) -> str:
    """Kept in ``meta.properties`` like Kafka's, so it survives restarts."""
    meta = data_dir / "meta.properties"
    if meta.exists():
        for line in meta.read_text().splitlines():
            if line.startswith("cluster.id="):
                return line.split("=", 1)[1].strip()
    cid = uuid.uuid4().hex[:22]
    tmp = meta.with_suffix(".tmp")
    tmp.write_text(f"version=1\ncluster.id={cid}\nnode.id=0\n")
    tmp.replace(meta)
    return cid


class Broker:
    """A single-node Kafka-protocol broker. ``await start()``, then ``bootstrap``; ``await stop()``.

    ``port=0`` picks a free port. The advertised address is the one clients connect to.
    """

    def __init__(
        self,
        data_dir: Path | str,
        config: BrokerConfig | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 9092,
        advertised_host: str | None = None,
        metrics_port: int | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.config = config or BrokerConfig()
        self.host = host
        self.port = port
        self.advertised_host = advertised_host or host
        self._advertised_override = advertised_host
        self.metrics_port = metrics_port
        self.clock = clock or SystemClock()
        self.metrics = BrokerMetrics()
        self.core: BrokerCore | None = None
        self._server: KafkaServer | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.metrics_bound_port: int | None = None
        self.listener_addresses: dict[str, str] = {}  # listener name -> "host:port", once started

    @property
    def bootstrap(self) -> str:
        assert self.core is not None, "broker not started"
        return f"{self.core.host}:{self.core.port}"

    async def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        logs = LogManager(self.data_dir, self.config, self.clock)
        await asyncio.to_thread(logs.load)
        self.core = BrokerCore(
            config=self.config,
            logs=logs,
            host=self.advertised_host,
            port=self.port,
            cluster_id=_cluster_id(self.data_dir),
            clock=self.clock,
        )
        self.core.coordinator = await self._start_coordinator(self.core)
        self.core.txn = await self._start_txn_coordinator(self.core)
        self.core.security = BrokerSecurity(self.config, self.data_dir)
        listeners = self.core.security.listeners(self.host, self.port)
        table = build_api_table(self.core)
        self._server = KafkaServer(self.core, table, self.metrics)
        for i, listener in enumerate(listeners):
            port = await self._server.start(listener.host, listener.port, listener)
            host = self._advertised_override or (
                listener.host if listener.host != "0.0.0.0" else self.advertised_host
            )
            self.core.endpoints[listener.name] = (host, port)
            self.listener_addresses[listener.name] = f"{host}:{port}"
            if i == 0:
                self.core.host, self.core.port = host, port
        if self.core.coordinator is not None:
            self.metrics.watch_groups(self.core.coordinator.group_metrics)
        self.metrics.watch_parked_fetches(self.core.data_arrived.parked)
        if self.metrics_port is not None:
            self.metrics_bound_port = self.metrics.serve(self.host, self.metrics_port)
        self._tasks = [
            asyncio.create_task(self._maintenance_loop(), name="log-maintenance"),
            asyncio.create_task(self._flush_loop(), name="log-flush"),
        ]
        logger.info(
            "broker started",
            extra=fields(
                bootstrap=self.bootstrap,
                data_dir=str(self.data_dir),
                fsync=self.config["streamrt.log.fsync"],
                topics=len(logs.topics()),
            ),
        )

    async def _start_coordinator(self, core: BrokerCore):  # type: ignore[no-untyped-def]
        try:
            from streamrt.broker.group.service import GroupCoordinatorService
        except ImportError:
            logger.warning("group coordinator unavailable: group APIs are not advertised")
            return None
        service = GroupCoordinatorService(core.logs, self.config, self.clock)
        await service.start()
        return service

    async def _start_txn_coordinator(self, core: BrokerCore):  # type: ignore[no-untyped-def]
        from streamrt.broker.txn.service import TransactionCoordinatorService

        service = TransactionCoordinatorService(
            core.logs, self.config, self.clock, core.coordinator, core.data_arrived.notify
        )
        await service.start()
        return service

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._server is not None:
            await self._server.stop()
        if self.core is not None:
            if self.core.txn is not None:
                await self.core.txn.stop()
            if self.core.coordinator is not None:
                await self.core.coordinator.stop()
            self.core.logs.close()
        self.metrics.close()
        logger.info("broker stopped", extra=fields(data_dir=str(self.data_dir)))

    async def _maintenance_loop(self) -> None:
        """Segment roll by time, retention and compaction, off the event loop."""
        assert self.core is not None
        interval = int(self.config["log.retention.check.interval.ms"]) / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                await asyncio.to_thread(self.core.logs.run_maintenance, self.clock.now_ms())
            except Exception:
                logger.exception("log maintenance failed; will retry")

    async def _flush_loop(self) -> None:
        assert self.core is not None
        if self.config["streamrt.log.fsync"] != "interval":
            return
        interval = int(self.config["log.flush.interval.ms"]) / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                await asyncio.to_thread(self.core.logs.flush_dirty)
            except Exception:
                logger.exception("log flush failed; will retry")
