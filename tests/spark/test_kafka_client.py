"""The Spark source's range read stops at the partition's end (librdkafka's EOF event)."""

from __future__ import annotations

import confluent_kafka as ck

from streamrt.broker.embedded import BrokerThread
from streamrt.spark.kafka_client import PARTITION_EOF, consume_range
from streamrt.spark.offsets import TopicPartition
from tests.kafka_helpers import create_topic, produce_acked


def test_partition_eof_is_librdkafkas_code() -> None:
    assert ck.KafkaError(PARTITION_EOF).name() == "_PARTITION_EOF"


def test_a_range_past_the_end_stops_at_eof(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "eof", 1)
    produce_acked(broker.bootstrap, "eof", [(None, b"a"), (None, b"b")], partition=0)
    client = {"bootstrap.servers": broker.bootstrap}
    # offset 3 does not exist (as in a compacted log): without EOF this waits and then fails
    batches = list(consume_range(client, TopicPartition("eof", 0), 0, 4, poll_timeout_ms=30_000))
    assert [m.value() for batch in batches for m in batch] == [b"a", b"b"]
