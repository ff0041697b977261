"""Broker security: TLS listeners, SASL (PLAIN, SCRAM-SHA-256/512) and ACL authorization.

Handlers check access with one call, e.g. ``if not allowed(core, ctx, READ, TOPIC, name)``;
without ``authorizer.class.name`` every check passes, as in Kafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from streamrt.broker.security.acls import CLUSTER_NAME, AclOperation, ResourceType

if TYPE_CHECKING:
    from streamrt.broker.security.manager import BrokerSecurity
    from streamrt.wire.context import RequestContext


class BrokerCore(Protocol):
    """What the checks need of the broker's core (kept structural: core imports security)."""

    @property
    def security(self) -> BrokerSecurity | None: ...


__all__ = (
    "AclOperation",
    "ResourceType",
    "allowed",
    "allowed_cluster",
    "authorized_operations",
    "require",
)

READ, WRITE, CREATE, DELETE = (
    AclOperation.READ,
    AclOperation.WRITE,
    AclOperation.CREATE,
    AclOperation.DELETE,
)
ALTER, DESCRIBE, ALTER_CONFIGS, DESCRIBE_CONFIGS = (
    AclOperation.ALTER,
    AclOperation.DESCRIBE,
    AclOperation.ALTER_CONFIGS,
    AclOperation.DESCRIBE_CONFIGS,
)
IDEMPOTENT_WRITE = AclOperation.IDEMPOTENT_WRITE
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
TRANSACTIONAL_ID = ResourceType.TRANSACTIONAL_ID
#: Kafka's "authorized operations not requested" value (Integer.MIN_VALUE, KIP-430).
NOT_REQUESTED = -(2**31)


def allowed(
    core: BrokerCore, ctx: RequestContext, op: AclOperation, rtype: ResourceType, name: str
) -> bool:
    """May the request's principal do ``op`` on the resource? True without an authorizer."""
    security = core.security
    if security is None:
        return True
    host = ctx.client_host.lstrip("/")
    return bool(security.authorize(ctx.principal, host, op, rtype, name))


def allowed_cluster(core: BrokerCore, ctx: RequestContext, op: AclOperation) -> bool:
    return allowed(core, ctx, op, CLUSTER, CLUSTER_NAME)


def require(
    core: BrokerCore,
    ctx: RequestContext,
    op: AclOperation,
    rtype: ResourceType,
    name: str,
    *,
    or_cluster: bool = False,
) -> None:
    """Raise the API's authorization error (TOPIC_/GROUP_/CLUSTER_AUTHORIZATION_FAILED…).

    ``or_cluster``: the same operation on the cluster also grants it (CREATE of topics).
    """
    if allowed(core, ctx, op, rtype, name):
        return
    if or_cluster and allowed_cluster(core, ctx, op):
        return
    from streamrt.errors import ErrorCode, KafkaError

    code = {
        ResourceType.TOPIC: ErrorCode.topic_authorization_failed,
        ResourceType.GROUP: ErrorCode.group_authorization_failed,
        ResourceType.TRANSACTIONAL_ID: ErrorCode.transactional_id_authorization_failed,
    }.get(rtype, ErrorCode.cluster_authorization_failed)
    raise KafkaError(code, f"{ctx.principal} is not authorized to {op.name} {rtype.name} {name}")


def allowed_on_any(
    core: BrokerCore, ctx: RequestContext, op: AclOperation, rtype: ResourceType
) -> bool:
    """Is there any resource of this type the principal may ``op``? (KIP-679's idempotent write)."""
    security = core.security
    if security is None or security.authorizer is None:
        return True
    return bool(
        security.authorizer.authorize_any(ctx.principal, ctx.client_host.lstrip("/"), op, rtype)
    )


def authorized_operations(
    core: BrokerCore, ctx: RequestContext, rtype: ResourceType, name: str, requested: bool = True
) -> int:
    """KIP-430's ``authorized_operations`` field as Kafka's ``AuthHelper.authorizedOperations``:
    the bits of the supported operations the principal may do; every supported one without an
    authorizer; ``NOT_REQUESTED`` when the request did not ask."""
    from streamrt.broker.security.authorizer import SUPPORTED_OPERATIONS, operations_bits

    if not requested:
        return NOT_REQUESTED
    security = core.security
    if security is None or security.authorizer is None:
        return operations_bits(SUPPORTED_OPERATIONS.get(rtype, ()))
    host = ctx.client_host.lstrip("/")
    return security.authorizer.authorized_operations(ctx.principal, host, rtype, name)
