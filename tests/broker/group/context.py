"""``CoordinatorTestContext``: drives the pure coordinator like Kafka's test context does.

Time moves only with :meth:`sleep`; timers fire on ``ManualTimer.poll``; records go to an
in-memory list standing in for ``__consumer_offsets``. Each request returns a :class:`Pending`
whose ``response`` is set when the coordinator answers (at once, or later when parked).
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

from streamrt.broker.coordination.appender import map_group_append_error as map_append_error
from streamrt.broker.coordination.result import Result
from streamrt.broker.group.coordinator import GroupConfig, GroupCoordinator
from streamrt.broker.group.records import CoordinatorRecord
from streamrt.broker.group.timer import ManualTimer
from streamrt.clock import ManualClock
from streamrt.errors import ErrorCode
from streamrt.wire.codec import build, codec_for
from streamrt.wire.context import RequestContext

TEST_CONFIG = GroupConfig(
    min_session_timeout_ms=10,
    max_session_timeout_ms=600_000,
    initial_rebalance_delay_ms=3000,
)
PROTOCOLS: tuple[tuple[str, bytes], ...] = (("range", b"range-meta"),)


@dataclasses.dataclass(eq=False)
class Pending:
    """A request's reply slot; ``response`` stays ``None`` while the request is parked."""

    response: Any = None
    abandoned: bool = False  # the coordinator said it will never answer this request

    @property
    def done(self) -> bool:
        return self.response is not None

    @property
    def error(self) -> ErrorCode:
        assert self.response is not None, "request still parked"
        return ErrorCode(self.response.error_code)


def fetch_topic(name: str, partitions: list[int], version: int) -> Any:
    """``build`` does not convert dicts inside nullable arrays, so build the entity here."""
    module = importlib.import_module(f"kio.schema.offset_fetch.v{version}.request")
    return build(module.OffsetFetchRequestTopic, name=name, partition_indexes=partitions)


