"""ACLs and SCRAM credentials, persisted as JSON files in the broker's data directory.

Kafka keeps both in its metadata log; a single-node broker needs only durable, atomic
replacement: each change writes ``<file>.tmp``, fsyncs it and renames it over the old file.
Credentials are stored as Kafka stores them (salt, StoredKey, ServerKey, iterations), never
a password. Both files are created with mode 0600.
"""

from __future__ import annotations

import base64
import json
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from streamrt.broker.security.acls import AclBinding, AclFilter
from streamrt.security.scram import MECHANISMS, ScramCredential

__all__ = ("AclStore", "ScramCredentialStore")


def _write_atomic(path: Path, document: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(document, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


class AclStore:
    """The broker's ACL bindings (``<data dir>/security/acls.json``)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._bindings: list[AclBinding] = []
        if path.exists():
            self._bindings = [AclBinding.from_json(d) for d in json.loads(path.read_text())]

    def bindings(self) -> list[AclBinding]:
        return list(self._bindings)

    def add(self, bindings: Iterable[AclBinding]) -> None:
        with self._lock:
            new = [b for b in bindings if b not in self._bindings]
            if new:
                self._bindings = self._bindings + new
                self._save()

    def describe(self, flt: AclFilter) -> list[AclBinding]:
        return [b for b in self._bindings if flt.matches(b)]

    def delete(self, filters: Iterable[AclFilter]) -> list[list[AclBinding]]:
        """Per filter, the bindings it removed (a binding matching two filters is in both)."""
        with self._lock:
            matched = [[b for b in self._bindings if f.matches(b)] for f in filters]
            gone = {b for group in matched for b in group}
            if gone:
                self._bindings = [b for b in self._bindings if b not in gone]
                self._save()
            return matched

    def _save(self) -> None:
        _write_atomic(self._path, [b.to_json() for b in self._bindings])


def _cred_to_json(c: ScramCredential) -> dict[str, Any]:
    enc = base64.b64encode
    return {
        "salt": enc(c.salt).decode(),
        "stored_key": enc(c.stored_key).decode(),
        "server_key": enc(c.server_key).decode(),
        "iterations": c.iterations,
    }


def _cred_from_json(d: dict[str, Any]) -> ScramCredential:
    dec = base64.b64decode
    return ScramCredential(
        dec(d["salt"]), dec(d["stored_key"]), dec(d["server_key"]), int(d["iterations"])
    )


class ScramCredentialStore:
    """user → mechanism → credential (``<data dir>/security/scram-credentials.json``)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._users: dict[str, dict[str, ScramCredential]] = {}
        if path.exists():
            raw = json.loads(path.read_text())
            self._users = {
                user: {m: _cred_from_json(c) for m, c in mechs.items() if m in MECHANISMS}
                for user, mechs in raw.items()
            }

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def users(self) -> dict[str, dict[str, ScramCredential]]:
        return {u: dict(m) for u, m in self._users.items() if m}

    def apply(
        self,
        upserts: Iterable[tuple[str, str, ScramCredential]],
        deletions: Iterable[tuple[str, str]],
    ) -> None:
        """One atomic change: deletions, then upserts (validated by the caller)."""
        with self._lock:
            users = {u: dict(m) for u, m in self._users.items()}
            for user, mech in deletions:
                users.get(user, {}).pop(mech, None)
            for user, mech, cred in upserts:
                users.setdefault(user, {})[mech] = cred
            self._users = {u: m for u, m in users.items() if m}
            _write_atomic(
                self._path,
                {
                    u: {m: _cred_to_json(c) for m, c in mechs.items()}
                    for u, mechs in self._users.items()
                },
            )
