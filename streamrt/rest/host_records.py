"""What a host-directory record may say, and how a reader knows an app member wrote it.

A record of ``<application.id>-metadata`` maps an instance id to the ``application.server``
that peers forward interactive queries to, so a forged one redirects queries (issue 29: a value
``127.0.0.1:P/internal/admin?via=:1`` made an instance forward there and return the forger's
JSON) and a malformed one broke every metadata answer (``web-2:notaport``). Two rules:

* **Shape.** The value is ``host:port`` and nothing else: a hostname (RFC 1123 labels, ``_``
  allowed for container names) or a dotted IPv4 address, and a decimal port 1-65535. No path,
  query, userinfo, scheme or whitespace: what a URL is built from cannot change which URL.
* **Authorship.** The topic is plain Kafka: on a listener without ACLs anyone may write it, and
  a record carries no trustworthy producer identity. So each record carries an HMAC-SHA256 over
  (application id, instance id, host, publish time) keyed by a secret every member of the app
  holds and nobody else: ``rest.directory.secret``, or else the app's ``rest.auth.token``
  (the same secret that already authorises mutating REST calls on every instance). A record
  under one instance's key cannot be re-signed for another, nor copied to another app; an
  older record of the same instance (replayed after a newer one) loses to the newer one.
  Checking the record's key against the group's members alone would not do: the attack names
  a real member (``web-2``) and only changes where it points.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import re
from dataclasses import dataclass

__all__ = ("BadHostRecord", "HostRecord", "parse_host_port", "sign", "verify")

_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
_HOSTNAME = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(?:\.{_LABEL})*$")
_PORT = re.compile(r"^[0-9]{1,5}$")
_DOMAIN = "streamrt-host-directory/v1"


class BadHostRecord(ValueError):
    """A directory record that is malformed, unsigned or signed with another key."""


def parse_host_port(text: str) -> tuple[str, int]:
    """``"web-1.internal:7070"`` → ``("web-1.internal", 7070)``; anything else raises."""
    host, sep, port = text.rpartition(":")
    if not sep or not _PORT.match(port) or not 1 <= int(port) <= 65535:
        raise BadHostRecord(f"{text[:100]!r} is not host:port with a port 1-65535")
    if not _HOSTNAME.match(host):
        raise BadHostRecord(f"{text[:100]!r}: {host[:100]!r} is not a hostname or IPv4 address")
    if host.replace(".", "").isdigit():  # all-numeric: it must be a real IPv4 address
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            raise BadHostRecord(f"{text[:100]!r}: {host!r} is not an IPv4 address") from None
    return host, int(port)


@dataclass(frozen=True, slots=True)
class HostRecord:
    """One instance's advertised ``application.server`` at ``updated_ms``."""

    instance_id: str
    application_server: str
    updated_ms: int


def _mac(secret: str, application_id: str, record: HostRecord) -> str:
    message = json.dumps(
        [_DOMAIN, application_id, record.instance_id, record.application_server, record.updated_ms]
    )
    return hmac.new(secret.encode(), message.encode(), hashlib.sha256).hexdigest()


def sign(secret: str, application_id: str, record: HostRecord) -> bytes:
    """The record's value: JSON with the fields and their MAC."""
    parse_host_port(record.application_server)  # never publish what peers would refuse
    value = {
        "instance_id": record.instance_id,
        "application_server": record.application_server,
        "updated_ms": record.updated_ms,
        "mac": _mac(secret, application_id, record),
    }
    return json.dumps(value).encode()


def verify(secret: str, application_id: str, key: bytes, value: bytes) -> HostRecord:
    """The record a member of ``application_id`` wrote under ``key``, or BadHostRecord."""
    try:
        raw = json.loads(value)
        record = HostRecord(
            str(raw["instance_id"]), str(raw["application_server"]), int(raw["updated_ms"])
        )
        mac = str(raw["mac"])
    except (ValueError, KeyError, TypeError) as exc:
        raise BadHostRecord(f"not a host record: {exc!r}"[:200]) from None
    if record.instance_id.encode() != key:
        raise BadHostRecord(f"written under key {key[:100]!r} for {record.instance_id[:100]!r}")
    if not hmac.compare_digest(mac, _mac(secret, application_id, record)):
        raise BadHostRecord("its signature does not match this application's secret")
    parse_host_port(record.application_server)
    return record
