"""Kafka client properties → aiokafka/librdkafka kwargs, prefixes, JAAS parsing, redaction."""

from __future__ import annotations

import ssl

import pytest

from streamrt.client_config import ClientConfig, is_sensitive, parse_jaas_config, redact
from streamrt.errors import ConfigError

JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="svc" password="p@ss;word";'
)


def test_prefixes_override_bare_names_per_client() -> None:
    cfg = ClientConfig.from_properties(
        {
            "client.id": "base",
            "consumer.client.id": "c",
            "restore.consumer.client.id": "r",
            "producer.client.id": "p",
        }
    )
    assert cfg.for_role("consumer")["client.id"] == "c"
    assert cfg.for_role("restore.consumer")["client.id"] == "r"
    assert cfg.for_role("main.consumer")["client.id"] == "c"
    assert cfg.for_role("producer")["client.id"] == "p"
    assert cfg.for_role("admin")["client.id"] == "base"
    assert "restore.consumer.client.id" not in cfg.for_role("consumer")


def test_jaas_config_gives_sasl_credentials(pki) -> None:
    cfg = ClientConfig.from_properties(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": JAAS,
            "ssl.truststore.location": str(pki.ca),
        }
    )
    kw = cfg.aiokafka_consumer_kwargs()
    assert kw["security_protocol"] == "SASL_SSL"
    assert kw["sasl_mechanism"] == "SCRAM-SHA-512"
    assert (kw["sasl_plain_username"], kw["sasl_plain_password"]) == ("svc", "p@ss;word")
    assert isinstance(kw["ssl_context"], ssl.SSLContext)
    rd = cfg.librdkafka("producer")
    assert rd["security.protocol"] == "sasl_ssl"
    assert rd["sasl.mechanisms"] == "SCRAM-SHA-512"
    assert rd["ssl.ca.location"] == str(pki.ca)


def test_keystore_with_encrypted_key(pki) -> None:
    from tests.security.conftest import KEY_PASSWORD

    cfg = ClientConfig.from_properties(
        {
            "security.protocol": "SSL",
            "ssl.truststore.location": str(pki.ca),
            "ssl.keystore.location": str(pki.server_keystore),
            "ssl.key.password": KEY_PASSWORD,
        }
    )
    assert cfg.ssl_context() is not None
    bad = ClientConfig.from_properties({**cfg.properties(), "ssl.key.password": "nope"})
    with pytest.raises(ssl.SSLError):
        bad.ssl_context()


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"security.protocol": "SASL_TLS"}, "security.protocol"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "credentials"),
        ({"security.protocol": "SSL", "ssl.truststore.type": "JKS"}, "PEM"),
        ({"security.protocol": "SSL", "ssl.truststore.location": "/nope.pem"}, "no such file"),
        (
            {
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": JAAS,
            },
            "ScramLoginModule",
        ),
    ],
)
def test_bad_settings_are_clear_errors(props, message) -> None:
    with pytest.raises(ConfigError, match=message):
        ClientConfig.from_properties(props).validate()


def test_parse_jaas_options() -> None:
    module, options = parse_jaas_config(
        "org.apache.kafka.common.security.plain.PlainLoginModule required username=u "
        'password="a \\"quoted\\" secret";'
    )
    assert module.endswith("PlainLoginModule")
    assert options == {"username": "u", "password": 'a "quoted" secret'}


def test_redaction_hides_secrets_only() -> None:
    props = {
        "sasl.jaas.config": JAAS,
        "sasl.password": "pw",
        "consumer.ssl.key.password": "k",
        "ssl.keystore.key": "-----BEGIN PRIVATE KEY-----",
        "ssl.truststore.location": "/ca.pem",
        "bootstrap.servers": "h:1",
    }
    red = ClientConfig.from_properties(props).redacted()
    assert red["bootstrap.servers"] == "h:1"
    assert red["ssl.truststore.location"] == "/ca.pem"
    for key in (
        "sasl.jaas.config",
        "sasl.password",
        "consumer.ssl.key.password",
        "ssl.keystore.key",
    ):
        assert red[key] == "[hidden]"
    assert "p@ss" not in repr(ClientConfig.from_properties(props))
    assert is_sensitive("basic.auth.client.secret")
    assert redact({"x": "1"}) == {"x": "1"}
