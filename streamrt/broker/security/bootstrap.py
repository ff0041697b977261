"""Credentials written before the broker starts: the first admin user must exist somehow.

``--add-scram 'SCRAM-SHA-256=[name=admin,password=admin-secret]'`` follows
``kafka-storage.sh format --add-scram``; later users are managed over the wire
(``streamrt users add``, AlterUserScramCredentials).
"""

from __future__ import annotations

import re
from pathlib import Path

from streamrt.broker.security.stores import ScramCredentialStore
from streamrt.errors import ConfigError
from streamrt.security.scram import MAX_ITERATIONS, MECHANISMS, credential_from_password

__all__ = ("add_scram", "parse_add_scram")

_SPEC = re.compile(r"^\s*(?P<mech>SCRAM-SHA-(?:256|512))\s*=\s*\[(?P<body>.*)\]\s*$")


def parse_add_scram(spec: str) -> tuple[str, str, str, int]:
    """``SCRAM-SHA-256=[name=alice,password=secret(,iterations=8192)]`` → parts."""
    m = _SPEC.match(spec)
    if m is None:
        raise ConfigError(
            f"--add-scram {spec!r}: expected 'SCRAM-SHA-256=[name=NAME,password=PASSWORD]'"
        )
    fields: dict[str, str] = {}
    for part in m["body"].split(","):
        key, sep, value = part.partition("=")
        if not sep:
            raise ConfigError(f"--add-scram: expected key=value, got {part!r}")
        fields[key.strip()] = value.strip().strip('"')
    name, password = fields.get("name"), fields.get("password")
    if not name or not password:
        raise ConfigError("--add-scram needs name=… and password=…")
    iterations = int(fields.get("iterations", "4096"))
    if not 4096 <= iterations <= MAX_ITERATIONS:
        raise ConfigError(f"--add-scram: iterations must be between 4096 and {MAX_ITERATIONS}")
    return m["mech"], name, password, iterations


def add_scram(data_dir: Path, specs: list[str]) -> list[str]:
    """Store the credentials (salted as Kafka does) in the data dir; returns the user names."""
    store = ScramCredentialStore(data_dir / "security" / "scram-credentials.json")
    upserts = []
    for spec in specs:
        mech, name, password, iterations = parse_add_scram(spec)
        cred = credential_from_password(MECHANISMS[mech], password, iterations=iterations)
        upserts.append((name, mech, cred))
    if upserts:
        store.apply(upserts, [])
    return [name for name, _, _ in upserts]
