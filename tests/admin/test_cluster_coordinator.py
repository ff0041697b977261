"""Cluster.coordinator forgets a coordinator it cannot reach, so a retry finds the new one."""

from __future__ import annotations

import asyncio

import pytest

from streamrt.admin.cluster import Cluster
from streamrt.admin.connection import AdminConnectionError, BrokerConnection
from streamrt.broker.embedded import BrokerThread


def _cluster(broker: BrokerThread) -> Cluster:
    return Cluster(
        broker.bootstrap, client_id="t", request_timeout=5.0, api_timeout=5.0, retry_backoff=0.05
    )


def test_an_unreachable_coordinator_is_forgotten_and_found_again(
    broker: BrokerThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one thing isolated: the coordinator's broker refusing connections (as a killed
    Apache Kafka node does); FindCoordinator and the reconnect are the real broker's."""

    async def scenario() -> None:
        cluster = _cluster(broker)
        try:
            conn = await cluster.coordinator("g")
            node_id = cluster.known_coordinator("g")
            assert node_id >= 0
            await conn.close()  # the node "dies": its connection is gone ...
            real_connect = cluster.connect

            async def refused(address: tuple[str, int]) -> BrokerConnection:
                raise AdminConnectionError(f"cannot connect to {address}: refused")

            monkeypatch.setattr(cluster, "connect", refused)  # ... and refuses new ones
            with pytest.raises(AdminConnectionError):
                await cluster.coordinator("g")
            assert cluster.known_coordinator("g") == -1  # the retry will ask FindCoordinator
            monkeypatch.setattr(cluster, "connect", real_connect)
            found = await cluster.retrying("find", lambda: cluster.coordinator("g"))
            assert not found.closed and cluster.known_coordinator("g") == node_id
        finally:
            await cluster.close()

    asyncio.run(scenario())


def test_concurrent_connects_to_one_broker_keep_one_connection_and_close_the_other(
    broker: BrokerThread,
) -> None:
    """Two callers connecting to the same broker at once (a heartbeat and a commit on a member's
    cluster): one connection is kept; the other is closed, not dropped with its read task
    pending (seen as asyncio's 'Task was destroyed but it is pending!' in instance logs)."""

    async def scenario() -> None:
        cluster = _cluster(broker)
        (address,) = cluster.bootstrap
        opened: list[BrokerConnection] = []
        real_open = BrokerConnection.open

        async def recording_open(*args: object, **kwargs: object) -> BrokerConnection:
            conn = await real_open(*args, **kwargs)  # type: ignore[arg-type]
            opened.append(conn)
            return conn

        BrokerConnection.open = recording_open  # type: ignore[method-assign,assignment]
        try:
            first, second = await asyncio.gather(cluster.connect(address), cluster.connect(address))
        finally:
            BrokerConnection.open = real_open  # type: ignore[method-assign]
        try:
            assert first is second and not first.closed
            assert len(opened) == 2 and [c.closed for c in opened if c is not first] == [True]
        finally:
            await cluster.close()
        assert all(c.closed for c in opened)

    asyncio.run(scenario())
