"""Cluster.coordinator forgets a coordinator it cannot reach, so a retry finds the new one."""

from __future__ import annotations

import asyncio

import pytest

from streamrt.admin.cluster import Cluster
from streamrt.admin.connection import AdminConnectionError, BrokerConnection
from streamrt.broker.embedded import BrokerThread


def test_an_unreachable_coordinator_is_forgotten_and_found_again(
    broker: BrokerThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one thing isolated: the coordinator's broker refusing connections (as a killed
    Apache Kafka node does); FindCoordinator and the reconnect are the real broker's."""

    async def scenario() -> None:
        cluster = Cluster(
            broker.bootstrap,
            client_id="t",
            request_timeout=5.0,
            api_timeout=5.0,
            retry_backoff=0.05,
        )
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
