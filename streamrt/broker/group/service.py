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

from streamrt.broker.config import BrokerConfig
from streamrt.broker.consumer_group.coordinator import ConsumerGroupCoordinator
from streamrt.broker.consumer_group.group import ConsumerGroup
from streamrt.broker.consumer_group.listing import with_consumer_groups, with_groups
from streamrt.broker.consumer_group.requests import HeartbeatAnswer, HeartbeatRequest
from streamrt.broker.consumer_group_config import ConsumerGroupConfig
from streamrt.broker.coordination.appender import map_group_append_error as map_append_error
from streamrt.broker.coordination.core import CoordinatorCore
from streamrt.broker.coordination.log_writer import CoordinatorLogs
from streamrt.broker.coordination.partitioning import partition_for
from streamrt.broker.coordination.result import Result
from streamrt.broker.group import classic_in_consumer, consumer_offsets, group_types, migration
from streamrt.broker.group.coordinator import GroupCoordinator
from streamrt.broker.group.group import ClassicGroup
from streamrt.broker.group.modern_leave import leave_group
from streamrt.broker.group.rebalance import GroupConfig
from streamrt.broker.group.records import CoordinatorRecord
from streamrt.broker.group.state import GroupState
from streamrt.broker.log.codec import LogBatch
from streamrt.broker.log.control import marker_is_commit
from streamrt.broker.streams_group.coordinator import StreamsGroupCoordinator
from streamrt.broker.streams_group.group import StreamsGroup
from streamrt.broker.streams_group.requests import StreamsHeartbeatAnswer, StreamsHeartbeatRequest
from streamrt.broker.streams_group_config import StreamsGroupConfig
from streamrt.clock import Clock, SystemClock
from streamrt.errors import ErrorCode, KafkaError
from streamrt.logs import fields
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.error_responses import error_response

__all__ = ("CONSUMER_OFFSETS", "GroupCoordinatorService", "GroupMetrics", "partition_for")

logger = logging.getLogger(__name__)

CONSUMER_OFFSETS = "__consumer_offsets"
_SYSTEM_CLOCK = SystemClock()
EMPTY = GroupState.EMPTY


