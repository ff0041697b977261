"""Kafka client settings reach the stream thread's clients, as in Kafka Streams: bare names for
every client, ``producer.``/``consumer.``/``main.consumer.``/``restore.consumer.`` prefixes for
one; the runtime's defaults otherwise; settings the commit protocol owns are refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from streamrt.errors import ConfigError
from streamrt.runtime import App
from streamrt.runtime.client_settings import PRODUCER_DEFAULTS
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.engine import clients
from tests.kafka_helpers import create_topic, produce, read_all, wait_until


class _Recorded:
    """Real aiokafka clients that remember the keyword arguments they were built with."""

    def __init__(self) -> None:
        self.producers: list[dict[str, Any]] = []
        self.consumers: list[dict[str, Any]] = []
        rec = self

        class Producer(AIOKafkaProducer):  # type: ignore[misc]
            def __init__(self, **kw: Any) -> None:
                rec.producers.append(kw)
                super().__init__(**kw)

        class Consumer(AIOKafkaConsumer):  # type: ignore[misc]
            def __init__(self, *topics: str, **kw: Any) -> None:
                rec.consumers.append(kw)
                super().__init__(*topics, **kw)

        self.Producer, self.Consumer = Producer, Consumer

    def consumer(self, suffix: str) -> dict[str, Any]:
        return next(c for c in self.consumers if c["client_id"].endswith(suffix))


def test_producer_and_consumer_settings_reach_the_clients(
    broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = _Recorded()
    monkeypatch.setattr(clients, "AIOKafkaProducer", rec.Producer)
    monkeypatch.setattr(clients, "AIOKafkaConsumer", rec.Consumer)
    create_topic(broker.bootstrap, "cs-in", 1)
    create_topic(broker.bootstrap, "cs-out", 1)
    produce(broker.bootstrap, "cs-in", [(b"k", b"v")])
    app = App(
        {
            "application.id": "cs",
            "bootstrap.servers": broker.bootstrap,
            "state.dir": str(tmp_path),
            "commit.interval.ms": "200",
            "producer.linger.ms": "7",
            "producer.compression.type": "gzip",
            "consumer.max.poll.records": "33",
            "restore.consumer.max.poll.records": "444",
            "main.consumer.fetch.max.wait.ms": "250",
            "request.timeout.ms": "41000",  # bare: every client
            # aiokafka's clients, whose keyword arguments this test records (librdkafka's
            # settings: tests/runtime/engine/test_librdkafka_*.py)
            "stream.thread.membership": "aiokafka",
            "stream.thread.consumer": "aiokafka",
            "stream.thread.producer": "aiokafka",
        }
    )
    app.stream("cs-in").to("cs-out")
    app.start()
    try:
        wait_until(lambda: len(read_all(broker.bootstrap, "cs-out")) == 1, what="output")
    finally:
        app.stop()
    assert app.fatal_error is None
    (producer,) = rec.producers
    assert producer["linger_ms"] == 7 and producer["compression_type"] == "gzip"
    assert producer["max_batch_size"] == PRODUCER_DEFAULTS["max_batch_size"]
    assert producer["acks"] == "all" and producer["request_timeout_ms"] == 41000
    main, restore = rec.consumer("thread-1"), rec.consumer("-restore")
    assert main["max_poll_records"] == 33 and main["fetch_max_wait_ms"] == 250
    assert main["group_id"] == "cs" and main["enable_auto_commit"] is False
    assert restore["max_poll_records"] == 444 and "fetch_max_wait_ms" not in restore
    assert restore["max_partition_fetch_bytes"] >= 16 * 1024 * 1024
    assert main["request_timeout_ms"] == restore["request_timeout_ms"] == 41000


def test_security_keys_are_accepted_and_hidden() -> None:
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="alice" password="alice-secret";'
    )
    config = StreamsConfig.from_mapping(
        {
            "application.id": "sec",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.jaas.config": jaas,
            "producer.sasl.jaas.config": jaas,
        }
    )
    assert config.client_config().sasl_credentials("producer") is not None
    assert "alice-secret" not in repr(config)
    assert "alice-secret" not in str(config.redacted())
    assert config.redacted()["sasl.jaas.config"] == "[hidden]"


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("enable.auto.commit", "true", "set by the runtime"),
        ("consumer.group.id", "other", "set by the runtime"),
        ("producer.acks", "2", "acks"),
        ("linger.ms", "soon", "linger.ms must be an integer"),
        ("security.protocol", "SASL_FOO", "security.protocol"),
        ("lingr.ms", "5", "unknown config key"),
    ],
)
def test_bad_client_settings_are_refused_at_start(key: str, value: str, message: str) -> None:
    app = App({"application.id": "bad", key: value})
    app.stream("x").to("y")
    with pytest.raises(ConfigError, match=message):
        app.start()


def test_cache_size_defaults_to_kafka_streams_and_takes_the_old_name() -> None:
    assert StreamsConfig.from_mapping({"application.id": "a"}).statestore_cache_max_bytes == (
        10 * 1024 * 1024
    )
    old = StreamsConfig.from_mapping({"application.id": "a", "cache.max.bytes.buffering": "5"})
    assert old.statestore_cache_max_bytes == 5
    both = {"application.id": "a", "cache.max.bytes.buffering": "5"}
    both["statestore.cache.max.bytes"] = "7"
    assert StreamsConfig.from_mapping(both).statestore_cache_max_bytes == 7
    with pytest.raises(ConfigError, match="at least 0"):
        StreamsConfig.from_mapping({"application.id": "a", "statestore.cache.max.bytes": "-1"})
