"""Issue 16: the APIs of Kafka 4.0's broker that were not served before, through the clients
that offer them (kafka-python 3 covers most; confluent-kafka and aiokafka have none of these
calls) and the raw protocol (streamrt's BrokerConnection) where no client has the call."""

from __future__ import annotations

import asyncio
import socket
import struct
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from confluent_kafka import Consumer
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KPTP
from kafka.admin import NewTopic as KPNewTopic

from streamrt.admin.connection import BrokerConnection
from streamrt.broker.embedded import BrokerThread
from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey


def _call(port: int, api_key: ApiKey, **fields: Any) -> Any:
    async def scenario() -> Any:
        conn = await BrokerConnection.open("127.0.0.1", port)
        try:
            return await conn.call(api_key, **fields)
        finally:
            await conn.close()

    return asyncio.run(scenario())


def _component(entity_type: str, match_type: int, match: str | None) -> dict[str, Any]:
    return {"entity_type": entity_type, "match_type": match_type, "match": match}


def _quota_entry(entity: list[tuple[str, str | None]], **ops: float | None) -> dict[str, Any]:
    return {
        "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
        "ops": [{"key": k, "value": v or 0.0, "remove": v is None} for k, v in sorted(ops.items())],
    }


def test_client_quotas_alter_describe_match_and_survive_a_restart(
    broker_factory: Any, tmp_path: Any
) -> None:
    broker = broker_factory(data_dir=tmp_path / "q")
    port = broker.port
    altered = _call(
        port,
        ApiKey.ALTER_CLIENT_QUOTAS,
        entries=[
            _quota_entry([("user", "alice")], producer_byte_rate=1024.0),
            _quota_entry([("user", "alice"), ("client-id", "app")], request_percentage=12.5),
            _quota_entry([("user", None)], consumer_byte_rate=2048.0),
            _quota_entry([("ip", "127.0.0.1")], connection_creation_rate=10.0),
            _quota_entry([("user", "bob")], producer_byte_rate=1.5),  # LONG: no fractions
            _quota_entry([("ip", "10.0.0.1"), ("user", "x")], connection_creation_rate=1.0),
            _quota_entry([("user", "carol")], unknown_key=1.0),
        ],
        validate_only=False,
    )
    codes = [e.error_code for e in altered.entries]
    assert codes[:4] == [ErrorCode.none] * 4
    assert codes[4:] == [ErrorCode.invalid_request] * 3
    assert "fractional" in (altered.entries[4].error_message or "")

    def describe(components: list[dict[str, Any]], strict: bool = False) -> dict[Any, Any]:
        resp = _call(port, ApiKey.DESCRIBE_CLIENT_QUOTAS, components=components, strict=strict)
        assert resp.error_code == ErrorCode.none, resp.error_message
        return {
            tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)): {
                v.key: v.value for v in entry.values
            }
            for entry in resp.entries or ()
        }

    alice = describe([_component("user", 0, "alice")])
    assert alice == {
        (("user", "alice"),): {"producer_byte_rate": 1024.0},
        (("client-id", "app"), ("user", "alice")): {"request_percentage": 12.5},
    }
    assert describe([_component("user", 0, "alice")], strict=True) == {
        (("user", "alice"),): {"producer_byte_rate": 1024.0}
    }
    assert describe([_component("user", 1, None)]) == {
        (("user", None),): {"consumer_byte_rate": 2048.0}
    }
    assert set(describe([_component("user", 2, None)])) == {
        (("user", "alice"),),
        (("client-id", "app"), ("user", "alice")),
        (("user", None),),
    }
    assert describe([_component("ip", 2, None)]) == {
        (("ip", "127.0.0.1"),): {"connection_creation_rate": 10.0}
    }
    bad = _call(
        port,
        ApiKey.DESCRIBE_CLIENT_QUOTAS,
        components=[_component("ip", 2, None), _component("user", 2, None)],
        strict=False,
    )
    assert bad.error_code == ErrorCode.invalid_request

    # validate_only changes nothing; removing the last key removes the entity
    _call(
        port,
        ApiKey.ALTER_CLIENT_QUOTAS,
        entries=[_quota_entry([("user", "alice")], producer_byte_rate=99.0)],
        validate_only=True,
    )
    _call(
        port,
        ApiKey.ALTER_CLIENT_QUOTAS,
        entries=[_quota_entry([("user", None)], consumer_byte_rate=None)],
        validate_only=False,
    )
    broker.stop()
    again = broker_factory(data_dir=tmp_path / "q")
    port = again.port
    assert describe([]) == {
        (("user", "alice"),): {"producer_byte_rate": 1024.0},
        (("client-id", "app"), ("user", "alice")): {"request_percentage": 12.5},
        (("ip", "127.0.0.1"),): {"connection_creation_rate": 10.0},
    }


