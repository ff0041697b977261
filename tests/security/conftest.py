"""A throwaway PKI (CA, server and client certificates made with ``cryptography``) and brokers
with TLS, SASL_PLAINTEXT and SASL_SSL listeners. No key material is committed."""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
from collections.abc import Iterator
from pathlib import Path

import pytest

from streamrt.broker.embedded import BrokerThread
from streamrt.broker.security.bootstrap import add_scram

KEY_PASSWORD = "key-secret"
USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}


@dataclasses.dataclass(frozen=True)
class Pki:
    ca: Path  # CA certificate (the clients' truststore)
    server_keystore: Path  # encrypted key + chain, password KEY_PASSWORD
    client_keystore: Path  # CN=alice key + chain, unencrypted


def _name(cn: str):  # type: ignore[no-untyped-def]
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "streamrt-test"),
            x509.NameAttribute(NameOID.COMMON_NAME, cn),
        ]
    )


def _make_pki(root: Path) -> Pki:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    now = datetime.datetime.now(datetime.UTC)

    def cert(subject, key, issuer, issuer_key, *, ca=False, san=None):  # type: ignore[no-untyped-def]
        b = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if san:
            b = b.add_extension(x509.SubjectAlternativeName(san), critical=False)
        return b.sign(issuer_key, hashes.SHA256())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = cert(_name("test-ca"), ca_key, _name("test-ca"), ca_key, ca=True)
    srv_key = ec.generate_private_key(ec.SECP256R1())
    san = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    srv_cert = cert(_name("localhost"), srv_key, ca_cert.subject, ca_key, san=san)
    cli_key = ec.generate_private_key(ec.SECP256R1())
    cli_cert = cert(_name("alice"), cli_key, ca_cert.subject, ca_key)

    pem = serialization.Encoding.PEM
    root.mkdir(parents=True, exist_ok=True)
    (root / "ca.pem").write_bytes(ca_cert.public_bytes(pem))
    (root / "server.pem").write_bytes(
        srv_key.private_bytes(
            pem,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(KEY_PASSWORD.encode()),
        )
        + srv_cert.public_bytes(pem)
        + ca_cert.public_bytes(pem)
    )
    (root / "client.pem").write_bytes(
        cli_key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        + cli_cert.public_bytes(pem)
    )
    for f in root.iterdir():
        f.chmod(0o600)
    return Pki(root / "ca.pem", root / "server.pem", root / "client.pem")


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    pytest.importorskip("cryptography")
    return _make_pki(tmp_path_factory.mktemp("pki"))


def secure_overrides(pki: Pki, **extra: str) -> dict[str, str]:
    return {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,"
        "SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.server_keystore),
        "ssl.key.password": KEY_PASSWORD,
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",  # PLAIN: only if listed
        "group.initial.rebalance.delay.ms": "0",
        **extra,
    }


def _users(data_dir: Path) -> None:
    specs = []
    for name, password in USERS.items():
        for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            specs.append(f"{mech}=[name={name},password={password}]")
    add_scram(data_dir, specs)


@pytest.fixture(scope="module")
def secure_broker(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    """Four listeners, SCRAM users in USERS (PLAIN checks them too), no authorizer."""
    data_dir = tmp_path_factory.mktemp("secure-broker")
    _users(data_dir)
    with BrokerThread(data_dir, secure_overrides(pki)) as broker:
        yield broker


@pytest.fixture(scope="module")
def acl_broker(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    """Like secure_broker, with ACLs enforced: admin is a super user, nobody else by default."""
    data_dir = tmp_path_factory.mktemp("acl-broker")
    _users(data_dir)
    overrides = secure_overrides(
        pki,
        **{
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:admin",
            "allow.everyone.if.no.acl.found": "false",
        },
    )
    with BrokerThread(data_dir, overrides) as broker:
        yield broker


def address(broker: BrokerThread, listener: str) -> str:
    assert broker.broker is not None
    return broker.broker.listener_addresses[listener]
