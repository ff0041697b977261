"""SASL/PLAIN does not tell which user names exist: a wrong password for a known user and any
password for an unknown one cost the same PBKDF2, and a failure waits
``connection.failed.authentication.delay.ms`` before it is answered."""

from __future__ import annotations

import asyncio
import time

from streamrt.admin.connection import BrokerConnection
from streamrt.admin.security import AdminSecurity
from streamrt.broker.embedded import BrokerThread
from streamrt.client_config import SaslCredentials
from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from tests.security.conftest import _users, address, secure_overrides


async def _authenticate_seconds(bootstrap: str, user: str, password: str) -> float:
    """The SaslAuthenticate round trip alone (after ApiVersions and SaslHandshake)."""
    host, port = bootstrap.rsplit(":", 1)
    conn = await BrokerConnection.open(host, int(port))
    try:
        handshake = await conn.call(
            ApiKey.SASL_HANDSHAKE, min_version=1, max_version=1, mechanism="PLAIN"
        )
        assert handshake.error_code == 0
        token = b"\0" + user.encode() + b"\0" + password.encode()
        started = time.perf_counter()
        resp = await conn.call(ApiKey.SASL_AUTHENTICATE, auth_bytes=token)
        elapsed = time.perf_counter() - started
        assert resp.error_code == ErrorCode.sasl_authentication_failed
        return elapsed
    finally:
        await conn.close()


def _fastest_failure(bootstrap: str, user: str, n: int = 30) -> float:
    """The minimum over ``n`` tries: the check's own cost, least disturbed by a busy machine."""
    return _fastest_failures(bootstrap, (user,), n)[user]


def _fastest_failures(bootstrap: str, users: tuple[str, ...], n: int = 40) -> dict[str, float]:
    """Each user's fastest of ``n`` failed tries, the users taking turns: a busy spell of the
    machine falls on all of them alike, not on whichever was measured second."""

    async def run() -> dict[str, float]:
        fastest = dict.fromkeys(users, float("inf"))
        for _ in range(n):
            for user in users:
                took = await _authenticate_seconds(bootstrap, user, "wrong-password")
                fastest[user] = min(fastest[user], took)
        return fastest

    return asyncio.run(run())


def _same_cost(known: float, unknown: float) -> bool:
    """Within 2x either way: measured 0.8-1.1x; a missing dummy PBKDF2 gives 0.2-0.35x (or, for
    a JAAS user checked without it, 3-5x), far outside."""
    return 0.5 < unknown / known < 2.0


def test_unknown_user_costs_the_same_as_a_wrong_password(pki, tmp_path) -> None:
    """The fastest failed SaslAuthenticate for an unknown user is close to a known one's
    (0.8-1.1x measured); without the dummy PBKDF2 it took 0.2-0.35x (0.24 ms vs 1.2 ms)."""
    _users(tmp_path)  # alice's SCRAM credentials: 4096 iterations, as Kafka's default
    overrides = secure_overrides(pki, **{"connection.failed.authentication.delay.ms": "0"})
    with BrokerThread(tmp_path, overrides) as broker:
        bootstrap = address(broker, "SASL_PLAINTEXT")
        _fastest_failures(bootstrap, ("alice", "nobody-here"), 3)  # warm up
        fastest = _fastest_failures(bootstrap, ("alice", "nobody-here"))
    known, unknown = fastest["alice"], fastest["nobody-here"]
    assert _same_cost(known, unknown), (known, unknown)


def test_failed_login_is_delayed(secure_broker) -> None:
    """Kafka's default connection.failed.authentication.delay.ms (100 ms) slows guessing."""
    bootstrap = address(secure_broker, "SASL_PLAINTEXT")
    assert _fastest_failure(bootstrap, "alice", 3) >= 0.1


def test_jaas_users_log_in_and_cost_the_same(pki, tmp_path) -> None:
    """A listener's JAAS ``user_*`` entry logs in with PLAIN; its failures cost what an unknown
    user's do (the dummy PBKDF2 runs for both), so JAAS user names do not show either."""
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_carol="carol-pw";'
    overrides = secure_overrides(
        pki,
        **{
            "connection.failed.authentication.delay.ms": "0",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
        },
    )
    with BrokerThread(tmp_path, overrides) as broker:
        bootstrap = address(broker, "SASL_PLAINTEXT")
        host, port = bootstrap.rsplit(":", 1)

        async def login() -> None:
            creds = SaslCredentials("PLAIN", "carol", "carol-pw")
            conn = await BrokerConnection.open(host, int(port), security=AdminSecurity(sasl=creds))
            await conn.close()

        asyncio.run(login())
        _fastest_failures(bootstrap, ("carol", "nobody-here"), 3)  # warm up
        fastest = _fastest_failures(bootstrap, ("carol", "nobody-here"))
    known, unknown = fastest["carol"], fastest["nobody-here"]
    assert _same_cost(known, unknown), (known, unknown)
