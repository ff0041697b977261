"""aiokafka over TLS, SASL_PLAINTEXT and SASL_SSL with PLAIN and SCRAM: right credentials work,
wrong ones fail with an authentication error."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError, KafkaError

from streamrt.client_config import ClientConfig
from tests.security.conftest import USERS, Pki, address

CASES = [
    ("SSL", None, None),
    ("SASL_PLAINTEXT", "PLAIN", "alice"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-256", "alice"),
    ("SASL_SSL", "SCRAM-SHA-512", "bob"),
    ("SASL_SSL", "PLAIN", "bob"),
]


def _props(pki: Pki, protocol: str, mechanism: str | None, user: str | None, password: str):
    props = {"security.protocol": protocol, "ssl.truststore.location": str(pki.ca)}
    if mechanism is not None:
        module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
        props["sasl.mechanism"] = mechanism
        props["sasl.jaas.config"] = (
            f"org.apache.kafka.common.security.{module} required "
            f'username="{user}" password="{password}";'
        )
    return props


async def _roundtrip(bootstrap: str, cfg: ClientConfig) -> list[bytes]:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, **cfg.aiokafka_producer_kwargs())
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"secret-value")
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        **cfg.aiokafka_consumer_kwargs(),
    )
    await consumer.start()
    try:
        batch = await consumer.getmany(timeout_ms=10000)
        return [r.value for rs in batch.values() for r in rs]
    finally:
        await consumer.stop()


@pytest.mark.parametrize(("protocol", "mechanism", "user"), CASES)
def test_right_credentials_connect(secure_broker, pki, protocol, mechanism, user) -> None:
    password = USERS[user] if user else ""
    cfg = ClientConfig.from_properties(_props(pki, protocol, mechanism, user, password))
    values = asyncio.run(_roundtrip(address(secure_broker, protocol), cfg))
    assert values == [b"secret-value"]


@pytest.mark.parametrize(("protocol", "mechanism", "user"), [c for c in CASES if c[1]])
def test_wrong_password_is_an_authentication_error(
    secure_broker, pki, protocol, mechanism, user, caplog
) -> None:
    cfg = ClientConfig.from_properties(_props(pki, protocol, mechanism, user, "wrong"))

    async def connect() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=address(secure_broker, protocol),
            request_timeout_ms=5000,
            **cfg.aiokafka_producer_kwargs(),
        )
        try:
            await producer.start()
        finally:
            await producer.stop()

    with pytest.raises((KafkaError, KafkaConnectionError)) as info:
        asyncio.run(connect())
    # aiokafka reports the broker's SASL_AUTHENTICATION_FAILED (58), then fails bootstrap
    assert "Unable to bootstrap" in str(info.value)
    assert "[Error 58] SaslAuthenticationFailed" in caplog.text, caplog.text


def test_tls_client_needs_the_ca(secure_broker) -> None:
    cfg = ClientConfig.from_properties({"security.protocol": "SSL"})  # system CAs only

    async def connect() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=address(secure_broker, "SSL"),
            request_timeout_ms=3000,
            **cfg.aiokafka_producer_kwargs(),
        )
        try:
            await producer.start()
        finally:
            await producer.stop()

    with pytest.raises(KafkaConnectionError):
        asyncio.run(connect())
