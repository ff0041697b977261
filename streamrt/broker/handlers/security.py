"""SASL (SaslHandshake, SaslAuthenticate), ACL (Create/Describe/DeleteAcls) and SCRAM credential
(KIP-554 Describe/AlterUserScramCredentials) APIs: decode, check access, call the stores."""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import Any

from streamrt.broker.core import ApiTable, BrokerCore, respond
from streamrt.broker.security import ALTER, DESCRIBE, allowed_cluster
from streamrt.broker.security.acls import (
    AclBinding,
    AclFilter,
    AclOperation,
    PatternType,
    Permission,
    ResourceType,
    validate_binding,
)
from streamrt.broker.security.sasl import SaslFailure
from streamrt.errors import ErrorCode
from streamrt.security.scram import (
    MAX_ITERATIONS,
    MECHANISMS,
    ScramError,
    credential_from_salted_password,
    mechanism,
)
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.context import RequestContext

__all__ = ("register",)

logger = logging.getLogger(__name__)

_NO_AUTHORIZER = "No Authorizer is configured on the broker"


def register(table: ApiTable, core: BrokerCore) -> None:
    table.register(ApiKey.SASL_HANDSHAKE, 0, 1, sasl_handshake)
    table.register(ApiKey.SASL_AUTHENTICATE, 0, 2, sasl_authenticate)
    table.register(ApiKey.DESCRIBE_ACLS, 1, 3, describe_acls)
    table.register(ApiKey.CREATE_ACLS, 1, 3, create_acls)
    table.register(ApiKey.DELETE_ACLS, 1, 3, delete_acls)
    table.register(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0, describe_user_scram_credentials)
    table.register(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0, alter_user_scram_credentials)


# -- SASL ------------------------------------------------------------------------------------


