"""KIP-1071 over real sockets: StreamsGroupHeartbeat (88) and StreamsGroupDescribe (89) v0
against the embedded broker, spoken with kio's schemas through streamrt's admin connection.

Two members of a count-with-repartition topology: the broker creates the internal topics,
tasks are split, Describe and ListGroups show the group, offsets commit at the member epoch; a
static member bounces and gets its tasks back without the other reconciling; malformed and
refused requests get clear errors and the broker keeps serving."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from streamrt.admin.connection import BrokerConnection
from streamrt.broker.embedded import BrokerThread
from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from tests.kafka_helpers import create_topic

T = TypeVar("T")
APP = "wordcount"
REPARTITION = f"{APP}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"
CHANGELOG = f"{APP}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog"


def _topology(epoch: int = 0) -> dict[str, Any]:
    def info(name: str) -> dict[str, Any]:
        return {"name": name, "partitions": 0, "replication_factor": 0, "topic_configs": []}

    return {
        "epoch": epoch,
        "subtopologies": [
            {
                "subtopology_id": "0",
                "source_topics": ["words"],
                "state_changelog_topics": [],
                "repartition_sink_topics": [REPARTITION],
                "repartition_source_topics": [],
                "copartition_groups": [],
            },
            {
                "subtopology_id": "1",
                "state_changelog_topics": [info(CHANGELOG)],
                "repartition_source_topics": [info(REPARTITION)],
                "copartition_groups": [],
            },
        ],
    }


def _beat(
    conn: BrokerConnection,
    member: str,
    epoch: int,
    owned: Any = None,
    *,
    instance: str | None = None,
    process: str | None = None,
    topology: dict[str, Any] | None = None,
    **extra: Any,
) -> Awaitable[Any]:
    joining = epoch == 0
    fields: dict[str, Any] = {
        "group_id": APP,
        "member_id": member,
        "member_epoch": epoch,
        "endpoint_information_epoch": 0,
        "instance_id": instance,
        "rebalance_timeout": 30_000 if joining else -1,
        "topology": (topology or _topology()) if joining else None,
        "active_tasks": [] if joining else owned,
        "standby_tasks": [] if joining or owned is not None else None,
        "warmup_tasks": [] if joining or owned is not None else None,
        "process_id": process or (f"proc-{member}" if joining else None),
        "user_endpoint": None,
        "client_tags": [] if joining else None,
        "task_offsets": None,
        "task_end_offsets": None,
        "shutdown_application": False,
    }
    fields.update(extra)
    return conn.call(ApiKey.STREAMS_GROUP_HEARTBEAT, **fields)


def _active(resp: Any) -> list[dict[str, Any]]:
    return [
        {"subtopology_id": t.subtopology_id, "partitions": list(t.partitions)}
        for t in resp.active_tasks
    ]


def _count(resp: Any) -> int:
    return sum(len(t.partitions) for t in resp.active_tasks)


def _run(port: int, scenario: Callable[[BrokerConnection], Awaitable[T]]) -> T:
    async def go() -> T:
        conn = await BrokerConnection.open("127.0.0.1", port)
        try:
            return await scenario(conn)
        finally:
            await conn.close()

    return asyncio.run(go())


async def _converge(conn: BrokerConnection, members: dict[str, Any]) -> dict[str, Any]:
    """Heartbeat every member with what it was last given until the group is stable."""
    last: dict[str, Any] = {}
    for _ in range(40):
        for m, first in members.items():
            prev = last.get(m, first)
            resp = await _beat(conn, m, prev.member_epoch, _active(prev))
            assert resp.error_code == ErrorCode.none, resp
            last[m] = resp if resp.active_tasks is not None else _keep(prev, resp)
        described = await conn.call(
            ApiKey.STREAMS_GROUP_DESCRIBE, group_ids=[APP], include_authorized_operations=False
        )
        if described.groups[0].group_state == "Stable":
            return last
        await asyncio.sleep(0.05)
    raise AssertionError(f"never stable: {described}")


class _Kept:
    def __init__(self, prev: Any, resp: Any) -> None:
        self.active_tasks = prev.active_tasks
        self.member_epoch = resp.member_epoch


def _keep(prev: Any, resp: Any) -> Any:
    return _Kept(prev, resp)


def test_advertised_at_v0(broker: BrokerThread) -> None:
    versions = _run(broker.port, lambda c: asyncio.sleep(0, dict(c.broker_versions)))
    assert versions[ApiKey.STREAMS_GROUP_HEARTBEAT] == (0, 0)
    assert versions[ApiKey.STREAMS_GROUP_DESCRIBE] == (0, 0)


def test_two_members_internal_topics_describe_list_and_commit(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "words", partitions=2)

    async def scenario(conn: BrokerConnection) -> None:
        a = await _beat(conn, "m-a", 0)
        assert a.error_code == ErrorCode.none and a.member_epoch >= 1
        assert [s.status_code for s in a.status] == [3]  # MISSING_INTERNAL_TOPICS, created now
        b = await _beat(conn, "m-b", 0)
        assert b.error_code == ErrorCode.none
        last = await _converge(conn, {"m-a": a, "m-b": b})
        assert _count(last["m-a"]) == _count(last["m-b"]) == 2  # 4 tasks over 2 members
        described = await conn.call(
            ApiKey.STREAMS_GROUP_DESCRIBE, group_ids=[APP], include_authorized_operations=True
        )
        (group,) = described.groups
        assert group.error_code == ErrorCode.none and group.topology is not None
        assert [s.subtopology_id for s in group.topology.subtopologies] == ["0", "1"]
        assert sorted(m.member_id for m in group.members) == ["m-a", "m-b"]
        listed = await conn.call(ApiKey.LIST_GROUPS, states_filter=[], types_filter=["streams"])
        assert [(g.group_id, g.group_type) for g in listed.groups] == [(APP, "streams")]
        epoch = last["m-a"].member_epoch
        for member_epoch, code in (
            (epoch, ErrorCode.none),
            (epoch + 7, ErrorCode.stale_member_epoch),
        ):
            commit = await conn.call(
                ApiKey.OFFSET_COMMIT,
                group_id=APP,
                generation_id_or_member_epoch=member_epoch,
                member_id="m-a",
                group_instance_id=None,
                retention_time_ms=-1,
                topics=[
                    {
                        "name": "words",
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": 5,
                                "committed_leader_epoch": -1,
                                "committed_metadata": "",
                            }
                        ],
                    }
                ],
            )
            assert commit.topics[0].partitions[0].error_code == code

    _run(broker.port, scenario)
    topics = broker.broker.core.logs.topics()  # type: ignore[union-attr]
    assert topics[REPARTITION].num_partitions == 2 and topics[CHANGELOG].num_partitions == 2
    assert topics[CHANGELOG].configs.get("cleanup.policy") == "compact"


def test_static_member_bounce_keeps_its_tasks_and_the_other_is_not_touched(
    broker: BrokerThread,
) -> None:
    create_topic(broker.bootstrap, "words", partitions=2)

    async def scenario(conn: BrokerConnection) -> None:
        a = await _beat(conn, "a-1", 0, instance="A", process="pa")
        await _beat(conn, "a-1", a.member_epoch, [], instance="A")  # topics now exist
        b = await _beat(conn, "b-1", 0, instance="B", process="pb")
        last = await _converge(conn, {"a-1": a, "b-1": b})
        mine = _active(last["a-1"])
        left = await _beat(conn, "a-1", -2, instance="A")
        assert left.error_code == ErrorCode.none and left.member_epoch == -2
        again = await _beat(conn, "a-2", 0, instance="A", process="pa")
        assert again.error_code == ErrorCode.none and _active(again) == mine
        assert again.member_epoch == last["b-1"].member_epoch  # no new group epoch
        b2 = await _beat(conn, "b-1", last["b-1"].member_epoch, _active(last["b-1"]))
        assert b2.error_code == ErrorCode.none and b2.active_tasks is None  # not reconciled
        fenced = await _beat(conn, "a-1", last["a-1"].member_epoch, mine, instance="A")
        assert fenced.error_code == ErrorCode.fenced_instance_id
        twin = await _beat(conn, "a-3", 0, instance="A", process="pa")
        assert twin.error_code == ErrorCode.unreleased_instance_id

    _run(broker.port, scenario)


def test_bad_requests_get_errors_and_the_broker_keeps_serving(
    broker: BrokerThread, broker_factory: Callable[..., BrokerThread]
) -> None:
    async def scenario(conn: BrokerConnection) -> list[tuple[int, str | None]]:
        out = []
        for resp in (
            await _beat(conn, "", 0),
            await _beat(conn, "m", 0, task_offsets=[]),
            await _beat(conn, "m", 3, []),
        ):
            out.append((resp.error_code, resp.error_message))
        return out

    answers = _run(broker.port, scenario)
    assert answers[0] == (ErrorCode.invalid_request, "MemberId can't be empty.")
    assert answers[1] == (ErrorCode.invalid_request, "TaskOffsets are not supported yet.")
    assert answers[2][0] == ErrorCode.group_id_not_found
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as s:
        header = struct.pack(">hhih", ApiKey.STREAMS_GROUP_HEARTBEAT, 0, 1, 3) + b"raw\x00"
        body = header + b"\x05\xff\xff\xff"  # a truncated body
        s.sendall(len(body).to_bytes(4, "big") + body)
        s.settimeout(10)
        with contextlib.suppress(OSError):  # an answer or a closed connection, not a crash
            s.recv(4)
    ok = _run(broker.port, lambda c: _beat(c, "", 0))
    assert ok.error_code == ErrorCode.invalid_request  # still serving
    off = broker_factory({"group.coordinator.rebalance.protocols": "classic,consumer"})
    refused = _run(off.port, lambda c: _beat(c, "m", 0))
    assert refused.error_code == ErrorCode.unsupported_version


def test_the_group_survives_a_broker_bounce(
    broker_factory: Callable[..., BrokerThread], tmp_path: Any
) -> None:
    """Members, epochs and tasks come back from ``__consumer_offsets`` after a restart; a
    static member that left with -2 before it rejoins afterwards with its tasks."""
    data = tmp_path / "bounced"
    first = broker_factory(data_dir=data)
    create_topic(first.bootstrap, "words", partitions=2)

    async def before(conn: BrokerConnection) -> tuple[Any, Any, Any]:
        a = await _beat(conn, "a-1", 0, instance="A", process="pa")
        await _beat(conn, "a-1", a.member_epoch, [], instance="A")
        b = await _beat(conn, "b-1", 0, process="pb")
        last = await _converge(conn, {"a-1": a, "b-1": b})
        await _beat(conn, "a-1", -2, instance="A")
        described = await conn.call(
            ApiKey.STREAMS_GROUP_DESCRIBE, group_ids=[APP], include_authorized_operations=False
        )
        return last["a-1"], last["b-1"], described.groups[0]

    a, b, group = _run(first.port, before)
    first.stop()
    second = broker_factory(data_dir=data)

    async def after(conn: BrokerConnection) -> tuple[Any, Any, Any]:
        described = await conn.call(
            ApiKey.STREAMS_GROUP_DESCRIBE, group_ids=[APP], include_authorized_operations=False
        )
        back = await _beat(conn, "a-2", 0, instance="A", process="pa")
        b2 = await _beat(conn, "b-1", b.member_epoch, _active(b))
        return described.groups[0], back, b2

    regroup, back, b2 = _run(second.port, after)

    def members(g: Any) -> dict[str, tuple[int, list[Any]]]:
        return {
            m.member_id: (
                m.member_epoch,
                [(t.subtopology_id, t.partitions) for t in m.assignment.active_tasks],
            )
            for m in g.members
        }

    assert members(regroup) == members(group) and regroup.topology == group.topology
    assert regroup.group_epoch == group.group_epoch
    assert members(regroup)["a-1"][0] == -2
    assert back.error_code == ErrorCode.none and _active(back) == _active(a)
    assert back.member_epoch == group.group_epoch  # no new epoch after the bounce either
    assert b2.error_code == ErrorCode.none and b2.active_tasks is None


def test_delete_groups_removes_an_empty_streams_group_only(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "words", partitions=2)

    async def scenario(conn: BrokerConnection) -> list[Any]:
        out = []
        a = await _beat(conn, "a-1", 0)
        deleted = await conn.call(ApiKey.DELETE_GROUPS, groups_names=[APP])
        out.append(deleted.results[0].error_code)
        left = await _beat(conn, "a-1", -1)
        out.append(left.error_code)
        deleted = await conn.call(ApiKey.DELETE_GROUPS, groups_names=[APP])
        out.append(deleted.results[0].error_code)
        described = await conn.call(
            ApiKey.STREAMS_GROUP_DESCRIBE, group_ids=[APP], include_authorized_operations=False
        )
        out.append(described.groups[0].error_code)
        assert a.error_code == ErrorCode.none
        return out

    assert _run(broker.port, scenario) == [
        ErrorCode.non_empty_group,
        ErrorCode.none,
        ErrorCode.none,
        ErrorCode.group_id_not_found,
    ]


def test_metrics_show_the_streams_group_and_a_static_bounce_adds_no_rebalance(
    tmp_path: Any,
) -> None:
    from tests.broker.groups_support import group_gauges, start_broker

    b = start_broker(tmp_path / "metrics")
    try:
        create_topic(b.bootstrap, "words", partitions=2)

        async def form(conn: BrokerConnection) -> dict[str, Any]:
            a = await _beat(conn, "a-1", 0, instance="A", process="pa")
            await _beat(conn, "a-1", a.member_epoch, [], instance="A")
            b1 = await _beat(conn, "b-1", 0, instance="B", process="pb")
            return await _converge(conn, {"a-1": a, "b-1": b1})

        _run(b.port, form)
        before = group_gauges(b, APP)
        assert before is not None and before.state == "Stable"
        assert (before.members_static, before.members_dynamic) == (2, 0)

        async def bounce(conn: BrokerConnection) -> None:
            await _beat(conn, "a-1", -2, instance="A")
            back = await _beat(conn, "a-2", 0, instance="A", process="pa")
            assert back.error_code == ErrorCode.none

        _run(b.port, bounce)
        after = group_gauges(b, APP)
        assert after is not None
        assert (after.generation, after.rebalances_total) == (
            before.generation,
            before.rebalances_total,
        )
    finally:
        b.stop()
