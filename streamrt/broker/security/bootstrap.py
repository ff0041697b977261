"""Credentials written before the broker starts: the first admin user must exist somehow.

``--add-scram 'SCRAM-SHA-256=[name=admin,password-file=/run/secrets/admin]'`` follows
``kafka-storage.sh format --add-scram``, except that the password never appears on the command
line (where ``ps`` shows it to every local user): it comes from a file (``password-file=``), an
environment variable (``password-env=``), or the whole spec from ``--add-scram-file``. Later
users are managed over the wire (``streamrt users add``, AlterUserScramCredentials).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from streamrt.broker.security.stores import ScramCredentialStore
from streamrt.errors import ConfigError
from streamrt.security.scram import MAX_ITERATIONS, MECHANISMS, credential_from_password

__all__ = ("add_scram", "parse_add_scram", "resolve_cli_spec", "specs_from_file")

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


def resolve_cli_spec(spec: str, environ: Mapping[str, str] = os.environ) -> str:
    """A command-line spec with ``password-file=PATH`` or ``password-env=VAR`` → the spec with
    the password; an inline ``password=`` is refused (it would sit in the broker's argv)."""
    m = _SPEC.match(spec)
    if m is None:
        return spec  # parse_add_scram explains the format
    fields = [part.partition("=") for part in m["body"].split(",")]
    if any(key.strip() == "password" for key, _, _ in fields):
        raise ConfigError(
            "--add-scram: a password on the command line is visible to every local user (ps); "
            "use password-file=PATH or password-env=VAR, or --add-scram-file FILE"
        )
    out = []
    for key, sep, value in fields:
        key, value = key.strip(), value.strip().strip('"')
        if key == "password-file":
            out.append("password=" + _read_secret(Path(value)))
        elif key == "password-env":
            if not environ.get(value):
                raise ConfigError(f"--add-scram: environment variable {value} is not set")
            out.append("password=" + environ[value])
        else:
            out.append(f"{key}{sep}{value}")
    return f"{m['mech']}=[{','.join(out)}]"


def specs_from_file(path: Path) -> list[str]:
    """``--add-scram-file``: one spec per line (``#`` comments, blank lines skipped)."""
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise ConfigError(f"--add-scram-file {path}: {exc.strerror}") from None
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def _read_secret(path: Path) -> str:
    try:
        secret = path.read_text().strip()
    except OSError as exc:
        raise ConfigError(
            f"--add-scram: cannot read password-file {path}: {exc.strerror}"
        ) from None
    if not secret:
        raise ConfigError(f"--add-scram: password-file {path} is empty")
    return secret


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
