"""Defaults as Apache Kafka's: SASL/PLAIN only where ``sasl.enabled.mechanisms`` lists it, and
an empty ``cleanup.policy`` accepted (no deletion, no compaction)."""

from __future__ import annotations

import asyncio
import uuid

from streamrt.admin.connection import BrokerConnection
from streamrt.wire.api_keys import ApiKey
from tests.security.conftest import address


async def _open(bootstrap: str) -> BrokerConnection:
    host, port = bootstrap.rsplit(":", 1)
    return await BrokerConnection.open(host, int(port))


def test_plain_is_off_unless_listed(broker_factory) -> None:
    b = broker_factory({"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"})
    assert b.broker is not None

    async def handshake() -> tuple[int, tuple[str, ...]]:
        conn = await _open(address(b, "SASL_PLAINTEXT"))
        try:
            resp = await conn.call(ApiKey.SASL_HANDSHAKE, max_version=1, mechanism="PLAIN")
            return int(resp.error_code), tuple(resp.mechanisms)
        finally:
            await conn.close()

    assert asyncio.run(handshake()) == (33, ("SCRAM-SHA-256", "SCRAM-SHA-512"))


def test_empty_cleanup_policy_is_accepted(broker) -> None:
    topic = f"keep-{uuid.uuid4().hex[:6]}"

    async def run() -> tuple[set[int], str, set[int]]:
        conn = await _open(broker.bootstrap)
        try:
            created = await conn.call(
                ApiKey.CREATE_TOPICS,
                topics=[
                    {
                        "name": topic,
                        "num_partitions": 1,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [{"name": "cleanup.policy", "value": ""}],
                    }
                ],
                timeout=5000,
                validate_only=False,
            )
            described = await conn.call(
                ApiKey.DESCRIBE_CONFIGS,
                resources=[
                    {"resource_type": 2, "resource_name": topic, "configuration_keys": None}
                ],
                include_synonyms=False,
                include_documentation=False,
            )
            policy = {c.name: c.value for c in described.results[0].configs}["cleanup.policy"]
            altered = await conn.call(
                ApiKey.INCREMENTAL_ALTER_CONFIGS,
                resources=[
                    {
                        "resource_type": 2,
                        "resource_name": topic,
                        "configs": [{"name": "cleanup.policy", "config_operation": 0, "value": ""}],
                    }
                ],
                validate_only=False,
            )
            return (
                {t.error_code for t in created.topics},
                str(policy),
                {r.error_code for r in altered.responses},
            )
        finally:
            await conn.close()

    assert asyncio.run(run()) == ({0}, "", {0})
