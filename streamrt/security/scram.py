"""SCRAM-SHA-256/512 (RFC 5802, RFC 7677) as Apache Kafka implements it.

Pure functions and two small state machines (client and server), no I/O. Kafka specifics:
only the ``n`` GS2 flag (no channel binding), a minimum of 4096 iterations, usernames encoded
as RFC 5802 ``saslname`` (``=2C`` for ``,`` and ``=3D`` for ``=``), and client-first-message
extensions (``tokenauth=true`` marks a delegation-token login; unknown extensions are ignored).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable

__all__ = (
    "MECHANISMS",
    "ScramClient",
    "ScramCredential",
    "ScramError",
    "ScramMechanism",
    "ScramServer",
    "credential_from_password",
    "credential_from_salted_password",
    "decode_sasl_name",
    "encode_sasl_name",
    "mechanism",
    "salted_password",
    "verify_password",
)

MAX_ITERATIONS = 16384  # KIP-554's upper bound for AlterUserScramCredentials


class ScramError(Exception):
    """The exchange failed; the message is safe to show an unauthenticated client."""


@dataclasses.dataclass(frozen=True, slots=True)
class ScramMechanism:
    name: str
    hash_name: str
    kafka_type: int  # ScramMechanism id in KIP-554 requests: 1 = SHA-256, 2 = SHA-512
    min_iterations: int = 4096

    @property
    def digest_size(self) -> int:
        return hashlib.new(self.hash_name).digest_size


MECHANISMS: dict[str, ScramMechanism] = {
    "SCRAM-SHA-256": ScramMechanism("SCRAM-SHA-256", "sha256", 1),
    "SCRAM-SHA-512": ScramMechanism("SCRAM-SHA-512", "sha512", 2),
}


def mechanism(name_or_type: str | int) -> ScramMechanism:
    for m in MECHANISMS.values():
        if name_or_type in (m.name, m.kafka_type):
            return m
    raise ScramError(f"unsupported SCRAM mechanism {name_or_type!r}")


@dataclasses.dataclass(frozen=True, slots=True)
class ScramCredential:
    """What a server keeps per user and mechanism (never the password)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def salted_password(mech: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(mech.hash_name, password.encode(), salt, iterations)


def _hmac(mech: ScramMechanism, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, mech.hash_name).digest()


def _h(mech: ScramMechanism, data: bytes) -> bytes:
    return hashlib.new(mech.hash_name, data).digest()


def credential_from_salted_password(
    mech: ScramMechanism, salted: bytes, salt: bytes, iterations: int
) -> ScramCredential:
    client_key = _hmac(mech, salted, b"Client Key")
    return ScramCredential(
        salt=salt,
        stored_key=_h(mech, client_key),
        server_key=_hmac(mech, salted, b"Server Key"),
        iterations=iterations,
    )


def credential_from_password(
    mech: ScramMechanism, password: str, *, iterations: int = 4096, salt: bytes | None = None
) -> ScramCredential:
    salt = salt if salt is not None else secrets.token_bytes(32)
    return credential_from_salted_password(
        mech, salted_password(mech, password, salt, iterations), salt, iterations
    )


def verify_password(mech: ScramMechanism, cred: ScramCredential, password: str) -> bool:
    """Does ``password`` produce this credential? (Used to check SASL/PLAIN against SCRAM.)"""
    candidate = credential_from_password(mech, password, iterations=cred.iterations, salt=cred.salt)
    return hmac.compare_digest(candidate.stored_key, cred.stored_key)


def encode_sasl_name(username: str) -> str:
    return username.replace("=", "=3D").replace(",", "=2C")


def decode_sasl_name(sasl_name: str) -> str:
    if re.search(r"=(?!2C|3D)", sasl_name):
        raise ScramError("invalid username encoding")
    return sasl_name.replace("=2C", ",").replace("=3D", "=")


_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"  # printable ASCII except ','
_CLIENT_FIRST = re.compile(
    r"n,(?:a=(?P<authzid>[^,]*))?,"
    r"(?P<bare>n=(?P<saslname>[^,]+),r=(?P<nonce>" + _PRINTABLE + r")"
    r"(?P<extensions>(?:,[A-Za-z0-9]+=[^,]*)*))$"
)
_CLIENT_FINAL = re.compile(
    r"(?P<without_proof>c=(?P<channel>[A-Za-z0-9+/=]+),r=(?P<nonce>"
    + _PRINTABLE
    + r")(?:,[A-Za-z]=[^,]*)*),p=(?P<proof>[A-Za-z0-9+/=]+)$"
)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _attrs(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise ScramError(f"malformed SCRAM message part {part!r}")
        out.setdefault(part[0], part[2:])
    return out


class ScramServer:
    """The server side of one exchange: ``evaluate(client_first)`` then ``evaluate(client_final)``.

    ``lookup(username)`` returns the user's credential for this mechanism or None. A
    ``tokenauth=true`` extension asks for delegation-token authentication, which this broker
    does not issue tokens for, so such a login fails as Kafka's does for an unknown token id.
    """

    def __init__(
        self, mech: ScramMechanism, lookup: Callable[[str], ScramCredential | None]
    ) -> None:
        self.mechanism = mech
        self._lookup = lookup
        self._state = "first"
        self._client_first_bare = ""
        self._server_first = ""
        self._gs2_header = ""
        self._nonce = ""
        self._cred: ScramCredential | None = None
        self.authorization_id: str | None = None
        self.extensions: dict[str, str] = {}

    @property
    def complete(self) -> bool:
        return self._state == "complete"

    def _fail(self, message: str | None = None) -> ScramError:
        self._state = "failed"
        self._cred = None
        return ScramError(
            message
            or "Authentication failed during authentication due to invalid credentials with "
            f"SASL mechanism {self.mechanism.name}"
        )

    def evaluate(self, response: bytes) -> bytes:
        if self._state == "first":
            return self._first(response)
        if self._state == "final":
            return self._final(response)
        raise self._fail(f"unexpected SASL token in state {self._state}")

    def _first(self, response: bytes) -> bytes:
        try:
            text = response.decode()
        except UnicodeDecodeError:
            raise self._fail() from None
        m = _CLIENT_FIRST.match(text)
        if m is None:
            raise self._fail()
        try:
            username = decode_sasl_name(m["saslname"])
        except ScramError:
            raise self._fail() from None
        self.extensions = dict(
            e.split("=", 1) for e in m["extensions"].split(",") if e and "=" in e
        )
        if self.extensions.get("tokenauth", "").lower() == "true":
            raise self._fail(f"Token Authentication failed: Invalid tokenId : {username}")
        cred = self._lookup(username)
        if cred is None:
            raise self._fail()
        authzid = m["authzid"] or ""
        if authzid and authzid != username:
            raise self._fail(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        if cred.iterations < self.mechanism.min_iterations:
            raise self._fail()
        self._cred = cred
        self._gs2_header = text[: m.start("bare")]
        self._client_first_bare = m["bare"]
        self._nonce = m["nonce"] + secrets.token_urlsafe(24)
        self._server_first = f"r={self._nonce},s={_b64(cred.salt)},i={cred.iterations}"
        self.authorization_id = username
        self._state = "final"
        return self._server_first.encode()

    def _final(self, response: bytes) -> bytes:
        assert self._cred is not None
        m = _CLIENT_FINAL.match(response.decode(errors="replace"))
        if m is None or m["nonce"] != self._nonce:
            raise self._fail()
        if m["channel"] != _b64(self._gs2_header.encode()):
            raise self._fail()
        auth_message = ",".join(
            (self._client_first_bare, self._server_first, m["without_proof"])
        ).encode()
        client_signature = _hmac(self.mechanism, self._cred.stored_key, auth_message)
        proof = base64.b64decode(m["proof"])
        if len(proof) != len(client_signature):
            raise self._fail()
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        if not hmac.compare_digest(_h(self.mechanism, client_key), self._cred.stored_key):
            raise self._fail()
        server_signature = _hmac(self.mechanism, self._cred.server_key, auth_message)
        self._cred = None
        self._state = "complete"
        return f"v={_b64(server_signature)}".encode()


class ScramClient:
    """The client side: ``first()``, ``final(server_first)``, ``verify(server_final)``."""

    def __init__(self, mech: ScramMechanism, username: str, password: str) -> None:
        self.mechanism = mech
        self._password = password
        self._nonce = secrets.token_urlsafe(24)
        self._bare = f"n={encode_sasl_name(username)},r={self._nonce}"
        self._auth_message = b""
        self._salted = b""

    def first(self) -> bytes:
        return f"n,,{self._bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode()
        attrs = _attrs(text)
        if "e" in attrs:
            raise ScramError(f"server rejected the login: {attrs['e']}")
        nonce, salt, iterations = attrs.get("r", ""), attrs.get("s"), int(attrs.get("i", "0"))
        if not nonce.startswith(self._nonce) or salt is None:
            raise ScramError("invalid server-first-message")
        if iterations < self.mechanism.min_iterations:
            raise ScramError(f"server asked for too few iterations ({iterations})")
        self._salted = salted_password(
            self.mechanism, self._password, base64.b64decode(salt), iterations
        )
        without_proof = f"c={_b64(b'n,,')},r={nonce}"
        self._auth_message = f"{self._bare},{text},{without_proof}".encode()
        client_key = _hmac(self.mechanism, self._salted, b"Client Key")
        signature = _hmac(self.mechanism, _h(self.mechanism, client_key), self._auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        return f"{without_proof},p={_b64(proof)}".encode()

    def verify(self, server_final: bytes) -> None:
        attrs = _attrs(server_final.decode())
        if "e" in attrs:
            raise ScramError(f"server rejected the login: {attrs['e']}")
        server_key = _hmac(self.mechanism, self._salted, b"Server Key")
        expected = _hmac(self.mechanism, server_key, self._auth_message)
        if not hmac.compare_digest(base64.b64decode(attrs.get("v", "")), expected):
            raise ScramError("the server's signature does not match: not the real server")
