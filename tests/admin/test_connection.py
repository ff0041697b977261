"""Framing, pipelining and ApiVersions negotiation of the admin connection, over real sockets."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from streamrt.admin.connection import (
    AdminConnectionError,
    AdminTimeoutError,
    BrokerConnection,
    UnsupportedVersionError,
    pick_version,
)
from tests.admin.fake_broker import FakeBroker, respond

LIST_GROUPS, DESCRIBE_GROUPS, LEAVE_GROUP, API_VERSIONS = 16, 15, 13, 18


def _list_groups(version: int, request: Any) -> Any:
    return respond(
        LIST_GROUPS,
        version,
        throttle_time=0,
        error_code=0,
        groups=[{"group_id": "g", "protocol_type": "consumer", "group_state": "Stable"}],
    )


def _describe_groups(version: int, request: Any) -> Any:
    return respond(
        DESCRIBE_GROUPS,
        version,
        throttle_time=0,
        groups=[
            {
                "error_code": 0,
                "group_id": g,
                "group_state": "Empty",
                "protocol_type": "consumer",
                "protocol_data": "",
                "members": [],
            }
            for g in request.groups
        ],
    )


async def _open(broker: FakeBroker, **kwargs: Any) -> BrokerConnection:
    return await BrokerConnection.open("127.0.0.1", broker.port, client_id="test-admin", **kwargs)


def test_negotiates_highest_common_version_per_api() -> None:
    async def scenario() -> None:
        versions = {LIST_GROUPS: (0, 2), LEAVE_GROUP: (0, 9), DESCRIBE_GROUPS: (0, 5)}
        async with FakeBroker(versions, {LIST_GROUPS: _list_groups}) as broker:
            conn = await _open(broker)
            try:
                assert conn.version_for(LIST_GROUPS) == 2  # the broker's max
                assert conn.version_for(LEAVE_GROUP) == 5  # kio's max
                assert conn.version_for(DESCRIBE_GROUPS, max_version=3) == 3  # the caller's
                response = await conn.call(LIST_GROUPS)
            finally:
                await conn.close()
        assert response.__version__ == 2
        assert [g.group_id for g in response.groups] == ["g"]
        assert [(s.api_key, s.api_version) for s in broker.seen] == [(18, 3), (16, 2)]
        assert {s.client_id for s in broker.seen} == {"test-admin"}

    asyncio.run(scenario())


def test_api_versions_falls_back_to_v0_when_v3_is_unsupported() -> None:
    async def scenario() -> None:
        async with FakeBroker({API_VERSIONS: (0, 2), LIST_GROUPS: (0, 1)}) as broker:
            conn = await _open(broker)
            await conn.close()
        assert [(s.api_key, s.api_version) for s in broker.seen] == [(18, 3), (18, 0)]
        assert conn.broker_versions[LIST_GROUPS] == (0, 1)
        assert conn.broker_versions[API_VERSIONS] == (0, 2)

    asyncio.run(scenario())


def test_flexible_and_legacy_versions_use_their_request_header() -> None:
    """DescribeGroups v5 is flexible (header v2), v4 is not (header v1): both must decode."""

    async def scenario(max_version: int) -> Any:
        async with FakeBroker(
            {DESCRIBE_GROUPS: (0, max_version)}, {DESCRIBE_GROUPS: _describe_groups}
        ) as broker:
            conn = await _open(broker)
            try:
                return await conn.call(
                    DESCRIBE_GROUPS, groups=["a", "b"], include_authorized_operations=False
                )
            finally:
                await conn.close()

    for version in (4, 5):
        response = asyncio.run(scenario(version))
        assert response.__version__ == version
        assert [g.group_id for g in response.groups] == ["a", "b"]


def test_pipelined_requests_are_matched_to_responses_in_order() -> None:
    async def scenario() -> None:
        async with FakeBroker(
            {DESCRIBE_GROUPS: (0, 5)}, {DESCRIBE_GROUPS: _describe_groups}, batch=1
        ) as broker:
            conn = await _open(broker)
            broker.batch = 5  # hold answers until all five requests are in flight
            try:
                responses = await asyncio.gather(
                    *(
                        conn.call(
                            DESCRIBE_GROUPS, groups=[f"g{i}"], include_authorized_operations=False
                        )
                        for i in range(5)
                    )
                )
            finally:
                await conn.close()
        assert [r.groups[0].group_id for r in responses] == [f"g{i}" for i in range(5)]
        ids = [s.correlation_id for s in broker.requests(DESCRIBE_GROUPS)]
        assert ids == sorted(ids) and len(set(ids)) == 5

    asyncio.run(scenario())


def test_correlation_id_mismatch_fails_the_request_and_closes() -> None:
    async def scenario() -> None:
        async with FakeBroker({LIST_GROUPS: (0, 4)}, {LIST_GROUPS: _list_groups}) as broker:
            conn = await _open(broker)
            broker.correlation_override = 999
            with pytest.raises(AdminConnectionError, match="correlation id 999"):
                await conn.call(LIST_GROUPS)
            assert conn.closed
            with pytest.raises(AdminConnectionError, match="closed"):
                await conn.call(LIST_GROUPS)

    asyncio.run(scenario())


def test_request_timeout_raises_and_closes_the_connection() -> None:
    async def scenario() -> None:
        async with FakeBroker({LIST_GROUPS: (0, 4)}, {LIST_GROUPS: lambda v, r: None}) as broker:
            conn = await _open(broker, request_timeout=0.2)
            with pytest.raises(
                AdminTimeoutError, match=r"list_groups v4 to 127\.0\.0\.1:\d+: no response"
            ):
                await conn.call(LIST_GROUPS)
            assert conn.closed

    asyncio.run(scenario())


def test_broker_closing_the_connection_fails_pending_requests() -> None:
    async def scenario() -> None:
        async with FakeBroker({LIST_GROUPS: (0, 4)}, {LIST_GROUPS: lambda v, r: None}) as broker:
            conn = await _open(broker)
            pending = asyncio.ensure_future(conn.call(LIST_GROUPS))
            # the fake broker only records requests: there is no event to wait on
            while not broker.requests(LIST_GROUPS):  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        with pytest.raises(AdminConnectionError, match="closed the connection"):
            await pending
        await conn.close()

    asyncio.run(scenario())


def test_connection_refused_is_a_clear_error() -> None:
    async def scenario() -> None:
        async with FakeBroker({}) as broker:
            port = broker.port
        with pytest.raises(AdminConnectionError, match=f"cannot connect to 127.0.0.1:{port}"):
            await BrokerConnection.open("127.0.0.1", port)

    asyncio.run(scenario())


def test_pick_version_explains_when_there_is_no_common_version() -> None:
    with pytest.raises(UnsupportedVersionError, match=r"v0-v2.*needs v3-v5"):
        pick_version({LEAVE_GROUP: (0, 2)}, LEAVE_GROUP, min_version=3)
    with pytest.raises(UnsupportedVersionError, match="does not support"):
        pick_version({}, LEAVE_GROUP)


def test_build_builds_nested_dicts_inside_nullable_arrays() -> None:
    from streamrt.admin.connection import client_codec
    from streamrt.wire.codec import build

    request = build(
        client_codec(9, 9).request_cls,  # OffsetFetch v9: groups[].topics is nullable
        groups=[{"group_id": "g", "topics": [{"name": "t", "partition_indexes": [1]}]}],
        require_stable=False,
    )
    (group,) = request.groups
    assert (group.topics[0].name, group.topics[0].partition_indexes) == ("t", (1,))
    metadata = client_codec(3, 12).request_cls
    all_topics = build(metadata, topics=None, include_topic_authorized_operations=False)
    assert all_topics.topics is None
