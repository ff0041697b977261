"""ACLs enforced with real clients: fetch needs READ on the topic, joining or leaving a group
needs READ on the group, a super user may do anything; ACLs are managed with CreateAcls."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError

from streamrt.client_config import ClientConfig
from tests.security.conftest import USERS, Pki, address

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import (  # noqa: E402
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)


def _cfg(pki: Pki, user: str) -> ClientConfig:
    return ClientConfig.from_properties(
        {
            "security.protocol": "SASL_SSL",
            "ssl.truststore.location": str(pki.ca),
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": user,
            "sasl.password": USERS[user],
        }
    )


def _allow(broker, pki, user: str, rtype, name: str, op) -> None:
    conf = _cfg(pki, "admin").librdkafka("admin")
    conf["bootstrap.servers"] = address(broker, "SASL_SSL")
    admin = AdminClient(conf)
    binding = AclBinding(
        rtype, name, ResourcePatternType.LITERAL, f"User:{user}", "*", op, AclPermissionType.ALLOW
    )
    for future in admin.create_acls([binding], request_timeout=10).values():
        future.result()


async def _produce(bootstrap: str, cfg: ClientConfig, topic: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, **cfg.aiokafka_producer_kwargs())
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"x")
    finally:
        await producer.stop()


async def _fetch(bootstrap: str, cfg: ClientConfig, topic: str) -> int:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, auto_offset_reset="earliest", **cfg.aiokafka_consumer_kwargs()
    )
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, 0)])
        batch = await consumer.getmany(timeout_ms=5000)
        return sum(len(v) for v in batch.values())
    finally:
        await consumer.stop()


async def _join(bootstrap: str, cfg: ClientConfig, topic: str, group: str) -> int:
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        **cfg.aiokafka_consumer_kwargs(),
    )
    await consumer.start()
    try:
        batch = await consumer.getmany(timeout_ms=10000)
        return sum(len(v) for v in batch.values())
    finally:
        await consumer.stop()


def test_topic_and_group_acls(acl_broker, pki) -> None:
    bootstrap = address(acl_broker, "SASL_SSL")
    topic, group = f"acl-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    admin, alice = _cfg(pki, "admin"), _cfg(pki, "alice")
    asyncio.run(_produce(bootstrap, admin, topic))  # super user: allowed without any ACL

    # DESCRIBE lets alice see the topic's metadata, not read it: Fetch answers
    # TOPIC_AUTHORIZATION_FAILED, which aiokafka raises
    _allow(acl_broker, pki, "alice", ResourceType.TOPIC, topic, AclOperation.DESCRIBE)
    with pytest.raises(TopicAuthorizationFailedError):
        asyncio.run(_fetch(bootstrap, alice, topic))

    _allow(acl_broker, pki, "alice", ResourceType.TOPIC, topic, AclOperation.READ)
    assert asyncio.run(_fetch(bootstrap, alice, topic)) == 1

    with pytest.raises(GroupAuthorizationFailedError):
        asyncio.run(_join(bootstrap, alice, topic, group))  # no READ on the group

    _allow(acl_broker, pki, "alice", ResourceType.GROUP, group, AclOperation.READ)
    assert asyncio.run(_join(bootstrap, alice, topic, group)) == 1
    assert asyncio.run(_join(bootstrap, admin, topic, f"{group}-admin")) == 1


def test_describe_acls_needs_cluster_describe(acl_broker, pki) -> None:
    """kafka-python raises the broker's CLUSTER_AUTHORIZATION_FAILED (librdkafka drops it)."""
    kafka = pytest.importorskip("kafka")
    from kafka.admin import ACLFilter, ACLResourcePatternType, ResourcePatternFilter
    from kafka.admin import ACLOperation as Op
    from kafka.admin import ACLPermissionType as Perm
    from kafka.admin import ResourceType as RT
    from kafka.errors import ClusterAuthorizationFailedError

    def admin_for(user: str):  # type: ignore[no-untyped-def]
        return kafka.KafkaAdminClient(
            bootstrap_servers=address(acl_broker, "SASL_SSL"),
            **_cfg(pki, user).kafka_python("admin"),
        )

    flt = ACLFilter(
        principal=None,
        host="*",
        operation=Op.ANY,
        permission_type=Perm.ANY,
        resource_pattern=ResourcePatternFilter(RT.ANY, None, ACLResourcePatternType.ANY),
    )
    bob = admin_for("bob")
    try:
        with pytest.raises(ClusterAuthorizationFailedError):
            bob.describe_acls(flt)
    finally:
        bob.close()