def test_describe_producers_kafka_python_sees_the_idempotent_producer(
    broker: BrokerThread, topic_name: str
) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([KPNewTopic(topic_name, 2, 1)])
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=True)
    for i in range(3):
        producer.send(topic_name, value=b"v%d" % i, partition=0).get(10)
    producer.close()
    states = admin.describe_producers([KPTP(topic_name, 0), KPTP(topic_name, 1)])
    text = repr(states)
    p0 = states[KPTP(topic_name, 0)]
    p1 = states[KPTP(topic_name, 1)]
    active0 = getattr(p0, "active_producers", None) or p0
    assert len(active0) == 1, text
    producer_state = active0[0]
    assert getattr(producer_state, "last_sequence", None) == 2, text
    assert getattr(producer_state, "current_transaction_start_offset", None) == -1, text
    assert not (getattr(p1, "active_producers", None) or []), text
    admin.close()


def test_offset_delete_kafka_python_empty_group_and_subscribed_topic(
    broker: BrokerThread, topic_name: str
) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([KPNewTopic(topic_name, 1, 1)])
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    producer.send(topic_name, b"x").get(10)
    producer.close()
    group = f"g-{topic_name}"
    consumer = KafkaConsumer(
        topic_name,
        bootstrap_servers=broker.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    while not consumer.poll(timeout_ms=500):
        pass
    consumer.commit()
    tp = KPTP(topic_name, 0)
    # the group is Stable and subscribed to the topic: GROUP_SUBSCRIBED_TO_TOPIC
    refused = admin.delete_group_offsets(group, [tp])
    assert _failures(refused) == ["GroupSubscribedToTopicError"], refused
    consumer.close()
    assert admin.list_group_offsets({group: None})  # still committed
    assert _failures(admin.delete_group_offsets(group, [tp])) == []
    offsets = _call(
        broker.port,
        ApiKey.OFFSET_FETCH,
        group_id=group,
        topics=[{"name": topic_name, "partition_indexes": [0]}],
        require_stable=False,
        groups=[{"group_id": group, "topics": [{"name": topic_name, "partition_indexes": [0]}]}],
    )
    assert "committed_offset=-1" in repr(offsets)
    missing = _call(broker.port, ApiKey.OFFSET_DELETE, group_id="no-such-group", topics=[])
    assert missing.error_code == ErrorCode.group_id_not_found
    admin.close()


def _failures(result: dict[Any, Any]) -> list[str]:
    """kafka-python's per-partition results: error classes, ``NoError`` on success."""
    return [
        getattr(v, "__name__", repr(v))
        for v in result.values()
        if getattr(v, "__name__", "NoError") != "NoError"
    ]


def test_delegation_tokens_are_refused_as_kafka_without_a_secret_refuses_them(
    broker: BrokerThread,
) -> None:
    port = broker.port
    # v1 by hand: kio cannot decode the -1 timestamps Kafka answers with. PLAINTEXT: Kafka's
    # allowTokenRequests refuses before it looks at the token config.
    refused = ErrorCode.delegation_token_request_not_allowed
    create = _raw(port, ApiKey.CREATE_DELEGATION_TOKEN, 1, struct.pack(">iq", 0, -1))
    assert struct.unpack_from(">h", create)[0] == refused and b"ANONYMOUS" in create
    hmac = struct.pack(">i", 1) + b"x"
    renew = _raw(port, ApiKey.RENEW_DELEGATION_TOKEN, 1, hmac + struct.pack(">q", 1000))
    expire = _raw(port, ApiKey.EXPIRE_DELEGATION_TOKEN, 1, hmac + struct.pack(">q", -1))
    assert struct.unpack_from(">h", renew)[0] == struct.unpack_from(">h", expire)[0] == refused
    described = _call(port, ApiKey.DESCRIBE_DELEGATION_TOKEN, owners=None)
    assert described.error_code == refused


def _raw(port: int, api_key: int, version: int, body: bytes) -> bytes:
    """One non-flexible request/response by hand; the response body after the correlation id."""
    frame = struct.pack(">hhih", api_key, version, 5, 3) + b"raw" + body
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(len(frame).to_bytes(4, "big") + frame)
        size = int.from_bytes(s.recv(4), "big")
        resp = b""
        while len(resp) < size:
            resp += s.recv(size - len(resp))
    assert struct.unpack_from(">i", resp)[0] == 5
    return resp[4:]


def test_controller_apis_get_kafkas_single_node_answers(broker: BrokerThread) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    with pytest.raises(Exception, match=r"(?i)invalid.?update.?version|not support"):
        admin.update_features({"group.version": 1})
    resources = admin.list_config_resources()
    assert not resources or resources == [] or resources == {}
    admin.close()
    port = broker.port
    voter = _call(
        port,
        ApiKey.ADD_RAFT_VOTER,
        cluster_id=None,
        timeout=1000,
        voter_id=5,
        voter_directory_id=None,
        listeners=[],
    )
    assert voter.error_code == ErrorCode.unsupported_version
    assert "kraft.version" in (voter.error_message or "")
    other = _call(port, ApiKey.UNREGISTER_BROKER, broker_id=42)
    assert other.error_code == ErrorCode.broker_id_not_registered
    heartbeat = _call(
        port,
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        group_id="g",
        member_id="",  # v1: the client must generate it (KIP-1082)
        member_epoch=0,
        instance_id=None,
        rack_id=None,
        rebalance_timeout=1000,
        subscribed_topic_names=["t"],
        server_assignor=None,
        topic_partitions=[],
        subscribed_topic_regex=None,
    )
    # KIP-848 is served (tests/broker/test_groups_consumer_protocol.py); this checks the
    # request is decoded and validated as Kafka does
    assert heartbeat.error_code == ErrorCode.invalid_request
    assert heartbeat.error_message == "MemberId can't be empty."


def test_alter_replica_log_dirs_kafka_python(broker: BrokerThread, topic_name: str) -> None:
    from kafka import TopicPartitionReplica

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([KPNewTopic(topic_name, 1, 1)])
    here = str(broker.data_dir.resolve())
    ok = admin.alter_replica_log_dirs({TopicPartitionReplica(topic_name, 0, 0): here})
    assert ok and _failures(ok) == [], ok
    elsewhere = admin.alter_replica_log_dirs({TopicPartitionReplica(topic_name, 0, 0): "/nowhere"})
    assert _failures(elsewhere) == ["LogDirNotFoundError"], elsewhere
    admin.close()


def test_compression_type_gzip_recompresses_uncompressed_batches(
    broker: BrokerThread, topic_name: str
) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([KPNewTopic(topic_name, 1, 1, topic_configs={"compression.type": "gzip"})])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, compression_type=None)
    values = [b"value-%d" % i * 20 for i in range(50)]
    for v in values:
        producer.send(topic_name, key=b"k", value=v, partition=0)
    producer.flush()
    producer.close()
    # a raw Fetch returns the stored batches: they carry the gzip codec (attributes & 7 == 1)
    fetched = _call(
        broker.port,
        ApiKey.FETCH,
        max_version=12,
        replica_id=-1,
        max_wait=0,
        min_bytes=1,
        max_bytes=10_000_000,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            {
                "topic": topic_name,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": -1,
                        "fetch_offset": 0,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 10_000_000,
                    }
                ],
            }
        ],
        forgotten_topics_data=[],
        rack_id="",
    )
    raw = bytes(fetched.responses[0].partitions[0].records or b"")
    pos, codecs = 0, []
    while pos + 61 <= len(raw):
        length = int.from_bytes(raw[pos + 8 : pos + 12], "big")
        codecs.append(int.from_bytes(raw[pos + 21 : pos + 23], "big") & 7)
        pos += 12 + length
    assert codecs and set(codecs) == {1}, codecs
    consumer = KafkaConsumer(
        topic_name, bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest"
    )
    got: list[bytes] = []
    while len(got) < len(values):
        for records in consumer.poll(timeout_ms=1000).values():
            got.extend(r.value for r in records)
    consumer.close()
    assert got == values

    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"ck-{topic_name}",
            "auto.offset.reset": "earliest",
        }
    )
    c.subscribe([topic_name])
    ck: list[bytes] = []
    while len(ck) < len(values):
        m = c.poll(5)
        if m is not None and m.error() is None:
            ck.append(m.value())
    c.close()
    assert ck == values

    async def aio() -> list[bytes]:
        consumer = AIOKafkaConsumer(
            topic_name, bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest"
        )
        await consumer.start()
        try:
            out: list[bytes] = []
            while len(out) < len(values):
                batch = await consumer.getmany(timeout_ms=1000)
                for records in batch.values():
                    out.extend(r.value for r in records)
            return out
        finally:
            await consumer.stop()

    assert asyncio.run(aio()) == values
