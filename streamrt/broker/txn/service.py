"""The asyncio edge of the transaction coordinator: ``__transaction_state`` I/O, timers, markers.

One lock serialises every step of the state machine (requests and timer expiries alike), and a
step's records are appended to ``__transaction_state`` before its answer is built ("append,
then apply"). After the answer, the markers of a decided transaction are written into each of
its partitions (``__consumer_offsets`` ones through the group coordinator, which applies the
pending offsets), then Complete* is written: Kafka's ``TransactionMarkerChannelManager``
without the RPC. At start the topic is replayed, and transactions left in Prepare* resume their
markers, so a decided transaction is never lost across a restart.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from streamrt.broker.config import BrokerConfig
from streamrt.broker.coordination.appender import map_txn_append_error as map_append_error
from streamrt.broker.coordination.core import CoordinatorCore
from streamrt.broker.coordination.partitioning import partition_for
from streamrt.broker.group.service import CONSUMER_OFFSETS
from streamrt.broker.txn.coordinator import TransactionCoordinator, TxnConfig
from streamrt.broker.txn.records import TopicPartition, TxnRecord
from streamrt.broker.txn.responses import error_response
from streamrt.broker.txn.result import TxnMarkers, TxnResult
from streamrt.clock import Clock
from streamrt.errors import ErrorCode, KafkaError
from streamrt.logs import fields
from streamrt.wire.api_keys import ApiKey

__all__ = ("TRANSACTION_STATE", "TransactionCoordinatorService")

logger = logging.getLogger(__name__)

TRANSACTION_STATE = "__transaction_state"
_RETRY_MIN_S, _RETRY_MAX_S = 0.05, 5.0


class TransactionCoordinatorService:
    """Owns the transaction state machine, its lock, its timer worker, its log partitions and
    the marker writers."""

    supported_apis: ClassVar[Mapping[ApiKey, tuple[int, int]]] = {
        ApiKey.ADD_PARTITIONS_TO_TXN: (0, 3),  # the client path (v4+ is broker-to-broker)
        ApiKey.ADD_OFFSETS_TO_TXN: (0, 4),
        ApiKey.END_TXN: (0, 4),  # v5 is transaction.version 2, not offered
        ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
        ApiKey.LIST_TRANSACTIONS: (0, 1),
    }

    def __init__(
        self,
        logs: Any,
        config: BrokerConfig,
        clock: Clock,
        groups: Any,
        on_markers: Callable[[], None] = lambda: None,
    ) -> None:
        self._logs = logs
        self._clock = clock
        self._groups = groups
        self._on_markers = on_markers
        partitions: int = config["transaction.state.log.num.partitions"]
        self._offsets_partitions: int = config["offsets.topic.num.partitions"]
        self._core = CoordinatorCore(
            "txn-coordinator", logs, TRANSACTION_STATE, partitions, clock, self._on_timer
        )
        self.coordinator = TransactionCoordinator(
            TxnConfig.from_broker(config),
            clock,
            self._core.timer,
            allocate_producer_id=logs.allocate_producer_id,
            partition_exists=self._core.partition_exists,
            offsets_partition=self._offsets_partition,
        )
        self._marker_tasks: set[asyncio.Task[None]] = set()

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        topics = self._core.ensure_topic()
        if CONSUMER_OFFSETS in topics:
            self._offsets_partitions = topics[CONSUMER_OFFSETS].num_partitions

        async def on_loaded() -> list[TxnMarkers]:
            self._reserve_loaded_producer_ids()
            return self._apply(self.coordinator.on_loaded())[1]

        stats, markers = await self._core.load(
            lambda key, value, _pid: self.coordinator.replay_bytes(key, value), on_loaded
        )
        self._spawn_markers(markers)
        logger.info(
            "transaction coordinator loaded",
            extra=fields(
                records=stats.loaded,
                skipped=stats.skipped,
                transactions=len(self.coordinator.transactions),
                resumed=len(markers),
            ),
        )

    def _reserve_loaded_producer_ids(self) -> None:
        """Keep every loaded transactional id's producer ids from being handed out again,
        even if the producer-id block file was lost: only this log remembers an id that has
        written no record yet."""
        for md in self.coordinator.transactions.values():
            self._logs.skip_producer_ids_through(max(md.producer_id, md.last_producer_id))

    async def stop(self) -> None:
        await self._core.stop()
        tasks = list(self._marker_tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._marker_tasks.clear()

    # -- requests -------------------------------------------------------------------------------

    async def handle(self, ctx: Any, request: Any) -> Any:
        """The kio response for ``ctx.api_version``; markers of a decided transaction are
        written after it is answered."""
        code = self._core.unavailable()
        if code is not None:
            return error_response(ctx, request, code)
        c = self.coordinator
        handlers: dict[int, Callable[[], TxnResult]] = {
            ApiKey.INIT_PRODUCER_ID: lambda: c.init_producer_id(ctx, request),
            ApiKey.ADD_PARTITIONS_TO_TXN: lambda: c.add_partitions_to_txn(ctx, request),
            ApiKey.ADD_OFFSETS_TO_TXN: lambda: c.add_offsets_to_txn(ctx, request),
            ApiKey.END_TXN: lambda: c.end_txn(ctx, request),
            ApiKey.DESCRIBE_TRANSACTIONS: lambda: c.describe_transactions(ctx, request),
            ApiKey.LIST_TRANSACTIONS: lambda: c.list_transactions(ctx, request),
        }
        handler = handlers.get(ctx.api_key)
        if handler is None:
            raise KafkaError(ErrorCode.unsupported_version, f"api {ctx.api_key} not served here")
        async with self._core.lock:
            response, markers = self._apply(handler())
        self._spawn_markers(markers)
        return response

    def verify(
        self, transactional_id: str, producer_id: int, epoch: int, tp: TopicPartition
    ) -> ErrorCode:
        """Produce-time check that ``tp`` is in the producer's ongoing transaction."""
        if self._core.state != "active":
            return ErrorCode.not_coordinator
        return self.coordinator.verify_partition(transactional_id, producer_id, epoch, tp)

    def offsets_partition(self, group_id: str) -> TopicPartition:
        return self._offsets_partition(group_id)

    def _apply(self, result: TxnResult) -> tuple[Any, list[TxnMarkers]]:
        """Append, then call back; returns the answer and the markers to write."""
        error: ErrorCode | None = None
        if result.records:
            error = self._append(result.records)
        response = result.response
        markers = list(result.markers)
        if result.on_append is not None:
            nested = result.on_append(None if error is None else map_append_error(error))
            answer, more = self._apply(nested)
            response = answer if answer is not None else response
            markers += more
        for step in result.also:
            markers += self._apply(step)[1]
        return response, markers

    def _append(self, records: tuple[TxnRecord, ...]) -> ErrorCode | None:
        """One batch per ``__transaction_state`` partition (Kafka appends with acks=-1)."""
        return self._core.append(records, lambda r: r.transactional_id)

    # -- markers --------------------------------------------------------------------------------

    def _spawn_markers(self, markers: list[TxnMarkers]) -> None:
        for m in markers:
            task = asyncio.create_task(
                self._write_markers(m), name=f"txn-markers-{m.transactional_id}"
            )
            self._marker_tasks.add(task)
            task.add_done_callback(self._marker_tasks.discard)

    async def _write_markers(self, m: TxnMarkers) -> None:
        """Write every marker (retrying storage errors), then persist Complete*."""
        remaining = list(m.partitions)
        delay = _RETRY_MIN_S
        epoch = self.coordinator.config.coordinator_epoch
        while remaining:
            failed: list[TopicPartition] = []
            for topic, partition in remaining:
                try:
                    if topic == CONSUMER_OFFSETS and self._groups is not None:
                        await self._groups.write_txn_marker(
                            partition, m.producer_id, m.producer_epoch, m.commit, epoch
                        )
                    else:
                        now = self._clock.now_ms()
                        log = self._logs.log(topic, partition)
                        log.append_marker(m.producer_id, m.producer_epoch, m.commit, epoch, now)
                except KafkaError as exc:
                    if exc.code in (
                        ErrorCode.unknown_topic_or_partition,
                        ErrorCode.invalid_producer_epoch,
                    ):
                        # A deleted partition, or a newer epoch already wrote there: Kafka
                        # stops sending to it.
                        logger.warning(
                            "transaction marker dropped",
                            extra=fields(topic=topic, partition=partition, error=exc.code.name),
                        )
                    else:
                        failed.append((topic, partition))
                except OSError:
                    logger.exception("transaction marker write failed; will retry")
                    failed.append((topic, partition))
            remaining = failed
            if remaining:
                await asyncio.sleep(delay)
                delay = min(delay * 2, _RETRY_MAX_S)
        self._on_markers()
        delay = _RETRY_MIN_S
        while True:  # Kafka retries the Complete* write until it lands
            async with self._core.lock:
                if self._core.state != "active":
                    return
                c = self.coordinator
                self._apply(c.markers_written(m.transactional_id, m.producer_id, m.producer_epoch))
                if not c.awaits_completion(m.transactional_id, m.producer_id, m.producer_epoch):
                    return
            await asyncio.sleep(delay)
            delay = min(delay * 2, _RETRY_MAX_S)

    # -- timers ---------------------------------------------------------------------------------

    async def _on_timer(self, run: Callable[[], Any]) -> Callable[[], None] | None:
        """A timer's step under the lock; its markers are written after the lock is freed."""
        result = run()
        if result is None:
            return None
        markers = self._apply(result)[1]
        return lambda: self._spawn_markers(markers)

    # -- helpers --------------------------------------------------------------------------------

    def _offsets_partition(self, group_id: str) -> TopicPartition:
        return (CONSUMER_OFFSETS, partition_for(group_id, self._offsets_partitions))
