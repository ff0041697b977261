"""Listeners (``listeners=SASL_SSL://127.0.0.1:9093,…``) and their TLS server contexts.

Names map to security protocols through ``listener.security.protocol.map`` as in Kafka; a
listener's settings may be overridden with ``listener.name.<name>.<config>`` (lower-case
name), e.g. ``listener.name.sasl_ssl.ssl.keystore.location``. Keystores are PEM
(``ssl.keystore.type=PEM``): a file holding the private key and the certificate chain, or
inline ``ssl.keystore.key`` + ``ssl.keystore.certificate.chain``.
"""

from __future__ import annotations

import dataclasses
import os
import ssl
import tempfile
from pathlib import Path
from typing import Any

from streamrt.errors import ConfigError

__all__ = ("Listener", "parse_listeners", "server_ssl_context")

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclasses.dataclass(frozen=True)
class Listener:
    name: str
    protocol: str
    host: str
    port: int

    @property
    def uses_ssl(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def _protocol_map(value: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in value.split(","):
        if not item.strip():
            continue
        name, sep, proto = item.partition(":")
        proto = proto.strip().upper()
        if not sep or proto not in PROTOCOLS:
            raise ConfigError(
                f"listener.security.protocol.map: bad entry {item!r} "
                f"(NAME:PROTOCOL with PROTOCOL in {', '.join(PROTOCOLS)})"
            )
        out[name.strip().upper()] = proto
    return out


def parse_listeners(listeners: str, protocol_map: str) -> list[Listener]:
    """``NAME://host:port`` entries; an empty host binds every interface, as in Kafka."""
    protocols = _protocol_map(protocol_map)
    out: list[Listener] = []
    for item in (s.strip() for s in listeners.split(",")):
        if not item:
            continue
        name, sep, address = item.partition("://")
        host, colon, port = address.rpartition(":")
        name = name.strip().upper()
        if not sep or not colon or not port.isdigit():
            raise ConfigError(f"listeners: expected NAME://host:port, got {item!r}")
        if name not in protocols:
            raise ConfigError(f"listeners: {name} has no entry in listener.security.protocol.map")
        if any(other.name == name for other in out):
            raise ConfigError(f"listeners: {name} appears twice")
        host = host.strip("[]") or "0.0.0.0"
        out.append(Listener(name, protocols[name], host, int(port)))
    if not out:
        raise ConfigError("listeners: no listener configured")
    return out


def server_ssl_context(get: Any, listener: Listener) -> ssl.SSLContext:
    """A TLS server context from the listener's ``ssl.*`` settings; ``get(key)`` reads them."""
    if str(get("ssl.keystore.type")).upper() != "PEM":
        raise ConfigError(
            f"ssl.keystore.type={get('ssl.keystore.type')}: only PEM is supported "
            "(convert a PKCS12/JKS store with openssl/keytool)"
        )
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    password = get("ssl.key.password") or get("ssl.keystore.password") or None
    location, key, chain = (
        get("ssl.keystore.location"),
        get("ssl.keystore.key"),
        get("ssl.keystore.certificate.chain"),
    )
    try:
        if location:
            ctx.load_cert_chain(location, password=password)
        elif key and chain:
            fd, path = tempfile.mkstemp(suffix=".pem")
            try:
                with os.fdopen(fd, "w") as f:
                    f.write(key.strip() + "\n" + chain.strip() + "\n")
                ctx.load_cert_chain(path, password=password)
            finally:
                os.unlink(path)
        else:
            raise ConfigError(
                f"listener {listener.name} ({listener.protocol}) needs ssl.keystore.location "
                "(a PEM file with the private key and certificate chain)"
            )
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(f"cannot load the keystore of listener {listener.name}: {exc}") from None
    client_auth = str(get("ssl.client.auth")).lower()
    if client_auth in ("required", "requested"):
        cafile = get("ssl.truststore.location") or None
        cadata = get("ssl.truststore.certificates") or None
        if cafile is None and cadata is None:
            raise ConfigError(f"ssl.client.auth={client_auth} needs ssl.truststore.location")
        if cafile is not None and not Path(cafile).is_file():
            raise ConfigError(f"ssl.truststore.location={cafile!r}: no such file")
        ctx.load_verify_locations(cafile=cafile, cadata=cadata)
        ctx.verify_mode = ssl.CERT_REQUIRED if client_auth == "required" else ssl.CERT_OPTIONAL
    return ctx


def certificate_principal(peercert: dict[str, Any] | None) -> str | None:
    """``User:CN=alice,OU=eng,O=acme`` (RFC 2253 order: most specific first), or None."""
    if not peercert or "subject" not in peercert:
        return None
    short = {
        "commonName": "CN",
        "organizationalUnitName": "OU",
        "organizationName": "O",
        "localityName": "L",
        "stateOrProvinceName": "ST",
        "countryName": "C",
        "domainComponent": "DC",
        "userId": "UID",
    }
    parts = [f"{short.get(k, k)}={v}" for rdn in reversed(peercert["subject"]) for k, v in rdn]
    return "User:" + ",".join(parts)
