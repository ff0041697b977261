"""Issue 29's authorization holes, attacked with real clients over SASL_SSL.

Transactions as aiokafka's own SASL suite checks them (an ALLOW ALL binding with one DENY taken
back), internal topics sealed whatever the ACLs, and KIP-430's authorized operations as
confluent-kafka reads them.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.errors import (
    GroupAuthorizationFailedError,
    TransactionalIdAuthorizationFailed,
)

from streamrt.admin.connection import BrokerConnection
from streamrt.admin.security import AdminSecurity
from streamrt.client_config import ClientConfig, SaslCredentials
from tests.security.authz_model import batch, codes
from tests.security.conftest import USERS, Pki, address

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import TopicCollection  # noqa: E402
from confluent_kafka.admin import (  # noqa: E402
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


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


def _admin(broker, pki, user: str = "admin") -> AdminClient:  # type: ignore[no-untyped-def]
    conf = _cfg(pki, user).librdkafka("admin")
    conf["bootstrap.servers"] = address(broker, "SASL_SSL")
    return AdminClient(conf)


def _acl(broker, pki, rtype, name: str, op, permission=ALLOW, user: str = "bob") -> None:  # type: ignore[no-untyped-def]
    binding = AclBinding(
        rtype, name, ResourcePatternType.LITERAL, f"User:{user}", "*", op, permission
    )
    admin = _admin(broker, pki)  # kept alive until the futures are done
    for future in admin.create_acls([binding], request_timeout=10).values():
        future.result()


def _topic(broker, pki, partitions: int = 2) -> str:  # type: ignore[no-untyped-def]
    name = f"az-{uuid.uuid4().hex[:8]}"
    admin = _admin(broker, pki)
    fs = admin.create_topics([NewTopic(name, partitions, 1)], request_timeout=10)
    for future in fs.values():
        future.result()
    return name


def _producer(broker, pki, txn_id: str) -> AIOKafkaProducer:  # type: ignore[no-untyped-def]
    return AIOKafkaProducer(
        bootstrap_servers=address(broker, "SASL_SSL"),
        transactional_id=txn_id,
        request_timeout_ms=10000,
        **_cfg(pki, "bob").aiokafka_producer_kwargs(),
    )


def _txn_setup(broker, pki, deny=None):  # type: ignore[no-untyped-def]
    """bob may do everything on his transactional id and topic, except ``deny``."""
    topic, txn_id = _topic(broker, pki), f"tx-{uuid.uuid4().hex[:8]}"
    _acl(broker, pki, ResourceType.TRANSACTIONAL_ID, txn_id, AclOperation.ALL)
    _acl(broker, pki, ResourceType.TOPIC, topic, AclOperation.ALL)
    if deny is not None:
        _acl(broker, pki, ResourceType.TRANSACTIONAL_ID, txn_id, deny, DENY)
    return topic, txn_id


@pytest.mark.parametrize("denied", [AclOperation.DESCRIBE, AclOperation.WRITE])
def test_transactional_id_denied_at_start(acl_broker, pki, denied) -> None:
    """DESCRIBE is checked by FindCoordinator, WRITE by InitProducerId."""
    _topic_name, txn_id = _txn_setup(acl_broker, pki, deny=denied)

    async def start() -> None:
        producer = _producer(acl_broker, pki, txn_id)
        try:
            await producer.start()
        finally:
            await producer.stop()

    with pytest.raises(TransactionalIdAuthorizationFailed):
        asyncio.run(start())


def test_transactional_id_denied_during_transaction(acl_broker, pki) -> None:
    """WRITE taken back mid-transaction: AddPartitionsToTxn for the next partition refuses."""
    topic, txn_id = _txn_setup(acl_broker, pki)

    async def run() -> None:
        producer = _producer(acl_broker, pki, txn_id)
        await producer.start()
        try:
            await producer.begin_transaction()
            await producer.send_and_wait(topic, b"first", partition=0)
            _acl(acl_broker, pki, ResourceType.TRANSACTIONAL_ID, txn_id, AclOperation.WRITE, DENY)
            with pytest.raises(TransactionalIdAuthorizationFailed):
                await producer.send_and_wait(topic, b"second", partition=1)
        finally:
            await producer.stop()

    asyncio.run(run())


def test_transaction_needs_read_on_the_group(acl_broker, pki) -> None:
    """AddOffsetsToTxn (and the commit after it) refuse a group bob may not READ; the
    producer stays usable."""
    topic, txn_id = _txn_setup(acl_broker, pki)
    group = f"tg-{uuid.uuid4().hex[:8]}"
    _acl(acl_broker, pki, ResourceType.GROUP, group, AclOperation.ALL)
    _acl(acl_broker, pki, ResourceType.GROUP, group, AclOperation.READ, DENY)

    async def run() -> None:
        producer = _producer(acl_broker, pki, txn_id)
        await producer.start()
        try:
            await producer.begin_transaction()
            with pytest.raises(GroupAuthorizationFailedError):
                await producer.send_offsets_to_transaction({TopicPartition(topic, 0): 0}, group)
            with pytest.raises(GroupAuthorizationFailedError):
                await producer.commit_transaction()
            await producer.abort_transaction()
            async with producer.transaction():
                await producer.send_and_wait(topic, b"after", partition=0)
        finally:
            await producer.stop()

    asyncio.run(run())


async def _raw(broker, user: str):  # type: ignore[no-untyped-def]
    host, port = address(broker, "SASL_PLAINTEXT").rsplit(":", 1)
    creds = SaslCredentials("SCRAM-SHA-256", user, USERS[user])
    return await BrokerConnection.open(host, int(port), security=AdminSecurity(sasl=creds))


async def _produce_codes(conn: BrokerConnection, topic: str) -> set[int]:
    data = [{"name": topic, "partition_data": [{"index": 0, "records": batch()}]}]
    resp = await conn.call(0, transactional_id=None, acks=-1, timeout=5000, topic_data=data)
    return codes(resp)


def test_internal_topics_refuse_client_writes(acl_broker, pki) -> None:
    """As Kafka: TOPIC_AUTHORIZATION_FAILED without WRITE, INVALID_TOPIC_EXCEPTION with it
    (even for a super user), and AddPartitionsToTxn never adds one to a transaction."""
    txn_id = f"it-{uuid.uuid4().hex[:8]}"
    _acl(acl_broker, pki, ResourceType.TRANSACTIONAL_ID, txn_id, AclOperation.ALL, user="alice")
    internal = ("__consumer_offsets", "__transaction_state")

    async def add_to_txn(alice: BrokerConnection, topic: str) -> set[int]:
        init = await alice.call(
            22,
            transactional_id=txn_id,
            transaction_timeout=60000,
            producer_id=-1,
            producer_epoch=-1,
        )
        assert init.error_code == 0
        added = await alice.call(
            24,
            max_version=3,
            v3_and_below_transactional_id=txn_id,
            v3_and_below_producer_id=init.producer_id,
            v3_and_below_producer_epoch=init.producer_epoch,
            v3_and_below_topics=[{"name": topic, "partitions": [0]}],
        )
        return codes(added)

    async def run() -> None:
        admin, alice = await _raw(acl_broker, "admin"), await _raw(acl_broker, "alice")
        try:
            for topic in internal:
                assert await _produce_codes(alice, topic) == {29}
                assert await _produce_codes(admin, topic) == {17}
            _acl(acl_broker, pki, ResourceType.TOPIC, "*", AclOperation.WRITE, user="alice")
            for topic in internal:
                assert await _produce_codes(alice, topic) == {17}
                assert await add_to_txn(alice, topic) == {29}
        finally:
            await admin.close()
            await alice.close()

    asyncio.run(run())


def test_internal_topic_sealed_on_plaintext_without_authorizer(broker) -> None:
    """The default broker (PLAINTEXT, no authorizer) allows every ACL check, not this."""

    async def run() -> set[int]:
        host, port = broker.bootstrap.rsplit(":", 1)
        conn = await BrokerConnection.open(host, int(port))
        try:
            return await _produce_codes(conn, "__consumer_offsets")
        finally:
            await conn.close()

    assert asyncio.run(run()) == {17}


def test_authorized_operations_kip430(acl_broker, pki) -> None:
    """confluent-kafka reads the cluster's and a topic's authorized operations: all of them
    for a super user; for bob with READ on the topic only, READ and the DESCRIBE it implies,
    and nothing on the cluster (no DESCRIBE there)."""
    topic = _topic(acl_broker, pki, 1)
    _acl(acl_broker, pki, ResourceType.TOPIC, topic, AclOperation.READ)

    def ops(user: str) -> tuple[set[str], set[str]]:
        admin = _admin(acl_broker, pki, user)
        cluster = admin.describe_cluster(include_authorized_operations=True, request_timeout=10)
        described = admin.describe_topics(
            TopicCollection([topic]), include_authorized_operations=True, request_timeout=10
        )[topic].result()
        names = lambda found: {o.name for o in found or ()}  # noqa: E731
        return names(cluster.result().authorized_operations), names(described.authorized_operations)

    cluster_ops, topic_ops = ops("admin")
    assert cluster_ops == {
        "CREATE",
        "CLUSTER_ACTION",
        "DESCRIBE_CONFIGS",
        "ALTER_CONFIGS",
        "IDEMPOTENT_WRITE",
        "ALTER",
        "DESCRIBE",
    }
    assert topic_ops == {
        "READ",
        "WRITE",
        "CREATE",
        "DESCRIBE",
        "DELETE",
        "ALTER",
        "DESCRIBE_CONFIGS",
        "ALTER_CONFIGS",
    }
    cluster_ops, topic_ops = ops("bob")
    assert cluster_ops == set()
    assert topic_ops == {"READ", "DESCRIBE"}


def test_describe_groups_authorized_operations(acl_broker, pki) -> None:
    group = f"og-{uuid.uuid4().hex[:8]}"
    _acl(acl_broker, pki, ResourceType.GROUP, group, AclOperation.DESCRIBE)

    async def run() -> int:
        conn = await _raw(acl_broker, "bob")
        try:
            resp = await conn.call(15, groups=[group], include_authorized_operations=True)
            return int(resp.groups[0].authorized_operations)
        finally:
            await conn.close()

    assert asyncio.run(run()) == 1 << 8  # DESCRIBE only: not READ, not DELETE


def test_offset_fetch_of_all_topics_leaves_out_undescribable_ones(acl_broker, pki) -> None:
    """Kafka's OffsetFetch: the group's offsets of topics bob may not DESCRIBE are not shown."""
    seen, hidden = _topic(acl_broker, pki, 1), _topic(acl_broker, pki, 1)
    group = f"of-{uuid.uuid4().hex[:8]}"
    _acl(acl_broker, pki, ResourceType.GROUP, group, AclOperation.DESCRIBE)
    _acl(acl_broker, pki, ResourceType.TOPIC, seen, AclOperation.DESCRIBE)

    async def run() -> list[str]:
        admin, bob = await _raw(acl_broker, "admin"), await _raw(acl_broker, "bob")
        try:
            part = {
                "partition_index": 0,
                "committed_offset": 0,
                "committed_leader_epoch": -1,
                "committed_metadata": "",
            }
            committed = await admin.call(
                8,
                group_id=group,
                generation_id_or_member_epoch=-1,
                member_id="",
                group_instance_id=None,
                topics=[{"name": t, "partitions": [part]} for t in (seen, hidden)],
            )
            assert codes(committed) == {0}
            resp = await bob.call(
                9,
                groups=[{"group_id": group, "member_id": None, "member_epoch": -1, "topics": None}],
                require_stable=False,
            )
            return sorted(t.name for t in resp.groups[0].topics)
        finally:
            await admin.close()
            await bob.close()

    assert asyncio.run(run()) == [seen]


def test_offset_fetch_v1_is_answered_under_an_authorizer(acl_broker, pki) -> None:
    """OffsetFetch v0/v1 carry no top-level error code; the group check used to read one
    and answered every such request with an internal error (found by the request fuzz)."""
    topic = _topic(acl_broker, pki, 1)
    group = f"of1-{uuid.uuid4().hex[:8]}"
    _acl(acl_broker, pki, ResourceType.GROUP, group, AclOperation.DESCRIBE)
    _acl(acl_broker, pki, ResourceType.TOPIC, topic, AclOperation.DESCRIBE)

    async def run() -> tuple[int, list[tuple[str, int, int]]]:
        bob = await _raw(acl_broker, "bob")
        try:
            resp = await bob.call(
                9,
                max_version=1,
                group_id=group,
                topics=[{"name": topic, "partition_indexes": [0]}],
            )
            rows = [
                (t.name, p.partition_index, int(p.error_code))
                for t in resp.topics
                for p in t.partitions
            ]
            return resp.__version__, rows
        finally:
            await bob.close()

    version, rows = asyncio.run(run())
    assert version == 1
    assert rows == [(topic, 0, 0)]