async def sasl_handshake(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    auth = ctx.auth
    if auth is None or not auth.uses_sasl or auth.state != "handshake":
        return respond(ctx, error_code=ErrorCode.illegal_sasl_state, mechanisms=[])
    if not auth.handshake(req.mechanism, ctx.api_version):
        logger.info("SASL mechanism %r not enabled on %s", req.mechanism, auth.listener)
        return respond(
            ctx, error_code=ErrorCode.unsupported_sasl_mechanism, mechanisms=auth.mechanisms
        )
    return respond(ctx, error_code=ErrorCode.none, mechanisms=auth.mechanisms)


async def sasl_authenticate(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    auth = ctx.auth
    if auth is None or not auth.uses_sasl or auth.state != "authenticate":
        if auth is not None:
            auth.closing = auth.uses_sasl
        return respond(
            ctx,
            error_code=ErrorCode.illegal_sasl_state,
            error_message="SaslAuthenticate is only valid right after SaslHandshake",
            auth_bytes=b"",
            session_lifetime=0,
        )
    try:
        # PLAIN checks a password with PBKDF2 (milliseconds): off the event loop.
        token = await asyncio.to_thread(auth.authenticate, bytes(req.auth_bytes))
    except SaslFailure as exc:
        logger.info(
            "SASL authentication failed on %s from %s: %s", auth.listener, ctx.client_host, exc
        )
        # Kafka's connection.failed.authentication.delay.ms: slows password guessing.
        await asyncio.sleep(int(core.config["connection.failed.authentication.delay.ms"]) / 1000)
        return respond(
            ctx,
            error_code=ErrorCode.sasl_authentication_failed,
            error_message=str(exc),
            auth_bytes=b"",
            session_lifetime=0,
        )
    return respond(ctx, error_code=0, error_message=None, auth_bytes=token, session_lifetime=0)


# -- ACLs ------------------------------------------------------------------------------------


def _authorizer_on(core: BrokerCore) -> bool:
    return core.security is not None and core.security.authorizer is not None


def _filter(f: Any) -> AclFilter:
    return AclFilter(
        resource_type=ResourceType(int(f.resource_type_filter)),
        resource_name=f.resource_name_filter,
        pattern_type=PatternType(int(f.pattern_type_filter)),
        principal=f.principal_filter,
        host=f.host_filter,
        operation=AclOperation(int(f.operation)),
        permission=Permission(int(f.permission_type)),
    )


async def describe_acls(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    def error(code: ErrorCode, message: str) -> Any:
        return respond(ctx, throttle_time=0, error_code=code, error_message=message, resources=[])

    if not _authorizer_on(core):
        return error(ErrorCode.security_disabled, _NO_AUTHORIZER)
    if not allowed_cluster(core, ctx, DESCRIBE):
        return error(ErrorCode.cluster_authorization_failed, "DESCRIBE on the cluster is needed")
    try:
        flt = _filter(req)
    except ValueError as exc:
        return error(ErrorCode.invalid_request, str(exc))
    if (why := flt.invalid()) is not None:
        return error(ErrorCode.invalid_request, why)
    assert core.security is not None
    by_resource: dict[tuple[int, str, int], list[AclBinding]] = collections.defaultdict(list)
    for b in core.security.acls.describe(flt):
        by_resource[(b.resource_type, b.resource_name, b.pattern_type)].append(b)
    resources = [
        {
            "resource_type": rtype,
            "resource_name": name,
            "pattern_type": ptype,
            "acls": [
                {
                    "principal": b.principal,
                    "host": b.host,
                    "operation": int(b.operation),
                    "permission_type": int(b.permission),
                }
                for b in bindings
            ],
        }
        for (rtype, name, ptype), bindings in by_resource.items()
    ]
    return respond(ctx, throttle_time=0, error_code=0, error_message=None, resources=resources)


async def create_acls(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    def all_fail(code: ErrorCode, message: str) -> Any:
        results = [{"error_code": code, "error_message": message} for _ in req.creations]
        return respond(ctx, throttle_time=0, results=results)

    if not _authorizer_on(core):
        return all_fail(ErrorCode.security_disabled, _NO_AUTHORIZER)
    if not allowed_cluster(core, ctx, ALTER):
        return all_fail(ErrorCode.cluster_authorization_failed, "ALTER on the cluster is needed")
    assert core.security is not None
    results: list[dict[str, Any]] = []
    valid: list[AclBinding] = []
    for c in req.creations:
        try:
            binding = AclBinding(
                ResourceType(int(c.resource_type)),
                c.resource_name,
                PatternType(int(c.resource_pattern_type)),
                c.principal,
                c.host,
                AclOperation(int(c.operation)),
                Permission(int(c.permission_type)),
            )
            why = validate_binding(binding)
        except ValueError as exc:
            why = str(exc)
        if why is not None:
            results.append({"error_code": ErrorCode.invalid_request, "error_message": why})
            continue
        valid.append(binding)
        results.append({"error_code": 0, "error_message": None})
    core.security.acls.add(valid)
    for b in valid:
        logger.info("ACL added: %s", b.to_json())
    return respond(ctx, throttle_time=0, results=results)


async def delete_acls(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    def all_fail(code: ErrorCode, message: str) -> Any:
        results = [
            {"error_code": code, "error_message": message, "matching_acls": []} for _ in req.filters
        ]
        return respond(ctx, throttle_time=0, filter_results=results)

    if not _authorizer_on(core):
        return all_fail(ErrorCode.security_disabled, _NO_AUTHORIZER)
    if not allowed_cluster(core, ctx, ALTER):
        return all_fail(ErrorCode.cluster_authorization_failed, "ALTER on the cluster is needed")
    assert core.security is not None
    filters: list[AclFilter | str] = []
    for f in req.filters:
        try:
            flt = _filter(f)
            why = flt.invalid()
            filters.append(flt if why is None else why)
        except ValueError as exc:
            filters.append(str(exc))
    removed = iter(core.security.acls.delete([f for f in filters if isinstance(f, AclFilter)]))
    results = []
    for f in filters:
        if isinstance(f, str):
            results.append(
                {"error_code": ErrorCode.invalid_request, "error_message": f, "matching_acls": []}
            )
            continue
        matching = [
            {
                "error_code": 0,
                "error_message": None,
                "resource_type": int(b.resource_type),
                "resource_name": b.resource_name,
                "pattern_type": int(b.pattern_type),
                "principal": b.principal,
                "host": b.host,
                "operation": int(b.operation),
                "permission_type": int(b.permission),
            }
            for b in next(removed)
        ]
        results.append({"error_code": 0, "error_message": None, "matching_acls": matching})
    return respond(ctx, throttle_time=0, filter_results=results)


# -- SCRAM credentials (KIP-554) ---------------------------------------------------------------


async def describe_user_scram_credentials(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    if not allowed_cluster(core, ctx, DESCRIBE):
        return respond(
            ctx,
            throttle_time=0,
            error_code=ErrorCode.cluster_authorization_failed,
            error_message="DESCRIBE on the cluster is needed",
            results=[],
        )
    assert core.security is not None
    users = core.security.credentials.users()
    wanted = [u.name for u in req.users] if req.users else sorted(users)
    counts = collections.Counter(wanted)
    results = []
    for name in dict.fromkeys(wanted):
        result: dict[str, Any] = {
            "user": name,
            "error_code": 0,
            "error_message": None,
            "credential_infos": [],
        }
        if counts[name] > 1:
            result.update(
                error_code=ErrorCode.duplicate_resource,
                error_message="Cannot describe SCRAM credentials for the same user twice in a "
                "single request",
            )
        elif name not in users:
            result.update(
                error_code=ErrorCode.resource_not_found,
                error_message="Attempt to describe a user credential that does not exist",
            )
        else:
            result["credential_infos"] = [
                {"mechanism": MECHANISMS[m].kafka_type, "iterations": c.iterations}
                for m, c in sorted(users[name].items())
            ]
        results.append(result)
    return respond(ctx, throttle_time=0, error_code=0, error_message=None, results=results)


def _check_alteration(name: str, mech_type: int, iterations: int | None) -> tuple[ErrorCode, str]:
    if not name:
        return ErrorCode.unacceptable_credential, "Username must not be empty"
    try:
        mech = mechanism(int(mech_type))
    except ScramError:
        return ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"
    if iterations is not None and iterations < mech.min_iterations:
        return ErrorCode.unacceptable_credential, "Too few iterations"
    if iterations is not None and iterations > MAX_ITERATIONS:
        return ErrorCode.unacceptable_credential, "Too many iterations"
    return ErrorCode.none, ""


async def alter_user_scram_credentials(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    """Each user's changes apply only if all of that user's are valid (Kafka's rule)."""
    users = list(dict.fromkeys([d.name for d in req.deletions] + [u.name for u in req.upsertions]))
    if not allowed_cluster(core, ctx, ALTER):
        refusal = (ErrorCode.cluster_authorization_failed, "ALTER on the cluster is needed")
        return _scram_results(ctx, users, dict.fromkeys(users, refusal))
    assert core.security is not None
    store = core.security.credentials
    errors: dict[str, tuple[ErrorCode, str]] = {}
    for user, error in (
        *_duplicates(req),
        *_deletion_errors(store, req.deletions),
        *_upsertion_errors(req.upsertions),
    ):
        errors.setdefault(user, error)
    deletions = [
        (d.name, mechanism(int(d.mechanism)).name) for d in req.deletions if d.name not in errors
    ]
    upserts = [
        (u.name, mech.name, _credential(mech, u))
        for u in req.upsertions
        if u.name not in errors and (mech := mechanism(int(u.mechanism)))
    ]
    if deletions or upserts:
        store.apply(upserts, deletions)
        logger.info(
            "SCRAM credentials altered by %s: upserted %s, deleted %s",
            ctx.principal,
            [(n, m) for n, m, _ in upserts],
            deletions,
        )
    return _scram_results(ctx, users, errors)


_Errors = list[tuple[str, tuple[ErrorCode, str]]]


def _duplicates(req: Any) -> _Errors:
    pairs = collections.Counter(
        [(d.name, int(d.mechanism)) for d in req.deletions]
        + [(u.name, int(u.mechanism)) for u in req.upsertions]
    )
    message = "A user credential cannot be altered twice in the same request"
    return [
        (user, (ErrorCode.duplicate_resource, message)) for (user, _m), n in pairs.items() if n > 1
    ]


def _deletion_errors(store: Any, deletions: Any) -> _Errors:
    out: _Errors = []
    for d in deletions:
        code, msg = _check_alteration(d.name, d.mechanism, None)
        if code == ErrorCode.none and store.get(d.name, mechanism(int(d.mechanism)).name) is None:
            code = ErrorCode.resource_not_found
            msg = "Attempt to delete a user credential that does not exist"
        if code != ErrorCode.none:
            out.append((d.name, (code, msg)))
    return out


def _upsertion_errors(upsertions: Any) -> _Errors:
    out: _Errors = []
    for u in upsertions:
        code, msg = _check_alteration(u.name, u.mechanism, int(u.iterations))
        if code == ErrorCode.none:
            mech = mechanism(int(u.mechanism))
            if not u.salt or len(u.salted_password) != mech.digest_size:
                code, msg = ErrorCode.unacceptable_credential, "Invalid salt or salted password"
        if code != ErrorCode.none:
            out.append((u.name, (code, msg)))
    return out


def _credential(mech: Any, u: Any) -> Any:
    return credential_from_salted_password(
        mech, bytes(u.salted_password), bytes(u.salt), int(u.iterations)
    )


def _scram_results(
    ctx: RequestContext, users: list[str], errors: dict[str, tuple[ErrorCode, str]]
) -> Any:
    results = [
        {
            "user": u,
            "error_code": errors[u][0] if u in errors else ErrorCode.none,
            "error_message": errors[u][1] if u in errors else None,
        }
        for u in users
    ]
    return respond(ctx, throttle_time=0, results=results)
