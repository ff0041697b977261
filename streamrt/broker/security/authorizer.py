"""Kafka's ACL authorization rules as a pure function of the bindings (StandardAuthorizer's).

1. A super user (``super.users=User:admin;User:ops``) may do anything.
2. Bindings that apply: resource pattern covers the resource (literal name, ``*``, or prefix),
   principal is the caller or ``User:*``, host is the caller's or ``*``.
3. If any applying binding DENYs the operation (or ALL), the answer is no: DENY wins.
4. If an applying binding ALLOWs it, yes. ALLOW of READ, WRITE, DELETE or ALTER implies
   DESCRIBE; ALLOW of ALTER_CONFIGS implies DESCRIBE_CONFIGS; ALL covers every operation.
5. No binding at all on the resource (for anyone): ``allow.everyone.if.no.acl.found``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from streamrt.broker.security.acls import (
    AclBinding,
    AclOperation,
    Permission,
    ResourceType,
)

__all__ = ("SUPPORTED_OPERATIONS", "Authorizer", "operations_bits", "parse_super_users")

_O = AclOperation
#: Kafka's ``AclEntry.supportedOperations``: the operations an authorized-operations field may
#: report for each resource type.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        _O.READ,
        _O.WRITE,
        _O.CREATE,
        _O.DESCRIBE,
        _O.DELETE,
        _O.ALTER,
        _O.DESCRIBE_CONFIGS,
        _O.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (_O.READ, _O.DESCRIBE, _O.DELETE),
    ResourceType.CLUSTER: (
        _O.CREATE,
        _O.CLUSTER_ACTION,
        _O.DESCRIBE_CONFIGS,
        _O.ALTER_CONFIGS,
        _O.IDEMPOTENT_WRITE,
        _O.ALTER,
        _O.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (_O.DESCRIBE, _O.WRITE),
    ResourceType.DELEGATION_TOKEN: (_O.DESCRIBE,),
    ResourceType.USER: (_O.CREATE_TOKENS, _O.DESCRIBE_TOKENS),
}


def operations_bits(ops: Iterable[AclOperation]) -> int:
    """Kafka's ``Utils.to32BitField``: bit ``op.code`` set for each operation."""
    bits = 0
    for op in ops:
        bits |= 1 << int(op)
    return bits


_IMPLIED: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset(
        {
            AclOperation.DESCRIBE,
            AclOperation.READ,
            AclOperation.WRITE,
            AclOperation.DELETE,
            AclOperation.ALTER,
        }
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset(
        {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
    ),
}
WILDCARD_PRINCIPAL = "User:*"


def parse_super_users(value: str) -> frozenset[str]:
    """Kafka separates super users with ';' (a DN may contain ',')."""
    return frozenset(p.strip() for p in value.split(";") if p.strip())


class Authorizer:
    """``authorize(principal, host, operation, resource_type, name) -> bool``.

    ``bindings`` is a callable returning the current bindings so the store stays the single
    owner of the data.
    """

    def __init__(
        self,
        bindings: Callable[[], Iterable[AclBinding]],
        *,
        super_users: frozenset[str] = frozenset(),
        allow_if_no_acl: bool = False,
    ) -> None:
        self._bindings = bindings
        self.super_users = super_users
        self.allow_if_no_acl = allow_if_no_acl

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        if principal in self.super_users:
            return True
        on_resource = [b for b in self._bindings() if b.applies_to(resource_type, name)]
        if not on_resource:
            return self.allow_if_no_acl
        mine = [
            b
            for b in on_resource
            if b.principal in (principal, WILDCARD_PRINCIPAL) and b.host in (host, "*")
        ]
        if any(
            b.permission == Permission.DENY and b.operation in (operation, AclOperation.ALL)
            for b in mine
        ):
            return False
        allowed_by = _IMPLIED.get(operation, frozenset({operation})) | {AclOperation.ALL}
        return any(b.permission == Permission.ALLOW and b.operation in allowed_by for b in mine)

    def authorize_any(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """May the principal do ``operation`` on some resource of this type?

        True for super users, or when an ALLOW binding grants it and no wildcard (``*``) DENY
        binding takes it back from every resource.
        """
        if principal in self.super_users:
            return True
        allowed_by = _IMPLIED.get(operation, frozenset({operation})) | {AclOperation.ALL}
        mine = [
            b
            for b in self._bindings()
            if b.resource_type == resource_type
            and b.principal in (principal, WILDCARD_PRINCIPAL)
            and b.host in (host, "*")
        ]
        if any(
            b.permission == Permission.DENY
            and b.resource_name == "*"
            and b.operation in (operation, AclOperation.ALL)
            for b in mine
        ):
            return False
        return any(b.permission == Permission.ALLOW and b.operation in allowed_by for b in mine)

    def authorized_operations(
        self, principal: str, host: str, resource_type: ResourceType, name: str
    ) -> int:
        """The ``authorized_operations`` bit field of Describe responses (KIP-430): the
        operations Kafka supports on this resource type that the principal may do."""
        bits = 0
        for op in SUPPORTED_OPERATIONS.get(resource_type, ()):
            if self.authorize(principal, host, op, resource_type, name):
                bits |= 1 << int(op)
        return bits
