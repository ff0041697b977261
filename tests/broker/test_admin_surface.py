"""Issue 16: the rest of the admin surface, through kafka-python, confluent-kafka, aiokafka and
kcat against the real broker."""

from __future__ import annotations

import asyncio
import shutil
import socket
import struct
import subprocess
import time
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions
from aiokafka.admin.records_to_delete import RecordsToDelete
from aiokafka.structs import TopicPartition as AKTP
from confluent_kafka import ElectionType
from confluent_kafka import TopicPartition as CKTP
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, OffsetSpec
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KPTP
from kafka.admin import NewPartitions as KPNewPartitions
from kafka.admin import NewTopic as KPNewTopic

from streamrt.broker.embedded import BrokerThread

KCAT = shutil.which("kcat") or "/usr/bin/kcat"


def _produce(bootstrap: str, topic: str, n: int, timestamps: list[int] | None = None) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    for i in range(n):
        ts = timestamps[i] if timestamps else None
        producer.send(topic, value=f"v{i}".encode(), partition=0, timestamp_ms=ts).get(10)
    producer.close()


def _create(admin: KafkaAdminClient, topic: str, partitions: int = 1, **configs: str) -> None:
    admin.create_topics([KPNewTopic(topic, partitions, 1, topic_configs=configs)])


def _values_from(bootstrap: str, topic: str) -> list[bytes]:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=2000
    )
    consumer.assign([KPTP(topic, 0)])
    consumer.seek_to_beginning()
    out = [m.value for m in consumer]
    consumer.close()
    return out


# -- DeleteRecords ----------------------------------------------------------------------------


def test_delete_records_kafka_python_then_fetch_list_offsets_and_restart(
    broker: BrokerThread, topic_name: str
) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    _create(admin, topic_name)
    _produce(broker.bootstrap, topic_name, 10)
    result = admin.delete_records({KPTP(topic_name, 0): 4})
    assert result[KPTP(topic_name, 0)]["low_watermark"] == 4
    assert _values_from(broker.bootstrap, topic_name) == [f"v{i}".encode() for i in range(4, 10)]
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    assert consumer.beginning_offsets([KPTP(topic_name, 0)])[KPTP(topic_name, 0)] == 4
    consumer.close()
    # Fetching below the log start offset is OFFSET_OUT_OF_RANGE (no reset: the error surfaces).
    strict = KafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="none")
    strict.assign([KPTP(topic_name, 0)])
    strict.seek(KPTP(topic_name, 0), 1)
    with pytest.raises(Exception, match=r"[Oo]ffset"):
        for _ in range(5):
            strict.poll(timeout_ms=1000)
    strict.close()
    admin.close()
    broker.restart()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    assert consumer.beginning_offsets([KPTP(topic_name, 0)])[KPTP(topic_name, 0)] == 4
    consumer.close()


def test_delete_records_confluent_errors_and_beyond_end(
    broker: BrokerThread, topic_name: str
) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(10)
    _produce(broker.bootstrap, topic_name, 5)
    futures = admin.delete_records([CKTP(topic_name, 0, 3)])
    info = futures[CKTP(topic_name, 0, 3)].result(10)
    assert info.low_watermark == 3
    too_far = admin.delete_records([CKTP(topic_name, 0, 99)])
    with pytest.raises(Exception, match="OFFSET_OUT_OF_RANGE"):
        too_far[CKTP(topic_name, 0, 99)].result(10)
    earliest = admin.list_offsets({CKTP(topic_name, 0): OffsetSpec.earliest()})
    assert earliest[CKTP(topic_name, 0)].result(10).offset == 3


