"""The request log (Kafka's ``kafka.request.logger``): at DEBUG, one line per answered request."""

from __future__ import annotations

import asyncio
import logging

import pytest

from streamrt.admin.cluster import Cluster
from streamrt.broker.embedded import BrokerThread

METADATA = 3


async def _metadata(bootstrap: str) -> None:
    cluster = Cluster(
        bootstrap, client_id="traced-client", request_timeout=10, api_timeout=10, retry_backoff=0.1
    )
    try:
        conn = await cluster.any_broker()
        await conn.call(
            METADATA,
            min_version=12,
            max_version=12,
            topics=None,
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
    finally:
        await cluster.close()


def test_debug_logs_each_request_with_client_time_and_answer(
    broker: BrokerThread, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="streamrt.broker.request"):
        asyncio.run(_metadata(broker.bootstrap))
    lines = [
        r.getMessage()
        for r in caplog.records
        if r.name == "streamrt.broker.request" and "traced-client" in r.getMessage()
    ]
    metadata = [line for line in lines if line.startswith("METADATA v12 from traced-client")]
    assert len(metadata) == 1, lines
    assert " ms: MetadataRequest(" in metadata[0]
    assert "-> MetadataResponse(" in metadata[0]


def test_request_log_is_silent_above_debug(
    broker: BrokerThread, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="streamrt.broker.request"):
        asyncio.run(_metadata(broker.bootstrap))
    assert not [r for r in caplog.records if r.name == "streamrt.broker.request"]
