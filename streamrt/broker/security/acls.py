"""ACL bindings and filters with Kafka's enums and matching rules (pure, no I/O).

Numbers are Kafka's wire values (``ResourceType``, ``AclOperation``, ``AclPermissionType``,
``PatternType``). A binding is (resource pattern, principal, host, operation, permission); a
filter selects bindings for DescribeAcls/DeleteAcls, where ``ANY`` matches every value and the
``MATCH`` pattern type selects every binding that would apply to the named resource
(literal, the ``*`` wildcard and prefixes of it).
"""

from __future__ import annotations

import dataclasses
import enum

from streamrt.wire.acl_codes import AclOperation, PatternType, Permission, ResourceType

__all__ = (
    "CLUSTER_NAME",
    "WILDCARD",
    "AclBinding",
    "AclFilter",
    "AclOperation",
    "PatternType",
    "Permission",
    "ResourceType",
    "validate_binding",
)

CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"


def parse_enum(cls: type[enum.IntEnum], text: str) -> enum.IntEnum:
    """``"read"``/``"Read"``/``"READ"``/``"3"`` → the member; ValueError names the choices."""
    t = text.strip().upper().replace("-", "_")
    if t.isdigit():
        return cls(int(t))
    t = {"IDEMPOTENTWRITE": "IDEMPOTENT_WRITE", "DESCRIBECONFIGS": "DESCRIBE_CONFIGS"}.get(t, t)
    t = {"ALTERCONFIGS": "ALTER_CONFIGS", "CLUSTERACTION": "CLUSTER_ACTION"}.get(t, t)
    try:
        return cls[t]
    except KeyError:
        names = ", ".join(m.name for m in cls if m.name not in ("UNKNOWN",))
        raise ValueError(f"unknown {cls.__name__} {text!r} (expected one of {names})") from None


@dataclasses.dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: Permission

    def applies_to(self, resource_type: ResourceType, name: str) -> bool:
        """Does this binding's resource pattern cover the named resource?"""
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == PatternType.PREFIXED:
            return name.startswith(self.resource_name)
        return self.resource_name in (name, WILDCARD)

    def to_json(self) -> dict[str, object]:
        return {
            "resource_type": self.resource_type.name,
            "resource_name": self.resource_name,
            "pattern_type": self.pattern_type.name,
            "principal": self.principal,
            "host": self.host,
            "operation": self.operation.name,
            "permission": self.permission.name,
        }

    @classmethod
    def from_json(cls, d: dict[str, str]) -> AclBinding:
        return cls(
            ResourceType[d["resource_type"]],
            d["resource_name"],
            PatternType[d["pattern_type"]],
            d["principal"],
            d["host"],
            AclOperation[d["operation"]],
            Permission[d["permission"]],
        )


def validate_binding(b: AclBinding) -> str | None:
    """Why CreateAcls must refuse this binding (INVALID_REQUEST), or None."""
    if b.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
        return f"invalid resource type {b.resource_type.name}"
    if b.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"invalid pattern type {b.pattern_type.name}: expected LITERAL or PREFIXED"
    if b.operation in (AclOperation.ANY, AclOperation.UNKNOWN):
        return f"invalid operation {b.operation.name}"
    if b.permission not in (Permission.ALLOW, Permission.DENY):
        return f"invalid permission type {b.permission.name}"
    if not b.resource_name:
        return "resource name must not be empty"
    if b.resource_type == ResourceType.CLUSTER and b.resource_name != CLUSTER_NAME:
        return f"the cluster resource is named {CLUSTER_NAME!r}, not {b.resource_name!r}"
    if b.pattern_type == PatternType.PREFIXED and b.resource_name == WILDCARD:
        return "a PREFIXED pattern cannot be the wildcard '*'"
    principal_type, sep, name = b.principal.partition(":")
    if not sep or not principal_type or not name:
        return f"invalid principal {b.principal!r}: expected Type:name, e.g. User:alice"
    if not b.host:
        return "host must not be empty ('*' for any host)"
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class AclFilter:
    """None means "any" for the string fields (Kafka's null filter values)."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: Permission = Permission.ANY

    def invalid(self) -> str | None:
        for value, what in (
            (self.resource_type, "resource type"),
            (self.pattern_type, "pattern type"),
            (self.operation, "operation"),
            (self.permission, "permission type"),
        ):
            if int(value) == 0:
                return f"filter has an UNKNOWN {what}"
        return None

    def matches(self, b: AclBinding) -> bool:
        if self.resource_type not in (ResourceType.ANY, b.resource_type):
            return False
        if not self._matches_pattern(b):
            return False
        if self.principal is not None and self.principal != b.principal:
            return False
        if self.host is not None and self.host != b.host:
            return False
        if self.operation not in (AclOperation.ANY, b.operation):
            return False
        return self.permission in (Permission.ANY, b.permission)

    def _matches_pattern(self, b: AclBinding) -> bool:
        if self.pattern_type == PatternType.MATCH:
            if self.resource_name is None:
                return True
            if b.pattern_type == PatternType.PREFIXED:
                return self.resource_name.startswith(b.resource_name)
            return b.resource_name in (self.resource_name, WILDCARD)
        if self.pattern_type not in (PatternType.ANY, b.pattern_type):
            return False
        return self.resource_name is None or self.resource_name == b.resource_name
