"""Broker security: TLS listeners, SASL (PLAIN, SCRAM-SHA-256/512) and ACL authorization.

Handlers check access with one call, e.g. ``if not allowed(core, ctx, READ, TOPIC, name)``;
without ``authorizer.class.name`` every check passes, as in Kafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamrt.broker.security.acls import CLUSTER_NAME, AclOperation, ResourceType

if TYPE_CHECKING:
    from streamrt.broker.core import BrokerCore
    from streamrt.wire.context import RequestContext

__all__ = ("AclOperation", "ResourceType", "allowed", "allowed_cluster")

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


def allowed(
    core: BrokerCore, ctx: RequestContext, op: AclOperation, rtype: ResourceType, name: str
) -> bool:
    """May the request's principal do ``op`` on the resource? True without an authorizer."""
    security = getattr(core, "security", None)
    if security is None:
        return True
    host = ctx.client_host.lstrip("/")
    return bool(security.authorize(ctx.principal, host, op, rtype, name))


def allowed_cluster(core: BrokerCore, ctx: RequestContext, op: AclOperation) -> bool:
    return allowed(core, ctx, op, CLUSTER, CLUSTER_NAME)
