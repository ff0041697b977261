"""The runtime over a SASL_SSL listener: a word-count app whose every client (admin, group
consumer, restore consumer, producer) authenticates with SCRAM over TLS, configured with
Kafka's names, and whose password appears in no log record and no event."""

from __future__ import annotations

import logging
import struct
from pathlib import Path
from typing import Any

import pytest

from streamrt.runtime import App
from tests.kafka_helpers import create_topic, latest_by_key, produce, read_all, wait_until
from tests.security.conftest import USERS, Pki, address


def _security(pki: Pki) -> dict[str, str]:
    return {
        "security.protocol": "SASL_SSL",
        "ssl.truststore.location": str(pki.ca),
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="bob" password="{USERS["bob"]}";'
        ),
    }


#: the stream threads' one client stack (librdkafka, streamrt's own membership), under both
#: guarantees
_CLIENTS = {"rdk-both": {}, "rdk-eos": {"processing.guarantee": "exactly_once_v2"}}


@pytest.mark.parametrize("producer", sorted(_CLIENTS))
def test_word_count_over_sasl_ssl(
    secure_broker, pki: Pki, tmp_path: Path, caplog: pytest.LogCaptureFixture, producer: str
) -> None:
    plain = address(secure_broker, "PLAINTEXT")  # the test's own reads and writes
    lines, sink = f"sec-lines-{producer}", f"sec-counts-{producer}"
    create_topic(plain, lines, 2)
    create_topic(plain, sink, 2)
    produce(plain, lines, [(None, b"a b a"), (None, b"b a")])
    events: list[dict[str, Any]] = []
    app = App(
        {
            "application.id": f"sec-wc-{producer}",
            "bootstrap.servers": address(secure_broker, "SASL_SSL"),
            "state.dir": str(tmp_path),
            "commit.interval.ms": "200",
            "session.timeout.ms": "6000",
            "heartbeat.interval.ms": "500",
            "ssl.endpoint.identification.algorithm": "",
            **_CLIENTS[producer],
            **_security(pki),
        }
    )
    (
        app.stream(lines, key_serde="str", value_serde="str")
        .flat_map(lambda _k, line: [(w, w) for w in line.split()], key_serde="str")
        .group_by_key(name="words")
        .count(store="counts")
        .to_stream()
        .to(sink, value_serde="int")
    )
    app.on_event(events.append)
    caplog.set_level(logging.DEBUG)

    def counts() -> dict[str, int]:
        records = read_all(plain, sink)
        return {k.decode(): struct.unpack(">q", v)[0] for k, v in latest_by_key(records).items()}

    app.start()
    try:
        wait_until(lambda: counts() == {"a": 3, "b": 2}, what="counts over SASL_SSL")
    finally:
        app.stop()
    assert app.fatal_error is None
    secret = USERS["bob"]
    for record in caplog.records:
        assert secret not in record.getMessage()
        assert secret not in repr(record.__dict__)
    assert any("[hidden]" in repr(r.__dict__) for r in caplog.records)  # the start log
    assert events and all(secret not in repr(e) for e in events)
    assert secret not in repr(app.config)


def test_a_global_table_restores_over_sasl_ssl(secure_broker, pki: Pki, tmp_path: Path) -> None:
    """The global thread's consumer and admin client get the app's security settings as the
    stream threads' clients do (its aiokafka consumer once connected in plaintext and the
    start failed)."""
    plain = address(secure_broker, "PLAINTEXT")
    table, lines, sink = "sec-glob-table", "sec-glob-lines", "sec-glob-out"
    for topic in (table, lines, sink):
        create_topic(plain, topic, 2)
    produce(plain, table, [(b"fr", b"France"), (b"de", b"Germany")], partitions=[0, 1])
    app = App(
        {
            "application.id": "sec-glob",
            "bootstrap.servers": address(secure_broker, "SASL_SSL"),
            "state.dir": str(tmp_path),
            "ssl.endpoint.identification.algorithm": "",
            **_security(pki),
        }
    )
    countries = app.global_table(table, store="countries", key_serde="str", value_serde="str")
    app.stream(lines, key_serde="str", value_serde="str").join(
        countries, lambda cc, name: f"{cc}={name}", key_mapper=lambda _k, cc: cc
    ).to(sink, key_serde="str", value_serde="str")
    app.start()
    try:
        assert [app.query_local("countries", c) for c in ("fr", "de")] == ["France", "Germany"]
        produce(plain, table, [(b"it", b"Italy")], partitions=[0])
        wait_until(lambda: app.query_local("countries", "it") == "Italy", what="global update")
    finally:
        app.stop()
    assert app.fatal_error is None