def test_delete_records_aiokafka_and_kcat_reads_from_log_start(
    broker: BrokerThread, topic_name: str
) -> None:
    async def scenario() -> dict[AKTP, int]:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        try:
            await admin.create_topics(
                [__import__("aiokafka.admin").admin.NewTopic(topic_name, 1, 1)]
            )
            _produce(broker.bootstrap, topic_name, 6)
            return await admin.delete_records({AKTP(topic_name, 0): RecordsToDelete(5)})
        finally:
            await admin.close()

    assert asyncio.run(scenario()) == {AKTP(topic_name, 0): 5}
    if not shutil.which(KCAT):
        pytest.skip("kcat not installed")
    out = subprocess.run(
        [
            KCAT,
            "-b",
            broker.bootstrap,
            "-C",
            "-t",
            topic_name,
            "-p",
            "0",
            "-o",
            "beginning",
            "-e",
            "-f",
            "%o %s\\n",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout.split("\n")
    assert [line for line in out if line] == ["5 v5"]


def test_retention_keeps_deleting_below_the_log_start(
    broker: BrokerThread, topic_name: str
) -> None:
    """A segment wholly below a DeleteRecords start is removed (and its bytes with it)."""
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    _create(admin, topic_name, **{"segment.bytes": "200"})
    _produce(broker.bootstrap, topic_name, 12)
    before = admin.describe_log_dirs()
    admin.delete_records({KPTP(topic_name, 0): 10})
    after = admin.describe_log_dirs()

    def size(resp: list[dict[str, Any]]) -> int:
        for log_dir in resp[0]["log_dirs"]:
            for t in log_dir["topics"]:
                if t["name"] == topic_name:
                    return int(t["partitions"][0]["partition_size"])
        raise AssertionError("partition not described")

    assert size(after) < size(before)
    admin.close()


# -- ListOffsets MAX_TIMESTAMP -----------------------------------------------------------------


def test_list_offsets_max_timestamp_with_confluent_and_kafka_python(
    broker: BrokerThread, topic_name: str
) -> None:
    now = int(time.time() * 1000)
    stamps = [now - 5000, now - 1000, now - 4000, now - 1000, now - 3000]
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    _create(admin, topic_name)
    _produce(broker.bootstrap, topic_name, 5, stamps)
    ck = AdminClient({"bootstrap.servers": broker.bootstrap})
    found = ck.list_offsets({CKTP(topic_name, 0): OffsetSpec.max_timestamp()})
    result = found[CKTP(topic_name, 0)].result(10)
    assert (result.offset, result.timestamp) == (1, now - 1000)  # the first of the two maxima
    from kafka.admin import OffsetSpec as KPOffsetSpec

    kp = admin.list_partition_offsets({KPTP(topic_name, 0): KPOffsetSpec.MAX_TIMESTAMP})
    assert kp[KPTP(topic_name, 0)].offset == 1
    admin.close()


# -- Configs ------------------------------------------------------------------------------------


def test_topic_configs_accepted_typed_and_sourced(broker: BrokerThread, topic_name: str) -> None:
    ck = AdminClient({"bootstrap.servers": broker.bootstrap})
    config = {
        "compression.type": "zstd",
        "cleanup.policy": "compact,delete",
        "min.compaction.lag.ms": "100",
        "message.timestamp.after.max.ms": "60000",
        "segment.jitter.ms": "10",
    }
    ck.create_topics([NewTopic(topic_name, 1, 1, config=config)])[topic_name].result(10)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic_name)
    described = ck.describe_configs([resource])[resource].result(10)
    assert described["compression.type"].value == "zstd"
    assert described["compression.type"].source == 1  # DYNAMIC_TOPIC_CONFIG
    assert described["retention.ms"].source == 5  # DEFAULT_CONFIG
    bad = ck.create_topics(
        [NewTopic(topic_name + "-bad", 1, 1, config={"compression.type": "brotli"})]
    )
    with pytest.raises(Exception, match=r"INVALID_CONFIG|compression"):
        bad[topic_name + "-bad"].result(10)

    broker_res = ConfigResource(ConfigResource.Type.BROKER, "0")
    broker_cfg = ck.describe_configs([broker_res])[broker_res].result(10)
    assert broker_cfg["advertised.listeners"].value == f"PLAINTEXT://{broker.bootstrap}"


def test_describe_configs_reports_config_types(broker: BrokerThread, topic_name: str) -> None:
    from streamrt.admin.connection import BrokerConnection
    from streamrt.wire.api_keys import ApiKey

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    _create(admin, topic_name)
    admin.close()

    async def scenario() -> dict[str, int]:
        conn = await BrokerConnection.open("127.0.0.1", broker.port)
        try:
            resp = await conn.call(
                ApiKey.DESCRIBE_CONFIGS,
                resources=[
                    {"resource_type": 2, "resource_name": topic_name, "configuration_keys": None}
                ],
                include_synonyms=False,
                include_documentation=True,
            )
        finally:
            await conn.close()
        return {c.name: int(c.config_type) for c in resp.results[0].configs}

    types = asyncio.run(scenario())
    # Kafka's ConfigType: BOOLEAN 1, STRING 2, INT 3, LONG 5, DOUBLE 6, LIST 7
    assert types["cleanup.policy"] == 7
    assert types["retention.ms"] == 5
    assert types["max.message.bytes"] == 3
    assert types["min.cleanable.dirty.ratio"] == 6
    assert types["preallocate"] == 1
    assert types["compression.type"] == 2


def test_max_message_bytes_enforced_on_produce(broker: BrokerThread, topic_name: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    _create(admin, topic_name, **{"max.message.bytes": "1000"})
    admin.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, max_request_size=10_000_000)
    with pytest.raises(Exception, match=r"MessageSizeTooLarge|MESSAGE_TOO_LARGE|too large"):
        producer.send(topic_name, value=b"x" * 5000, partition=0).get(10)
    producer.close()


# -- Partitions, leaders, reassignments, log dirs, quorum ----------------------------------------


def test_create_partitions_with_assignment_to_this_node(
    broker: BrokerThread, topic_name: str
) -> None:
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    _create(kp, topic_name)
    kp.create_partitions({topic_name: KPNewPartitions(2, [[0]])})
    with pytest.raises(Exception, match=r"InvalidReplicationAssignment|INVALID_REPLICA_ASSIGNMENT"):
        kp.create_partitions({topic_name: KPNewPartitions(3, [[7]])})
    kp.close()

    async def scenario() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        try:
            await admin.create_partitions({topic_name: NewPartitions(3, [[0]])})
        finally:
            await admin.close()

    asyncio.run(scenario())
    from confluent_kafka.admin import NewPartitions as CKNewPartitions

    ck = AdminClient({"bootstrap.servers": broker.bootstrap})
    ck.create_partitions([CKNewPartitions(topic_name, 4, [[0]])])[topic_name].result(10)
    md = ck.list_topics(topic_name, timeout=10)
    assert len(md.topics[topic_name].partitions) == 4
    bad = ck.create_partitions([CKNewPartitions(topic_name, 5, [[3]])])
    with pytest.raises(Exception, match="INVALID_REPLICA_ASSIGNMENT"):
        bad[topic_name].result(10)


def test_elect_leaders_election_not_needed(broker: BrokerThread, topic_name: str) -> None:
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    _create(kp, topic_name, partitions=2)
    from kafka.protocol.admin.topics import ElectionType as KPElectionType

    resp = kp.elect_leaders(KPElectionType.PREFERRED, {topic_name: [0]}, raise_errors=False)
    text = repr(resp)
    assert "84" in text or "ELECTION_NOT_NEEDED" in text.upper() or "ElectionNotNeeded" in text
    kp.close()
    ck = AdminClient({"bootstrap.servers": broker.bootstrap})
    future = ck.elect_leaders(ElectionType.PREFERRED, [CKTP(topic_name, 1)])
    results = future.result(10)
    error = results[CKTP(topic_name, 1)]
    assert error is not None and "ELECTION_NOT_NEEDED" in error.name()


def test_reassignments_list_nothing_and_refuse_unknown_brokers(
    broker: BrokerThread, topic_name: str
) -> None:
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    _create(kp, topic_name)
    listed = kp.list_partition_reassignments()
    assert not listed or all(
        not v for v in (listed.values() if isinstance(listed, dict) else [listed])
    )
    ok = kp.alter_partition_reassignments({KPTP(topic_name, 0): [0]})
    assert "Error" not in repr(ok), ok
    refused = kp.alter_partition_reassignments({KPTP(topic_name, 0): [5]})
    assert "InvalidReplicationAssignment" in repr(refused), refused
    kp.close()


def test_describe_log_dirs_topic_partitions_and_quorum(
    broker: BrokerThread, topic_name: str
) -> None:
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    _create(kp, topic_name, partitions=3)
    _produce(broker.bootstrap, topic_name, 3)
    dirs = kp.describe_log_dirs()
    text = repr(dirs)
    assert str(broker.data_dir.resolve()) in text and topic_name in text
    described = kp.describe_topic_partitions([topic_name], response_partition_limit=2)
    assert topic_name in repr(described)
    quorum = kp.describe_metadata_quorum()
    assert "leader_id=0" in repr(quorum) or "'leader_id': 0" in repr(quorum)
    kp.close()


def test_unknown_api_key_closes_the_connection_as_kafka_does(broker: BrokerThread) -> None:
    s = socket.create_connection(("127.0.0.1", broker.port), timeout=5)
    body = struct.pack(">hhih", 4, 0, 1, 1) + b"x"  # LeaderAndIsr: removed in Kafka 4.0
    s.sendall(len(body).to_bytes(4, "big") + body)
    assert s.recv(4) == b""
    s.close()
