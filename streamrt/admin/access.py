"""ACLs (Create/Describe/DeleteAcls) and SCRAM users (Describe/AlterUserScramCredentials).

The calls behind ``streamrt acls …`` and ``streamrt users …``; they run on any broker
connection the :class:`~streamrt.admin.cluster.Cluster` gives (the controller for users). The
enums carry Kafka's wire ids (``AclOperation``, ``ResourceType``...), spelled as
``kafka-acls.sh`` prints them.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Sequence
from typing import Any

from streamrt.admin.cluster import Cluster, check
from streamrt.errors import ErrorCode, KafkaError
from streamrt.security.scram import mechanism, salted_password
from streamrt.wire.acl_codes import AclOperation, PatternType, Permission, ResourceType
from streamrt.wire.api_keys import ApiKey

__all__ = (
    "AclBinding",
    "AclOperation",
    "PatternType",
    "Permission",
    "ResourceType",
    "ScramCredentialInfo",
    "alter_scram_users",
    "create_acls",
    "delete_acls",
    "describe_acls",
    "describe_scram_users",
)

CREATE_ACLS, DESCRIBE_ACLS, DELETE_ACLS = (
    ApiKey.CREATE_ACLS,
    ApiKey.DESCRIBE_ACLS,
    ApiKey.DELETE_ACLS,
)
DESCRIBE_USER_SCRAM = ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS
ALTER_USER_SCRAM = ApiKey.ALTER_USER_SCRAM_CREDENTIALS
DEFAULT_ITERATIONS = 8192


@dataclasses.dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL; as a filter (describe/delete) ``None`` names and ``ANY`` enums match all."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission: Permission

    def to_json(self) -> dict[str, str | None]:
        return {
            "resource_type": self.resource_type.name,
            "resource_name": self.resource_name,
            "pattern_type": self.pattern_type.name,
            "principal": self.principal,
            "host": self.host,
            "operation": self.operation.name,
            "permission": self.permission.name,
        }


@dataclasses.dataclass(frozen=True, slots=True)
class ScramCredentialInfo:
    mechanism: str
    iterations: int


def _error(code: int, message: str | None) -> KafkaError | None:
    err = ErrorCode(int(code))
    return None if err == ErrorCode.none else KafkaError(err, message or err.name.upper())


async def create_acls(cluster: Cluster, bindings: Sequence[AclBinding]) -> list[KafkaError | None]:
    """One CreateAcls; a result per binding, in order."""

    async def attempt() -> list[KafkaError | None]:
        conn = await cluster.any_broker()
        response = await conn.call(
            CREATE_ACLS,
            min_version=1,
            creations=[
                {
                    "resource_type": b.resource_type,
                    "resource_name": b.resource_name,
                    "resource_pattern_type": b.pattern_type,
                    "principal": b.principal,
                    "host": b.host or "*",
                    "operation": b.operation,
                    "permission_type": b.permission,
                }
                for b in bindings
            ],
        )
        return [_error(r.error_code, r.error_message) for r in response.results]

    return await cluster.retrying("CreateAcls", attempt)


def _filter_fields(f: AclBinding) -> dict[str, Any]:
    return {
        "resource_type_filter": f.resource_type,
        "resource_name_filter": f.resource_name,
        "pattern_type_filter": f.pattern_type,
        "principal_filter": f.principal,
        "host_filter": f.host,
        "operation": f.operation,
        "permission_type": f.permission,
    }


async def describe_acls(cluster: Cluster, f: AclBinding) -> list[AclBinding]:
    """Every ACL the filter matches; raises on an error (e.g. CLUSTER_AUTHORIZATION_FAILED)."""

    async def attempt() -> list[AclBinding]:
        conn = await cluster.any_broker()
        response = await conn.call(DESCRIBE_ACLS, min_version=1, **_filter_fields(f))
        check(response.error_code, "DescribeAcls", response.error_message)
        return [
            AclBinding(
                ResourceType(int(r.resource_type)),
                r.resource_name,
                PatternType(int(r.pattern_type)),
                a.principal,
                a.host,
                AclOperation(int(a.operation)),
                Permission(int(a.permission_type)),
            )
            for r in response.resources
            for a in r.acls
        ]

    return await cluster.retrying("DescribeAcls", attempt)


async def delete_acls(cluster: Cluster, f: AclBinding) -> list[AclBinding]:
    """Delete every ACL the filter matches; returns those deleted."""

    async def attempt() -> list[AclBinding]:
        conn = await cluster.any_broker()
        response = await conn.call(DELETE_ACLS, min_version=1, filters=[_filter_fields(f)])
        (result,) = response.filter_results
        check(result.error_code, "DeleteAcls", result.error_message)
        return [
            AclBinding(
                ResourceType(int(m.resource_type)),
                m.resource_name,
                PatternType(int(m.pattern_type)),
                m.principal,
                m.host,
                AclOperation(int(m.operation)),
                Permission(int(m.permission_type)),
            )
            for m in result.matching_acls
        ]

    return await cluster.retrying("DeleteAcls", attempt)


async def describe_scram_users(
    cluster: Cluster, users: Sequence[str] | None = None
) -> dict[str, list[ScramCredentialInfo] | KafkaError]:
    """User → its SCRAM mechanisms and iterations (never secrets), or the error for it."""

    async def attempt() -> dict[str, list[ScramCredentialInfo] | KafkaError]:
        conn = await cluster.any_broker()
        names = None if users is None else [{"name": u} for u in users]
        response = await conn.call(DESCRIBE_USER_SCRAM, users=names)
        check(response.error_code, "DescribeUserScramCredentials", response.error_message)
        out: dict[str, list[ScramCredentialInfo] | KafkaError] = {}
        for r in response.results:
            error = _error(r.error_code, r.error_message)
            out[r.user] = error or [
                ScramCredentialInfo(mechanism(int(c.mechanism)).name, int(c.iterations))
                for c in r.credential_infos
            ]
        return out

    return await cluster.retrying("DescribeUserScramCredentials", attempt)


async def alter_scram_users(
    cluster: Cluster,
    *,
    upsert: Sequence[tuple[str, str, str, int]] = (),
    delete: Sequence[tuple[str, str]] = (),
) -> dict[str, KafkaError | None]:
    """Upsert (user, mechanism, password, iterations) and delete (user, mechanism) in one
    AlterUserScramCredentials; the password is salted and hashed here, never sent."""
    upsertions = []
    for user, mech_name, password, iterations in upsert:
        mech = mechanism(mech_name)
        salt = secrets.token_bytes(32)
        upsertions.append(
            {
                "name": user,
                "mechanism": mech.kafka_type,
                "iterations": iterations,
                "salt": salt,
                "salted_password": salted_password(mech, password, salt, iterations),
            }
        )
    deletions = [{"name": u, "mechanism": mechanism(m).kafka_type} for u, m in delete]

    async def attempt() -> dict[str, KafkaError | None]:
        conn = await cluster.controller()
        response = await conn.call(ALTER_USER_SCRAM, deletions=deletions, upsertions=upsertions)
        return {r.user: _error(r.error_code, r.error_message) for r in response.results}

    return await cluster.retrying("AlterUserScramCredentials", attempt)