@dataclasses.dataclass(frozen=True, slots=True)
class GroupMetrics:
    group_id: str
    state: str
    generation_id: int
    members_static: int
    members_dynamic: int
    rebalances_total: int


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
        partitions: int = config["offsets.topic.num.partitions"]
        self._core = CoordinatorCore(
            "group-coordinator", logs, CONSUMER_OFFSETS, partitions, clock, self._on_timer
        )
        self.coordinator = GroupCoordinator(
            GroupConfig.from_broker(config),
            self._clock,
            self._core.timer,
            partition_exists=self._core.partition_exists,
        )
        # KIP-848 groups: same lock, timer, offsets table and log, their own records
        self.consumer = ConsumerGroupCoordinator(
            ConsumerGroupConfig.from_broker(config),
            self._clock,
            self._core.timer,
            topics=lambda: {name: t.num_partitions for name, t in logs.topics().items()},
            topic_ids=lambda: {name: t.topic_id for name, t in logs.topics().items()},
            downgrade=migration.Downgrader(self.coordinator),
        )
        # KIP-1071 streams groups: the same again, with their own records
        self.streams = StreamsGroupCoordinator(
            StreamsGroupConfig.from_broker(config),
            self._core.timer,
            topics=lambda: {name: t.num_partitions for name, t in logs.topics().items()},
        )

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        self._core.ensure_topic()
        stats, _ = await self._core.load(self._replay_bytes, self._on_loaded, self._replay_marker)
        self._schedule_consumer_offsets_cleanup()
        logger.info(
            "group coordinator loaded",
            extra=fields(
                records=stats.loaded, skipped=stats.skipped, groups=len(self.coordinator.groups)
            ),
        )

    def _replay_bytes(self, key: bytes, value: bytes | None, producer_id: int = -1) -> None:
        """One ``__consumer_offsets`` record: a consumer or streams group's, or the classic
        side's."""
        if producer_id >= 0 or not (
            self.consumer.replay(key, value) or self.streams.replay(key, value)
        ):
            self.coordinator.replay_bytes(key, value, producer_id)

    def _drop_classic_twins(self) -> None:
        """A consumer or streams group's offsets replayed through the classic side made an
        empty classic group of the same id: it is not one."""
        for group_id in [*self.consumer.groups, *self.streams.groups]:
            twin = self.coordinator.groups.get(group_id)
            if twin is not None and twin.is_in(GroupState.EMPTY):
                del self.coordinator.groups[group_id]

    async def _on_loaded(self) -> None:
        self.consumer.on_loaded()
        self.streams.on_loaded()
        self._drop_classic_twins()
        await self._apply(self.coordinator.on_loaded())

    async def stop(self) -> None:
        await self._core.stop(lambda: self._apply(self.coordinator.unload()))

    # -- requests ---------------------------------------------------------------------------

    async def handle(self, ctx: Any, request: Any) -> Any:
        """The kio response for ``ctx.api_version``; awaits while JoinGroup/SyncGroup is parked."""
        code = self._core.unavailable()
        if code is not None:
            if code == ErrorCode.coordinator_load_in_progress and ctx.api_key == ApiKey.HEARTBEAT:
                # Kafka answers a heartbeat during load blindly (NONE): the member's session
                # timer restarts at load anyway, and it must not rejoin because of the load.
                return error_response(ctx, request, ErrorCode.none)
            return error_response(ctx, request, code)
        reply: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        async with self._core.lock:
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

    def _replay_marker(self, batch: LogBatch) -> None:
        """A transaction marker in ``__consumer_offsets`` ends that producer's pending offsets."""
        for record in batch.records():
            commit = None if record.key is None else marker_is_commit(bytes(record.key))
            if commit is not None:
                self.coordinator.complete_txn(batch.producer_id, commit)

    async def write_txn_marker(
        self, partition: int, producer_id: int, epoch: int, commit: bool, coordinator_epoch: int
    ) -> None:
        """The transaction coordinator's marker for ``__consumer_offsets``: written under this
        coordinator's lock, then the producer's pending offsets are committed or dropped."""
        async with self._core.lock:
            log = self._logs.log(CONSUMER_OFFSETS, partition)
            log.append_marker(producer_id, epoch, commit, coordinator_epoch, self._clock.now_ms())
            self.coordinator.complete_txn(producer_id, commit)
            self._drop_classic_twins()

    def _dispatch(self, ctx: Any, request: Any, reply: object) -> Result:
        c = self.coordinator
        handlers: dict[ApiKey, Callable[[], Result]] = {
            ApiKey.OFFSET_COMMIT: lambda: self._offset_commit(ctx, request),
            ApiKey.OFFSET_FETCH: lambda: self._offset_fetch(ctx, request),
            ApiKey.JOIN_GROUP: lambda: classic_in_consumer.route_join(
                c, self.consumer, self.streams, ctx, request, reply
            ),
            ApiKey.HEARTBEAT: lambda: classic_in_consumer.route_heartbeat(
                c, self.consumer, ctx, request
            ),
            ApiKey.LEAVE_GROUP: lambda: leave_group(
                c, (self.consumer, self.streams), ctx, request, reply
            ),
            ApiKey.SYNC_GROUP: lambda: classic_in_consumer.route_sync(
                c, self.consumer, ctx, request, reply
            ),
            ApiKey.DESCRIBE_GROUPS: lambda: self._describe_groups(ctx, request),
            ApiKey.LIST_GROUPS: lambda: self._list_groups(ctx, request),
            ApiKey.DELETE_GROUPS: lambda: self._delete_groups(ctx, request),
            ApiKey.OFFSET_DELETE: lambda: group_types.offset_delete(
                c, (self.consumer, self.streams), ctx, request
            ),
            ApiKey.TXN_OFFSET_COMMIT: lambda: self._txn_offset_commit(ctx, request),
        }
        handler = handlers.get(ApiKey(ctx.api_key))
        if handler is None:
            raise KafkaError(ErrorCode.unsupported_version, f"api {ctx.api_key} not served here")
        return handler()

    # -- consumer groups (KIP-848) beside the classic ones --------------------------------------

    async def consumer_heartbeat(self, request: HeartbeatRequest) -> HeartbeatAnswer:
        """A ConsumerGroupHeartbeat under the lock every step takes: a streams group's id, or a
        classic group with members that the migration policy keeps classic, is refused."""
        code = self._core.unavailable()
        if code is not None:
            return HeartbeatAnswer(code)
        c, consumer = self.coordinator, self.consumer
        async with self._core.lock:
            gid = request.group_id
            classic = self.coordinator.groups.get(gid)
            before = self.consumer.snapshot(gid)
            try:  # a classic group with members may become a consumer group first
                upgrade = c.step(lambda: migration.maybe_upgrade(c, consumer, request))
            except KafkaError as exc:
                return HeartbeatAnswer(exc.code, str(exc.args[0]) if exc.args else None)
            now = c.groups.get(gid)
            taken = gid in self.streams.groups or (now is not None and not now.is_in(EMPTY))
            answer = self.coordinator.step(lambda: self.consumer.heartbeat(request, taken))
            if upgrade is not None:
                await self._apply(Result(completions=upgrade.completions))
            if classic is not None and gid in self.consumer.groups:
                # upgraded, or an empty classic group (offsets only) taken over, as in Kafka
                self.coordinator.groups.pop(gid, None)
            refused = upgrade is not None and answer.error is not ErrorCode.none
            records = (upgrade.records if upgrade else ()) + answer.records
            error = await self._append_records(records) if records and not refused else None
            if refused or error is not None:
                # undone: a refused join takes its upgrade along (as in Kafka); not durable
                migration.undo(c, consumer, gid, before, classic)
                return answer if error is None else HeartbeatAnswer(map_append_error(error))
        return answer

    async def streams_heartbeat(self, request: StreamsHeartbeatRequest) -> StreamsHeartbeatAnswer:
        """A StreamsGroupHeartbeat, under the lock every coordinator step takes; a group id
        held by a classic group with members or by a consumer group is refused."""
        code = self._core.unavailable()
        if code is not None:
            return StreamsHeartbeatAnswer(code, None, request.member_id)
        async with self._core.lock:
            gid = request.group_id
            classic = self.coordinator.groups.get(gid)
            taken = gid in self.consumer.groups or (
                classic is not None and not classic.is_in(GroupState.EMPTY)
            )
            before = self.streams.snapshot(gid)
            answer = self.coordinator.step(lambda: self.streams.heartbeat(request, taken))
            if classic is not None and not taken and gid in self.streams.groups:
                del self.coordinator.groups[gid]  # an empty classic group (offsets only)
            if answer.records:
                error = await self._append_records(answer.records)
                if error is not None:  # not durable: undone, and the member must not act on it
                    self.streams.restore(gid, before)
                    if classic is not None:
                        self.coordinator.groups[gid] = classic
                    return StreamsHeartbeatAnswer(map_append_error(error), None, request.member_id)
        return answer

    def _member_groups(self, group_id: str) -> consumer_offsets.MemberChecks | None:
        """The consumer or streams coordinator owning ``group_id``, if one does."""
        if group_id in self.consumer.groups:
            return self.consumer
        if group_id in self.streams.groups:
            return self.streams
        return None

    async def _append_records(self, records: tuple[CoordinatorRecord, ...]) -> ErrorCode | None:
        if self._append_off_loop:
            return await asyncio.to_thread(self._append, records)
        return self._append(records)

    def _offset_commit(self, ctx: Any, request: Any) -> Result:
        owner = self._member_groups(request.group_id)
        if owner is None:
            return self.coordinator.offset_commit(ctx, request)
        response, records = consumer_offsets.commit(
            owner, self.coordinator.offsets, self._clock.now_ms(), ctx.api_version, request
        )
        return Result(response=response, records=records, replay=True)

    def _consumer_offsets_cleanup(self) -> Result:
        """Offsets retention of consumer and streams groups (the classic ones' is the
        coordinator's)."""
        config = self.coordinator.config
        records: tuple[CoordinatorRecord, ...] = ()
        for owner in (self.consumer, self.streams):
            expired, gone = consumer_offsets.expired(
                owner,
                self.coordinator.offsets,
                self.coordinator.pending_txn_offsets,
                owner.topics(),
                self._clock.now_ms(),
                config.offsets_retention_ms,
            )
            records += expired
            for group_id in gone:  # tombstones: replay is a no-op
                records += owner.drop_if_empty(group_id)
        self._schedule_consumer_offsets_cleanup()
        return Result(records=records, replay=True)

    def _schedule_consumer_offsets_cleanup(self) -> None:
        interval = self.coordinator.config.offsets_retention_check_interval_ms
        self._core.timer.schedule(
            "consumer-offsets-retention", interval, self._consumer_offsets_cleanup
        )

    def _txn_offset_commit(self, ctx: Any, request: Any) -> Result:
        owner = self._member_groups(request.group_id)
        if owner is None:
            return self.coordinator.txn_offset_commit(ctx, request)
        response, records = consumer_offsets.txn_commit(
            owner, self.coordinator.offsets, self._clock.now_ms(), ctx.api_version, request
        )
        producer = (request.producer_id, request.producer_epoch)
        return Result(response=response, records=records, replay=True, producer=producer)

    def _describe_groups(self, ctx: Any, request: Any) -> Result:
        """A consumer or streams group described by the classic API: Dead with
        GROUP_ID_NOT_FOUND, as Kafka answers ("is not a classic group");
        ConsumerGroupDescribe or StreamsGroupDescribe describes it."""
        result = self.coordinator.describe_groups(ctx, request)
        modern = (self.consumer.groups, self.streams.groups)
        consumer = {g for g in request.groups if any(g in groups for groups in modern)}
        if not consumer:
            return result
        groups = tuple(
            dataclasses.replace(g, error_code=ErrorCode.group_id_not_found)
            if g.group_id in consumer and g.group_id not in self.coordinator.groups
            else g
            for g in result.response.groups
        )
        return dataclasses.replace(
            result, response=dataclasses.replace(result.response, groups=groups)
        )

    def _list_groups(self, ctx: Any, request: Any) -> Result:
        result = self.coordinator.list_groups(ctx, request)
        response = with_consumer_groups(result.response, self.consumer, request)
        response = with_groups(response, self.streams.groups, request, "streams")
        return dataclasses.replace(result, response=response)

    def _delete_groups(self, ctx: Any, request: Any) -> Result:
        """An empty consumer or streams group goes as an empty classic group does (its offsets
        and the group get tombstones); one with members is NON_EMPTY_GROUP, as in Kafka."""
        owners = (self.consumer, self.streams)  # streams groups go the same way
        busy = {g for g in request.groups_names for o in owners if o.has_members(g)}
        tombstones: tuple[CoordinatorRecord, ...] = ()
        for gid in request.groups_names:
            for owner in owners:
                if gid in owner.groups and gid not in busy:
                    tombstones += owner.drop_if_empty(gid)
                    if gid not in self.coordinator.groups:
                        self.coordinator.groups[gid] = ClassicGroup(gid, self._clock.now_ms())
        # the consumer group's tombstones first (replaying them is a no-op: it is gone)
        result = Result(records=tombstones, replay=True).then(
            self.coordinator.delete_groups(ctx, request)
        )
        if not busy:
            return result
        results = tuple(
            dataclasses.replace(r, error_code=ErrorCode.non_empty_group)
            if r.group_id in busy
            else r
            for r in result.response.results
        )
        return dataclasses.replace(
            result, response=dataclasses.replace(result.response, results=results)
        )

    def _offset_fetch(self, ctx: Any, request: Any) -> Result:
        errors = consumer_offsets.fetch_errors(self.consumer, ctx.api_version, request)
        errors.update(consumer_offsets.fetch_errors(self.streams, ctx.api_version, request))
        result = self.coordinator.offset_fetch(ctx, request)
        response = consumer_offsets.with_fetch_errors(result.response, errors)
        return dataclasses.replace(result, response=response)

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
                    self._replay_bytes(record.key, record.value, pid)
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
        so no other step touches the coordinator or these partitions.
        """
        return self._core.append(records, lambda r: r.group_id, producer)

    # -- timers -----------------------------------------------------------------------------

    async def _on_timer(self, run: Callable[[], Result | None]) -> None:
        result = self.coordinator.step(run)
        if result is not None:
            await self._apply(result)

    # -- helpers ----------------------------------------------------------------------------

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
        broker_driven: list[tuple[str, ConsumerGroup | StreamsGroup]] = [
            *self.consumer.groups.items(),
            *self.streams.groups.items(),
        ]
        for group_id, cgroup in sorted(broker_driven, key=lambda kv: kv[0]):
            # KIP-848 and KIP-1071 groups: the group epoch as the generation, target
            # assignments computed as the rebalances (an id also held by a classic group is
            # shown once, as classic)
            if group_id in self.coordinator.groups:
                continue
            static = sum(1 for m in cgroup.members.values() if m.instance_id is not None)
            out.append(
                GroupMetrics(
                    group_id=group_id,
                    state=cgroup.state.value,
                    generation_id=cgroup.group_epoch,
                    members_static=static,
                    members_dynamic=len(cgroup.members) - static,
                    rebalances_total=cgroup.assignments_computed,
                )
            )
        return out
