"""Topic names up to Kafka's 249 characters work end to end (their metadata temp file once
passed the 255-byte file name limit and the connection closed); 250 is INVALID_TOPIC_EXCEPTION."""

from __future__ import annotations

from pathlib import Path

from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import InvalidTopicError

from streamrt.broker.embedded import BrokerThread
from tests.kafka_helpers import produce, read_all


def test_names_of_247_to_249_characters(tmp_path: Path) -> None:
    names = [c * n for c, n in (("a", 247), ("b", 248), ("c", 249))]
    with BrokerThread(tmp_path, {}) as broker:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            admin.create_topics([NewTopic(n, 2, 1) for n in names])
            for name in names:
                produce(broker.bootstrap, name, [(b"k", b"v")])
                assert [r.value for r in read_all(broker.bootstrap, name)] == [b"v"]
            try:
                admin.create_topics([NewTopic("d" * 250, 1, 1)])
                raise AssertionError("a 250-character name was accepted")
            except InvalidTopicError:
                pass
            admin.delete_topics([names[0]])
        finally:
            admin.close()
    with BrokerThread(tmp_path, {}) as broker:  # the metadata files load again
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            assert set(names[1:]) <= set(admin.list_topics())
            assert names[0] not in admin.list_topics()
        finally:
            admin.close()
        assert [r.value for r in read_all(broker.bootstrap, names[2])] == [b"v"]
