"""The asyncio edge of the group coordinator: ``__consumer_offsets`` I/O, timers, parked replies.

One lock serialises every step of the state machine (requests and timer expiries alike), and a
step's records are appended to ``__consumer_offsets`` before any of its replies is delivered:
"append, then apply". Timer expiries are enqueued onto a worker that takes the same lock, so
they never race a request (Kafka's ``EventBasedCoordinatorTimer``). With ``streamrt.log.fsync``
``always`` the append (and its fsync) runs on a worker thread, as Produce's does, so a JoinGroup
never stalls the other connections.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.memory_records import MemoryRecords

from streamrt.broker.config import BrokerConfig
from streamrt.broker.group.coordinator import GroupCoordinator, map_append_error
from streamrt.broker.group.log_writer import CoordinatorLogs, PartitionWriter
from streamrt.broker.group.rebalance import GroupConfig
from streamrt.broker.group.records import CoordinatorRecord
from streamrt.broker.group.result import Result
from streamrt.broker.group.timer import TimerOp
from streamrt.broker.log.control import marker_is_commit
from streamrt.clock import Clock, SystemClock
from streamrt.errors import ErrorCode, KafkaError
from streamrt.logs import fields
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.error_responses import error_response

__all__ = ("CONSUMER_OFFSETS", "GroupCoordinatorService", "GroupMetrics", "partition_for")

logger = logging.getLogger(__name__)

CONSUMER_OFFSETS = "__consumer_offsets"
_READ_CHUNK = 1 << 20
_SYSTEM_CLOCK = SystemClock()


def java_string_hashcode(s: str) -> int:
    """Java's ``String.hashCode`` over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    raw = s.encode("utf-16-be")
    for i in range(0, len(raw), 2):
        h = (31 * h + ((raw[i] << 8) | raw[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(group_id: str, partitions: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode) % n``; ``Utils.abs`` maps MIN_INT to 0."""
    h = java_string_hashcode(group_id)
    return (0 if h == -(2**31) else abs(h)) % partitions


@dataclasses.dataclass(frozen=True, slots=True)
class GroupMetrics:
    group_id: str
    state: str
    generation_id: int
    members_static: int
    members_dynamic: int
    rebalances_total: int


class AsyncioTimer:
    """``Timer`` on ``loop.call_at``; an expiry is enqueued, and dropped if re-armed meanwhile."""

    def __init__(self, enqueue: Callable[[Callable[[], Result | None]], None]) -> None:
        self._enqueue = enqueue
        self._entries: dict[str, tuple[asyncio.TimerHandle, TimerOp]] = {}

    def schedule(self, key: str, delay_ms: int, op: TimerOp) -> None:
        self.cancel(key)
        loop = asyncio.get_running_loop()
        handle = loop.call_at(loop.time() + delay_ms / 1000, self._fire, key)
        self._entries[key] = (handle, op)

    def cancel(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            entry[0].cancel()

    def is_scheduled(self, key: str) -> bool:
        return key in self._entries

    def cancel_all(self) -> None:
        for handle, _ in self._entries.values():
            handle.cancel()
        self._entries.clear()

    def _fire(self, key: str) -> None:
        entry = self._entries.get(key)
        if entry is None:
            return

        def run() -> Result | None:
            if self._entries.get(key) is not entry:
                return None  # cancelled or re-armed after it fired
            del self._entries[key]
            return entry[1]()

        self._enqueue(run)


class GroupCoordinatorService:
    """Owns the coordinator state machine, its lock, its timer worker and its log partitions."""

    supported_apis: ClassVar[Mapping[ApiKey, tuple[int, int]]] = {
        ApiKey.OFFSET_COMMIT: (2, 9),
        ApiKey.OFFSET_FETCH: (1, 9),
        ApiKey.JOIN_GROUP: (0, 9),
        ApiKey.HEARTBEAT: (0, 4),
        ApiKey.LEAVE_GROUP: (0, 5),
        ApiKey.SYNC_GROUP: (0, 5),
        ApiKey.DESCRIBE_GROUPS: (0, 5),
        ApiKey.LIST_GROUPS: (0, 5),
        ApiKey.DELETE_GROUPS: (0, 2),
        ApiKey.OFFSET_DELETE: (0, 0),
    }

    def __init__(
        self, logs: CoordinatorLogs, config: BrokerConfig, clock: Clock = _SYSTEM_CLOCK
    ) -> None:
        self._logs = logs
        self._clock = clock
        self._append_off_loop = config["streamrt.log.fsync"] == "always"
        self._partitions: int = config["offsets.topic.num.partitions"]
        self._timer = AsyncioTimer(self._enqueue_timer)
        self.coordinator = GroupCoordinator(
            GroupConfig.from_broker(config),
            self._clock,
            self._timer,
            partition_exists=self._partition_exists,
        )
        self._lock = asyncio.Lock()
        self._timer_queue: asyncio.Queue[Callable[[], Result | None]] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None
        self._state = "loading"

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        topics = self._logs.topics()
        if CONSUMER_OFFSETS not in topics:
            self._logs.create_topic(
                CONSUMER_OFFSETS,
                self._partitions,
                {"cleanup.policy": "compact"},
                internal=True,
            )
        else:
            self._partitions = topics[CONSUMER_OFFSETS].num_partitions
        loaded = 0
        async with self._lock:
            for partition in range(self._partitions):
                loaded += self._replay_partition(self._logs.log(CONSUMER_OFFSETS, partition))
            self._worker = asyncio.create_task(self._run_timers(), name="group-coordinator-timers")
            await self._apply(self.coordinator.on_loaded())
            self._state = "active"
        logger.info(
            "group coordinator loaded",
            extra=fields(records=loaded, groups=len(self.coordinator.groups)),
        )

    async def stop(self) -> None:
        async with self._lock:
            self._state = "stopped"
            self._timer.cancel_all()
            await self._apply(self.coordinator.unload())
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
            self._worker = None

    def _replay_partition(self, log: PartitionWriter) -> int:
        offset, count = log.log_start_offset, 0
        while offset < log.log_end_offset:
            chunk = log.read(offset, _READ_CHUNK)
            if not chunk.records:
                break
            records = MemoryRecords(chunk.records)
            while records.has_next():
                batch = records.next_batch()
                if batch is None:
                    break
                if batch.is_control_batch:
                    self._replay_marker(batch)
                    offset = max(offset, batch.next_offset)
                    continue
                pid = batch.producer_id if batch.is_transactional else -1
                for record in batch:
                    if record.key is not None and record.offset >= offset:
                        self.coordinator.replay_bytes(
                            bytes(record.key), _opt_bytes(record.value), pid
                        )
                        count += 1
                    offset = max(offset, record.offset + 1)
                offset = max(offset, batch.next_offset)
        return count

    # -- requests ---------------------------------------------------------------------------

    async def handle(self, ctx: Any, request: Any) -> Any:
        """The kio response for ``ctx.api_version``; awaits while JoinGroup/SyncGroup is parked."""
        if self._state != "active":
            if self._state == "loading" and ctx.api_key == ApiKey.HEARTBEAT:
                # Kafka answers a heartbeat during load blindly (NONE): the member's session
                # timer restarts at load anyway, and it must not rejoin because of the load.
                return error_response(ctx, request, ErrorCode.none)
            code = (
                ErrorCode.coordinator_load_in_progress
                if self._state == "loading"
                else ErrorCode.not_coordinator
            )
            return error_response(ctx, request, code)
        reply: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        async with self._lock:
            try:
                result = self.coordinator.step(lambda: self._dispatch(ctx, request, reply))
            except KafkaError as exc:
                return error_response(ctx, request, exc.code)
            await self._apply(result, reply, ctx, request)
        try:
            return await reply
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if reply.cancelled() and task is not None and not task.cancelling():
                logger.info(
                    "JoinGroup superseded by a newer one of the same member: dropped "
                    "unanswered as in Kafka; closing its connection",
                    extra=fields(client_id=ctx.client_id, client_host=ctx.client_host),
                )
            raise

    def _replay_marker(self, batch: Any) -> None:
        """A transaction marker in ``__consumer_offsets`` ends that producer's pending offsets."""
        for record in batch:
            commit = None if record.key is None else marker_is_commit(bytes(record.key))
            if commit is not None:
                self.coordinator.complete_txn(batch.producer_id, commit)

    async def write_txn_marker(
        self, partition: int, producer_id: int, epoch: int, commit: bool, coordinator_epoch: int
    ) -> None:
        """The transaction coordinator's marker for ``__consumer_offsets``: written under this
        coordinator's lock, then the producer's pending offsets are committed or dropped."""
        async with self._lock:
            log = self._logs.log(CONSUMER_OFFSETS, partition)
            log.append_marker(producer_id, epoch, commit, coordinator_epoch, self._clock.now_ms())
            self.coordinator.complete_txn(producer_id, commit)

    def _dispatch(self, ctx: Any, request: Any, reply: object) -> Result:
        c = self.coordinator
        handlers: dict[ApiKey, Callable[[], Result]] = {
            ApiKey.OFFSET_COMMIT: lambda: c.offset_commit(ctx, request),
            ApiKey.OFFSET_FETCH: lambda: c.offset_fetch(ctx, request),
            ApiKey.JOIN_GROUP: lambda: c.join_group(ctx, request, reply),
            ApiKey.HEARTBEAT: lambda: c.heartbeat(ctx, request),
            ApiKey.LEAVE_GROUP: lambda: c.leave_group(ctx, request),
            ApiKey.SYNC_GROUP: lambda: c.sync_group(ctx, request, reply),
            ApiKey.DESCRIBE_GROUPS: lambda: c.describe_groups(ctx, request),
            ApiKey.LIST_GROUPS: lambda: c.list_groups(ctx, request),
            ApiKey.DELETE_GROUPS: lambda: c.delete_groups(ctx, request),
            ApiKey.OFFSET_DELETE: lambda: c.offset_delete(ctx, request),
            ApiKey.TXN_OFFSET_COMMIT: lambda: c.txn_offset_commit(ctx, request),
        }
        handler = handlers.get(ApiKey(ctx.api_key))
        if handler is None:
            raise KafkaError(ErrorCode.unsupported_version, f"api {ctx.api_key} not served here")
        return handler()

    async def _apply(
        self,
        result: Result,
        reply: asyncio.Future[Any] | None = None,
        ctx: Any = None,
        request: Any = None,
    ) -> None:
        """Append, then replay or call back, then deliver completions and the reply."""
        error: ErrorCode | None = None
        if result.records:
            if self._append_off_loop:
                error = await asyncio.to_thread(self._append, result.records, result.producer)
            else:
                error = self._append(result.records, result.producer)
            if error is None and result.replay:
                pid = -1 if result.producer is None else result.producer[0]
                for record in result.records:
                    self.coordinator.replay(record, pid)
        for handle, response in result.completions:
            if isinstance(handle, asyncio.Future) and not handle.done():
                if response is None:  # never answered, as in Kafka: release its connection
                    handle.cancel()
                else:
                    handle.set_result(response)
        on_append = result.on_append
        if on_append is not None:
            code = None if error is None else map_append_error(error)
            await self._apply(self.coordinator.step(lambda: on_append(code)))
        if reply is None or reply.done() or result.response is None:
            return
        if error is not None and result.replay:
            reply.set_result(error_response(ctx, request, map_append_error(error)))
        else:
            reply.set_result(result.response)

    def _append(
        self, records: tuple[CoordinatorRecord, ...], producer: tuple[int, int] | None = None
    ) -> ErrorCode | None:
        """One batch per ``__consumer_offsets`` partition; an acknowledged write is in the log.

        Runs on a worker thread when every append fsyncs; the service's lock is held meanwhile,
        so no other step touches the coordinator or these partitions. With ``producer``
        (TxnOffsetCommit) it is that producer's transactional batch, appended with the
        coordinator origin: the log checks the epoch (47 for a zombie), not sequences.
        """
        txn, pid, epoch = (0, -1, -1) if producer is None else (1, producer[0], producer[1])
        now = self._clock.now_ms()
        by_partition: dict[int, list[CoordinatorRecord]] = {}
        for record in records:
            by_partition.setdefault(partition_for(record.group_id, self._partitions), []).append(
                record
            )
        try:
            for partition, batch in by_partition.items():
                builder = DefaultRecordBatchBuilder(2, 0, txn, pid, epoch, -1, 1 << 30)
                for i, record in enumerate(batch):
                    builder.append(i, timestamp=now, key=record.key, value=record.value, headers=[])
                self._logs.log(CONSUMER_OFFSETS, partition).append(
                    bytes(builder.build()), now, coordinator=producer is not None
                )
        except KafkaError as exc:
            logger.warning("__consumer_offsets append failed", extra=fields(error=exc.code.name))
            return exc.code
        except OSError as exc:
            logger.error("__consumer_offsets append failed", extra=fields(error=str(exc)))
            return ErrorCode.kafka_storage_error
        return None

    # -- timers -----------------------------------------------------------------------------

    def _enqueue_timer(self, run: Callable[[], Result | None]) -> None:
        self._timer_queue.put_nowait(run)

    async def _run_timers(self) -> None:
        while True:
            run = await self._timer_queue.get()
            async with self._lock:
                if self._state == "stopped":
                    continue
                try:
                    result = self.coordinator.step(run)
                    if result is not None:
                        await self._apply(result)
                except Exception:
                    logger.exception("group coordinator timer failed")

    # -- helpers ----------------------------------------------------------------------------

    def _partition_exists(self, topic: str, partition: int) -> bool:
        info = self._logs.topics().get(topic)
        return info is not None and 0 <= partition < info.num_partitions

    def group_metrics(self) -> list[GroupMetrics]:
        out = []
        for group_id, group in sorted(self.coordinator.groups.items()):
            static = sum(1 for m in group.members.values() if m.is_static)
            out.append(
                GroupMetrics(
                    group_id=group_id,
                    state=group.state.value,
                    generation_id=group.generation_id,
                    members_static=static,
                    members_dynamic=len(group.members) - static,
                    rebalances_total=self.coordinator.rebalances_total(group_id),
                )
            )
        return out


def _opt_bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)
