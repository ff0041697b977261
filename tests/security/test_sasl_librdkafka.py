"""confluent-kafka and kcat (librdkafka) over TLS and SASL: the config dict comes from
ClientConfig.librdkafka(); wrong credentials give an authentication error."""

from __future__ import annotations

import itertools
import shutil
import subprocess
import uuid

import pytest

from streamrt.client_config import ClientConfig
from tests.security.conftest import USERS, Pki, address

confluent_kafka = pytest.importorskip("confluent_kafka")

CASES = [
    ("SSL", None, None),
    ("SASL_PLAINTEXT", "PLAIN", "alice"),
    ("SASL_SSL", "SCRAM-SHA-256", "alice"),
    ("SASL_SSL", "SCRAM-SHA-512", "bob"),
]


def _cfg(pki: Pki, protocol: str, mechanism: str | None, user: str | None, pw: str) -> dict:
    props = {"security.protocol": protocol, "ssl.truststore.location": str(pki.ca)}
    if mechanism:
        props.update({"sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": pw})
    return ClientConfig.from_properties(props).librdkafka()


@pytest.mark.parametrize(("protocol", "mechanism", "user"), CASES)
def test_confluent_kafka_roundtrip(secure_broker, pki, protocol, mechanism, user) -> None:
    conf = _cfg(pki, protocol, mechanism, user, USERS.get(user or "", ""))
    conf["bootstrap.servers"] = address(secure_broker, protocol)
    topic = f"c-{uuid.uuid4().hex[:8]}"
    producer = confluent_kafka.Producer(conf)
    producer.produce(topic, b"v1")
    assert producer.flush(15) == 0
    consumer = confluent_kafka.Consumer(
        {**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"}
    )
    try:
        consumer.subscribe([topic])
        msg = None
        for _ in range(60):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                break
        assert msg is not None and msg.error() is None and msg.value() == b"v1"
    finally:
        consumer.close()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_confluent_kafka_wrong_password(secure_broker, pki, mechanism) -> None:
    conf = _cfg(pki, "SASL_SSL", mechanism, "alice", "wrong")
    errors: list = []
    conf.update(
        {"bootstrap.servers": address(secure_broker, "SASL_SSL"), "error_cb": errors.append}
    )
    producer = confluent_kafka.Producer(conf)
    for _ in range(20):
        producer.poll(0.5)  # serves error_cb
        if errors:
            break
    codes = {e.code() for e in errors}
    assert confluent_kafka.KafkaError._AUTHENTICATION in codes, errors


KCAT = shutil.which("kcat") or shutil.which("kafkacat")


def _kcat_librdkafka() -> tuple[int, ...]:
    out = (
        subprocess.run([KCAT, "-V"], capture_output=True, text=True, check=False) if KCAT else None
    )
    words = (out.stdout + out.stderr).split() if out else []
    for prev, word in itertools.pairwise(words):
        if prev == "librdkafka" and word[:1].isdigit():
            return tuple(int(x) for x in word.split(".") if x.isdigit())
    return (0,)


# librdkafka 2.0.0-2.0.2 (Debian 12's kcat) sends the client nonce twice in the SCRAM
# client-final-message, which Kafka (and streamrt) rightly reject; fixed in librdkafka 2.1.
_SCRAM_BROKEN = (2, 0) <= _kcat_librdkafka()[:2] < (2, 1)


def _kcat(args: list[str], conf: dict[str, str]) -> subprocess.CompletedProcess[str]:
    assert KCAT is not None
    flags = [x for k, v in conf.items() for x in ("-X", f"{k}={v}")]
    return subprocess.run(
        [KCAT, *flags, *args], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.skipif(KCAT is None, reason="kcat is not installed")
@pytest.mark.parametrize(("protocol", "mechanism", "user"), CASES)
def test_kcat_produce_and_consume(secure_broker, pki, protocol, mechanism, user) -> None:
    if _SCRAM_BROKEN and mechanism and mechanism.startswith("SCRAM"):
        pytest.skip("this kcat's librdkafka 2.0.x has the SCRAM nonce bug")
    conf = _cfg(pki, protocol, mechanism, user, USERS.get(user or "", ""))
    conf["bootstrap.servers"] = address(secure_broker, protocol)
    topic = f"k-{uuid.uuid4().hex[:8]}"
    assert KCAT is not None
    produced = subprocess.run(
        [KCAT, *[x for k, v in conf.items() for x in ("-X", f"{k}={v}")], "-P", "-t", topic],
        input="hello-kcat\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert produced.returncode == 0, produced.stderr
    consumed = _kcat(["-C", "-t", topic, "-o", "beginning", "-c", "1", "-e"], conf)
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.strip() == "hello-kcat"


@pytest.mark.skipif(KCAT is None, reason="kcat is not installed")
def test_kcat_wrong_password(secure_broker, pki) -> None:
    conf = _cfg(pki, "SASL_SSL", "PLAIN", "alice", "wrong")
    conf["bootstrap.servers"] = address(secure_broker, "SASL_SSL")
    result = _kcat(["-L", "-m", "5"], conf)
    assert result.returncode != 0
    assert "Authentication failed" in result.stderr or "authentication" in result.stderr.lower()
