"""librdkafka's restore consumer restores a store over a SASL_SSL listener with the app's client
settings (TLS truststore, SCRAM through ``sasl.jaas.config``), as the thread's factory builds it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from aiokafka import AIOKafkaConsumer

from streamrt.runtime import client_settings as cs
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.engine.clients.rdkafka_restore import (
    LibrdkafkaRestoreConsumer,
    librdkafka_restore_config,
)
from streamrt.runtime.engine.restore.restore import ChangelogRestorer
from streamrt.state import ROCKS_DB, StateManager, TopicPartition
from tests.kafka_helpers import create_topic, produce
from tests.security.conftest import USERS, Pki, address


def test_a_store_restores_over_sasl_ssl(secure_broker, pki: Pki, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    topic = "secrestore-changelog"
    plain = address(secure_broker, "PLAINTEXT")
    create_topic(plain, topic, 1)
    produce(plain, topic, [(f"k{i}".encode(), f"v{i}".encode()) for i in range(200)])
    cfg = StreamsConfig.from_mapping(
        {
            "application.id": "secrestore",
            "bootstrap.servers": address(secure_broker, "SASL_SSL"),
            "security.protocol": "SASL_SSL",
            "ssl.truststore.location": str(pki.ca),
            "ssl.endpoint.identification.algorithm": "",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required "
                f'username="bob" password="{USERS["bob"]}";'
            ),
        }
    )
    config, max_records = librdkafka_restore_config(cfg.client_config(), "sec", "secrestore", False)
    assert config["security.protocol"] == "sasl_ssl" and config["sasl.username"] == "bob"
    tp = TopicPartition(topic, 0)
    state = StateManager("0_0", tmp_path / "0_0")
    state.register("s", tp, ROCKS_DB)
    state.open()

    async def go() -> int:
        consumer = LibrdkafkaRestoreConsumer(config, max_records)
        kwargs = cs.consumer_kwargs(cfg.client_config(), "restore.consumer", "sec-offsets")
        offsets = AIOKafkaConsumer(**kwargs)
        await consumer.start()
        await offsets.start()
        try:
            restorer = ChangelogRestorer(consumer, "t", offsets=offsets)
            assert not await restorer.add(state)
            deadline = asyncio.get_running_loop().time() + 30
            while restorer.restoring:
                assert asyncio.get_running_loop().time() < deadline, restorer.progress()
                await restorer.step()
            return restorer.stats.records
        finally:
            await consumer.stop()
            await offsets.stop()

    assert asyncio.run(go()) == 200
    assert state.store("s").get(b"k199") == b"v199" and state.position(tp) == 200
    state.close()
