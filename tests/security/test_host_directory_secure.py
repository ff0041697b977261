"""The REST host directory reaches a SASL_SSL-only cluster with the app's own client settings
(issue 29: it used to connect with bare ``bootstrap.servers`` and never got through)."""

from __future__ import annotations

from pathlib import Path

from streamrt.rest.wiring import attach_rest
from streamrt.runtime import App
from tests.kafka_helpers import create_topic, wait_until
from tests.rest.instances import free_port
from tests.security.conftest import USERS, Pki, address


def test_host_directory_over_sasl_ssl(secure_broker, pki: Pki, tmp_path: Path) -> None:
    plain = address(secure_broker, "PLAINTEXT")
    create_topic(plain, "secdir-in", 1)
    server = f"127.0.0.1:{free_port()}"
    app = App(
        {
            "application.id": "secdir",
            "bootstrap.servers": address(secure_broker, "SASL_SSL"),
            "state.dir": str(tmp_path),
            "group.instance.id": "web-1",
            "application.server": server,
            "rest.auth.token": "t0ken",
            "session.timeout.ms": "6000",
            "heartbeat.interval.ms": "500",
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
    app.stream("secdir-in", key_serde="str", value_serde="str").foreach(lambda _k, _v: None)
    attach_rest(app)
    app.start()
    try:
        # published and read back through the topic, both over SASL_SSL
        wait_until(lambda: app.queries.peer_hosts == {"web-1": server}, 30, "own host read back")
        assert app.queries.peer_hosts == {"web-1": server}  # and it stays read
    finally:
        app.stop()