class CoordinatorTestContext:
    def __init__(self, config: GroupConfig = TEST_CONFIG, start_ms: int = 0) -> None:
        self.clock = ManualClock(start_ms)
        self.timer = ManualTimer(self.clock)
        self.config = config
        self.known_partitions: set[tuple[str, int]] | None = None
        self.coordinator = GroupCoordinator(
            config, self.clock, self.timer, partition_exists=self._partition_exists
        )
        self.log: list[CoordinatorRecord] = []
        self.fail_next_append: ErrorCode | None = None

    def _partition_exists(self, topic: str, partition: int) -> bool:
        return self.known_partitions is None or (topic, partition) in self.known_partitions

    # -- plumbing ---------------------------------------------------------------------------

    def apply(self, result: Result, pending: Pending | None = None) -> None:
        """What the runtime does: append, then replay or call back, then deliver replies."""
        error = None
        if result.records:
            error, self.fail_next_append = self.fail_next_append, None
            if error is None:
                self.log.extend(result.records)
                if result.replay:
                    pid = -1 if result.producer is None else result.producer[0]
                    for record in result.records:
                        self.coordinator.replay(record, pid)
        for handle, response in result.completions:
            assert isinstance(handle, Pending)
            if response is None:
                handle.abandoned = True
            handle.response = response
        if result.on_append is not None:
            self.apply(result.on_append(None if error is None else map_append_error(error)))
        if pending is not None and result.response is not None:
            pending.response = result.response

    def sleep(self, ms: int) -> None:
        """Advance time, stopping at each deadline on the way so that timers fire on time."""
        target = self.clock.now_ms() + ms
        while True:
            deadline = self.timer.next_deadline()
            step_to = target if deadline is None or deadline > target else deadline
            self.clock.advance(step_to - self.clock.now_ms())
            for result in self.timer.poll():
                self.apply(result)
            if step_to == target:
                return

    def ctx(self, api_key: int, version: int, client_id: str = "client") -> RequestContext:
        return RequestContext(api_key, version, 1, client_id, "/127.0.0.1")

    @staticmethod
    def request(api_key: int, version: int, **fields: Any) -> Any:
        return build(codec_for(api_key, version).request_cls, **fields)

    # -- requests ---------------------------------------------------------------------------

    def join(
        self,
        group_id: str = "g",
        member_id: str = "",
        instance_id: str | None = None,
        *,
        version: int = 9,
        session_ms: int = 10_000,
        rebalance_ms: int = 10_000,
        protocols: tuple[tuple[str, bytes], ...] = PROTOCOLS,
        protocol_type: str = "consumer",
        client_id: str = "client",
    ) -> Pending:
        request = self.request(
            11,
            version,
            group_id=group_id,
            session_timeout=session_ms,
            rebalance_timeout=rebalance_ms,
            member_id=member_id,
            group_instance_id=instance_id,
            protocol_type=protocol_type,
            protocols=[{"name": n, "metadata": m} for n, m in protocols],
            reason=None,
        )
        pending = Pending()
        result = self.coordinator.join_group(self.ctx(11, version, client_id), request, pending)
        self.apply(result, pending)
        return pending

    def sync(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        instance_id: str | None = None,
        assignments: dict[str, bytes] | None = None,
        *,
        version: int = 5,
        protocol_type: str | None = "consumer",
        protocol_name: str | None = "range",
    ) -> Pending:
        request = self.request(
            14,
            version,
            group_id=group_id,
            generation_id=generation_id,
            member_id=member_id,
            group_instance_id=instance_id,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            assignments=[{"member_id": k, "assignment": v} for k, v in (assignments or {}).items()],
        )
        pending = Pending()
        self.apply(self.coordinator.sync_group(self.ctx(14, version), request, pending), pending)
        return pending

    def heartbeat(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        instance_id: str | None = None,
        version: int = 4,
    ) -> ErrorCode:
        request = self.request(
            12,
            version,
            group_id=group_id,
            generation_id=generation_id,
            member_id=member_id,
            group_instance_id=instance_id,
        )
        pending = Pending()
        self.apply(self.coordinator.heartbeat(self.ctx(12, version), request), pending)
        return pending.error

    def leave(self, group_id: str, members: list[tuple[str, str | None]], version: int = 5) -> Any:
        if version >= 3:
            fields: dict[str, Any] = {
                "members": [
                    {"member_id": m, "group_instance_id": i, "reason": None} for m, i in members
                ]
            }
        else:
            fields = {"member_id": members[0][0]}
        request = self.request(13, version, group_id=group_id, **fields)
        pending = Pending()
        self.apply(self.coordinator.leave_group(self.ctx(13, version), request), pending)
        return pending.response

    def commit(
        self,
        group_id: str,
        member_id: str = "",
        generation_id: int = -1,
        instance_id: str | None = None,
        offsets: dict[tuple[str, int], int] | None = None,
        *,
        version: int = 9,
        metadata: str = "",
        retention_ms: int = -1,
    ) -> dict[tuple[str, int], ErrorCode]:
        topics: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), offset in (offsets or {("t", 0): 1}).items():
            topics.setdefault(topic, []).append(
                {
                    "partition_index": partition,
                    "committed_offset": offset,
                    "committed_leader_epoch": -1,
                    "committed_metadata": metadata,
                }
            )
        request = self.request(
            8,
            version,
            group_id=group_id,
            generation_id_or_member_epoch=generation_id,
            member_id=member_id,
            group_instance_id=instance_id,
            retention_time=retention_ms,
            topics=[{"name": t, "partitions": ps} for t, ps in topics.items()],
        )
        pending = Pending()
        self.apply(self.coordinator.offset_commit(self.ctx(8, version), request), pending)
        return {
            (t.name, p.partition_index): ErrorCode(p.error_code)
            for t in pending.response.topics
            for p in t.partitions
        }

    def fetch(self, group_id: str, topics: dict[str, list[int]] | None, version: int = 7) -> Any:
        request = self.request(
            9,
            version,
            group_id=group_id,
            topics=None
            if topics is None
            else [fetch_topic(t, ps, version) for t, ps in topics.items()],
            require_stable=False,
        )
        pending = Pending()
        self.apply(self.coordinator.offset_fetch(self.ctx(9, version), request), pending)
        return pending.response

    def describe(self, group_id: str = "g", version: int = 5) -> Any:
        request = self.request(15, version, groups=[group_id], include_authorized_operations=False)
        pending = Pending()
        self.apply(self.coordinator.describe_groups(self.ctx(15, version), request), pending)
        return pending.response.groups[0]

    # -- stories ----------------------------------------------------------------------------

    def join_stable_group(
        self,
        group_id: str = "g",
        instances: tuple[str | None, ...] = ("i1", "i2"),
        session_ms: int = 10_000,
        protocols: tuple[tuple[str, bytes], ...] = PROTOCOLS,
    ) -> dict[str | None, str]:
        """Members join (static ones with their instance id), the leader syncs: Stable.

        Returns instance id (or ``None`` for one dynamic member) -> member id.
        """
        pendings: dict[str | None, Pending] = {}
        for instance in instances:
            if instance is None:
                first = self.join(group_id, session_ms=session_ms, protocols=protocols)
                assert first.error is ErrorCode.member_id_required
                member_id = first.response.member_id
                pendings[instance] = self.join(
                    group_id, member_id, session_ms=session_ms, protocols=protocols
                )
            else:
                pendings[instance] = self.join(
                    group_id, instance_id=instance, session_ms=session_ms, protocols=protocols
                )
        for _ in range(100):
            if all(p.done for p in pendings.values()):
                break
            self.sleep(500)
        ids = {k: p.response.member_id for k, p in pendings.items()}
        generation = next(iter(pendings.values())).response.generation_id
        leader = next(iter(pendings.values())).response.leader
        assignment = {mid: f"assign-{mid}".encode() for mid in ids.values()}
        syncs = [
            self.sync(
                group_id,
                mid,
                generation,
                inst,
                assignment if mid == leader else None,
                protocol_name=protocols[0][0],
            )
            for inst, mid in ids.items()
        ]
        assert all(s.error is ErrorCode.none for s in syncs)
        assert self.coordinator.groups[group_id].state.value == "Stable"
        return ids
