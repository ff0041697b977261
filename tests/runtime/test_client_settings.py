"""Kafka client settings reach the stream thread's clients, as in Kafka Streams: bare names for
every client, ``producer.``/``consumer.``/``main.consumer.``/``restore.consumer.``/
``global.consumer.`` prefixes for one; the runtime's defaults otherwise; settings the commit
protocol owns are refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streamrt.errors import ConfigError
from streamrt.runtime import App
from streamrt.runtime.client_settings import PRODUCER_DEFAULTS
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.engine.clients import clients
from tests.kafka_helpers import create_topic, produce, read_all, wait_until


class _Recorded:
    """The stream thread's real librdkafka clients, remembering the config each was built with
    (and a consumer's records per poll)."""

    def __init__(self) -> None:
        self.built: dict[str, tuple[dict[str, Any], int]] = {}
        rec = self

        class Producer(clients.LibrdkafkaProducer):
            def __init__(self, config: dict[str, Any], *args: Any, **kwargs: Any) -> None:
                rec.built["producer"] = (config, 0)
                super().__init__(config, *args, **kwargs)

        class Consumer(clients.LibrdkafkaConsumer):
            def __init__(self, config: dict[str, Any], max_records: int) -> None:
                rec.built["main"] = (config, max_records)
                super().__init__(config, max_records)

        class Restore(clients.LibrdkafkaRestoreConsumer):
            def __init__(self, config: dict[str, Any], max_records: int) -> None:
                rec.built["restore"] = (config, max_records)
                super().__init__(config, max_records)

        self.Producer, self.Consumer, self.Restore = Producer, Consumer, Restore


def test_producer_and_consumer_settings_reach_the_clients(
    broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = _Recorded()
    monkeypatch.setattr(clients, "LibrdkafkaProducer", rec.Producer)
    monkeypatch.setattr(clients, "LibrdkafkaConsumer", rec.Consumer)
    monkeypatch.setattr(clients, "LibrdkafkaRestoreConsumer", rec.Restore)
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
        }
    )
    app.stream("cs-in").to("cs-out")
    app.start()
    try:
        wait_until(lambda: len(read_all(broker.bootstrap, "cs-out")) == 1, what="output")
    finally:
        app.stop()
    assert app.fatal_error is None
    producer, _ = rec.built["producer"]
    assert producer["linger.ms"] == 7 and producer["compression.type"] == "gzip"
    assert producer["batch.size"] == PRODUCER_DEFAULTS["max_batch_size"]
    assert producer["acks"] == "all" and producer["request.timeout.ms"] == 41000
    (main, main_records), (restore, restore_records) = rec.built["main"], rec.built["restore"]
    assert main_records == 33 and main["fetch.wait.max.ms"] == 250
    assert main["group.id"] == "cs" and main["enable.auto.commit"] is False
    assert restore_records == 444 and "fetch.wait.max.ms" not in restore
    # Kafka's 1 MiB per partition: a 16 MiB fetch kept the first records back ~0.2 s and the
    # restore's writes from overlapping its fetches
    assert restore["max.partition.fetch.bytes"] == 1024 * 1024
    assert restore["fetch.max.bytes"] == 64 * 1024 * 1024
    assert main["socket.timeout.ms"] == restore["socket.timeout.ms"] == 41000


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
        # the global-table consumer's own settings are checked as the others are
        ("global.consumer.max.poll.records", "many", "max.poll.records must be an integer"),
        ("global.consumer.group.id", "other", "set by the runtime"),
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
