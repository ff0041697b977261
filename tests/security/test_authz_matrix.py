"""Every API the broker serves, checked against the ACL Apache Kafka requires for it.

For each row of :mod:`tests.security.authz_rows`, a fresh SCRAM user (made with
AlterUserScramCredentials by the super user) is given the row's other ACLs and calls the API
over SASL_PLAINTEXT with raw frames: refused with Kafka's error code. Given the row's ACL
too, the same call passes authorization (other errors, such as an unknown member, may follow).
A new API in the broker's dispatch table without a row fails ``test_every_api_has_a_row``.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from streamrt.admin.connection import BrokerConnection
from streamrt.admin.security import AdminSecurity
from streamrt.client_config import SaslCredentials
from streamrt.security.scram import mechanism, salted_password
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.client_codec import client_codec
from streamrt.wire.codec import build
from tests.security.authz_model import (
    AUTH_ERRORS,
    CLUSTER,
    Names,
    RawError,
    Row,
    batch,
    codes,
)
from tests.security.authz_rows import ROWS
from tests.security.conftest import USERS, address

_PASSWORD = "matrix-secret"


async def _connect(broker: Any, user: str, password: str) -> BrokerConnection:
    host, port = address(broker, "SASL_PLAINTEXT").rsplit(":", 1)
    creds = SaslCredentials("SCRAM-SHA-256", user, password)
    return await BrokerConnection.open(
        host, int(port), security=AdminSecurity(sasl=creds), request_timeout=15
    )


async def _as_admin(broker: Any, action: Callable[[BrokerConnection], Awaitable[Any]]) -> Any:
    conn = await _connect(broker, "admin", USERS["admin"])
    try:
        return await action(conn)
    finally:
        await conn.close()


async def _add_user(conn: BrokerConnection, user: str) -> None:
    mech = mechanism("SCRAM-SHA-256")
    salt = secrets.token_bytes(16)
    resp = await conn.call(
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        deletions=[],
        upsertions=[
            {
                "name": user,
                "mechanism": mech.kafka_type,
                "iterations": 4096,
                "salt": salt,
                "salted_password": salted_password(mech, _PASSWORD, salt, 4096),
            }
        ],
    )
    assert all(r.error_code == 0 for r in resp.results), resp


async def _grant(conn: BrokerConnection, user: str, grants: list[tuple[Any, Any, str]]) -> None:
    if not grants:
        return
    creations = [
        {
            "resource_type": rtype,
            "resource_name": name,
            "resource_pattern_type": 3,  # LITERAL
            "principal": f"User:{user}",
            "host": "*",
            "operation": op,
            "permission_type": 3,  # ALLOW
        }
        for rtype, op, name in grants
    ]
    resp = await conn.call(ApiKey.CREATE_ACLS, creations=creations)
    assert all(r.error_code == 0 for r in resp.results), resp


async def _prepare(conn: BrokerConnection, row: Row, n: Names) -> None:
    """The row's topic (one partition, one record), and the group or transaction it lists."""
    created = await conn.call(
        ApiKey.CREATE_TOPICS,
        topics=[
            {
                "name": n.topic,
                "num_partitions": 1,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
        timeout=5000,
        validate_only=False,
    )
    assert codes(created) == {0}, created
    data = [{"name": n.topic, "partition_data": [{"index": 0, "records": batch()}]}]
    await conn.call(ApiKey.PRODUCE, transactional_id=None, acks=-1, timeout=5000, topic_data=data)
    if row.setup == "group":
        resp = await conn.call(
            ApiKey.OFFSET_COMMIT,
            group_id=n.group,
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            topics=[
                {
                    "name": n.topic,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 0,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                    ],
                }
            ],
        )
        assert codes(resp) == {0}, resp
    if row.setup == "txn":
        resp = await conn.call(
            ApiKey.INIT_PRODUCER_ID,
            transactional_id=n.txn,
            transaction_timeout=60000,
            producer_id=-1,
            producer_epoch=-1,
        )
        assert resp.error_code == 0, resp


def _refused(row: Row, resp: Any, n: Names) -> bool:
    if row.refused is not None:
        return row.refused(resp, n)
    return int(row.error) in codes(resp)  # type: ignore[arg-type]


async def _check(broker: Any, row: Row, slug: str) -> None:
    n = Names(topic=f"mx-{slug}", group=f"mg-{slug}", txn=f"mt-{slug}")
    user = f"mu-{slug}"

    async def setup(conn: BrokerConnection) -> None:
        await _add_user(conn, user)
        await _prepare(conn, row, n)
        await _grant(conn, user, [(r, op, n.of(r)) for r, op in row.given])

    await _as_admin(broker, setup)
    assert row.request is not None
    conn = await _connect(broker, user, _PASSWORD)
    try:

        async def call() -> Any:
            assert row.request is not None
            if row.raw_error_at is None:
                return await conn.call(row.api, max_version=row.max_version, **row.request(n))
            at = row.raw_error_at
            codec = client_codec(row.api, conn.version_for(row.api, max_version=row.max_version))
            request = build(codec.request_cls, **row.request(n))
            return await conn.send(
                codec, request, lambda p: RawError(int.from_bytes(p[at : at + 2], "big"))
            )

        if row.rtype is None:
            resp = await call()
            assert not codes(resp) & AUTH_ERRORS, f"{row.id}: {resp}"
            return
        denied = await call()
        assert _refused(row, denied, n), f"{row.id} without the ACL: {denied}"
        assert row.op is not None
        await _as_admin(broker, lambda c: _grant(c, user, [(row.rtype, row.op, n.of(row.rtype))]))
        granted = await call()
        assert not _refused(row, granted, n), f"{row.id} with the ACL: {granted}"
        if row.refused is None:
            assert not codes(granted) & AUTH_ERRORS, f"{row.id} with the ACL: {granted}"
    finally:
        await conn.close()


@pytest.mark.parametrize("row", [r for r in ROWS if r.request is not None], ids=lambda r: r.id)
def test_acl_required(acl_broker, row: Row) -> None:
    slug = secrets.token_hex(4)
    asyncio.run(_check(acl_broker, row, slug))


def test_every_api_has_a_row(acl_broker) -> None:
    """The dispatch table (as ApiVersions advertises it) and the matrix name the same APIs."""
    served = asyncio.run(_as_admin(acl_broker, lambda c: _versions(c)))
    assert served == {int(r.api) for r in ROWS}


async def _versions(conn: BrokerConnection) -> set[int]:
    return set(conn.broker_versions)


def test_cluster_rows_name_the_cluster() -> None:
    assert all(
        Names("t", "g", "x").of(r.rtype) == "kafka-cluster" for r in ROWS if r.rtype == CLUSTER
    )
