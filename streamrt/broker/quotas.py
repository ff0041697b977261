"""Client quotas (KIP-546): Kafka's entity rules for Describe/AlterClientQuotas, kept on disk.

Kafka keeps quotas in the cluster metadata; this node keeps them in one JSON file of its data
directory, rewritten atomically on each change, so they survive a restart. The rules are
Kafka's (``ClientQuotaControlManager`` for alterations, ``ClientQuotasImage`` for matching);
the broker records quotas but does not throttle clients by them.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from streamrt.broker.log.swap import write_atomically
from streamrt.errors import ErrorCode, KafkaError

__all__ = ("CLIENT_ID", "IP", "USER", "ClientQuotaStore", "Entity", "QuotaFilter")

USER, CLIENT_ID, IP = "user", "client-id", "ip"
_TYPES = (USER, CLIENT_ID, IP)

#: Quota keys allowed for user/client-id entities, and for ip entities, with Kafka's types.
_USER_CLIENT_KEYS = {
    "producer_byte_rate": "long",
    "consumer_byte_rate": "long",
    "request_percentage": "double",
    "controller_mutation_rate": "double",
}
_IP_KEYS = {"connection_creation_rate": "int"}
_LIMITS = {"long": 2**63 - 1, "int": 2**31 - 1}

#: An entity: entity type → name (``None`` is the type's default entity), as a sorted tuple.
Entity = tuple[tuple[str, str | None], ...]

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


class QuotaFilter:
    """A DescribeClientQuotas filter, validated as Kafka validates it."""

    def __init__(self, components: Sequence[tuple[str, int, str | None]], strict: bool) -> None:
        self.exact: dict[str, str | None] = {}
        self.typed: set[str] = set()
        self.strict = strict
        for entity_type, match_type, match in components:
            if not entity_type:
                raise KafkaError(ErrorCode.invalid_request, "Invalid empty entity type.")
            if entity_type in self.exact or entity_type in self.typed:
                raise KafkaError(
                    ErrorCode.invalid_request,
                    f"Entity type {entity_type} cannot appear more than once in the filter.",
                )
            if entity_type not in _TYPES:
                raise KafkaError(
                    ErrorCode.unsupported_version, f"Unsupported entity type {entity_type}"
                )
            if match_type == MATCH_EXACT:
                if match is None:
                    raise KafkaError(
                        ErrorCode.invalid_request,
                        "Request specified MATCH_TYPE_EXACT, but set match string to null.",
                    )
                self.exact[entity_type] = match
            elif match_type in (MATCH_DEFAULT, MATCH_SPECIFIED):
                if match is not None:
                    name = "MATCH_TYPE_DEFAULT" if match_type == MATCH_DEFAULT else "SPECIFIED"
                    raise KafkaError(
                        ErrorCode.invalid_request,
                        f"Request specified {name}, but also specified a match string.",
                    )
                if match_type == MATCH_DEFAULT:
                    self.exact[entity_type] = None
                else:
                    self.typed.add(entity_type)
            else:
                raise KafkaError(ErrorCode.invalid_request, f"Unknown match type {match_type}")
        used = set(self.exact) | self.typed
        if IP in used and used & {USER, CLIENT_ID}:
            raise KafkaError(
                ErrorCode.invalid_request,
                "Invalid entity filter component combination. IP filter component should not "
                "be used with user or clientId filter component.",
            )

    def matches(self, entity: Entity) -> bool:
        names = dict(entity)
        if self.strict and len(names) != len(self.exact) + len(self.typed):
            return False
        if any(t not in names or names[t] != m for t, m in self.exact.items()):
            return False
        return all(t in names for t in self.typed)


def _check_entity(entity: Sequence[tuple[str, str | None]]) -> tuple[Entity, dict[str, str]]:
    """The canonical entity and its valid quota keys, or the error Kafka gives."""
    if not entity:
        raise KafkaError(ErrorCode.invalid_request, "Invalid empty client quota entity")
    seen: dict[str, str | None] = {}
    for entity_type, name in entity:
        if entity_type in seen:
            raise KafkaError(
                ErrorCode.invalid_request,
                f"Invalid client quota entity, duplicate entity entry {entity_type}",
            )
        if entity_type not in _TYPES:
            raise KafkaError(
                ErrorCode.invalid_request, f"Unhandled client quota entity type: {entity_type}"
            )
        if name is not None and not name:
            raise KafkaError(ErrorCode.invalid_request, f"Empty {entity_type} not supported")
        seen[entity_type] = name
    if IP in seen:
        if len(seen) > 1:
            raise KafkaError(
                ErrorCode.invalid_request,
                "Invalid quota entity combination, IP entity should not be combined with User "
                "or ClientId",
            )
        if not _valid_ip(seen[IP]):
            raise KafkaError(
                ErrorCode.invalid_request, f"{seen[IP]} is not a valid IP or resolvable host."
            )
        keys = _IP_KEYS
    else:
        keys = _USER_CLIENT_KEYS
    return tuple(sorted(seen.items())), keys


def _valid_ip(name: str | None) -> bool:
    if name is None:
        return True
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    try:
        socket.getaddrinfo(name, None)
        return True
    except OSError:
        return False


def _check_value(keys: Mapping[str, str], key: str, value: float) -> None:
    kind = keys.get(key)
    if kind is None:
        raise KafkaError(ErrorCode.invalid_request, f"Invalid configuration key {key}")
    if value <= 0.0:
        raise KafkaError(ErrorCode.invalid_request, f"Quota {key} must be greater than 0")
    if kind in _LIMITS:
        if value > _LIMITS[kind]:
            raise KafkaError(
                ErrorCode.invalid_request,
                f"Proposed value for {key} is too large for a{'n' if kind == 'int' else ''} "
                f"{kind.upper()}.",
            )
        if abs(value % 1.0) > 1e-6:
            raise KafkaError(ErrorCode.invalid_request, f"{key} cannot be a fractional value.")


class ClientQuotaStore:
    """Entity → {quota key: value}, persisted in ``path`` (JSON)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._quotas: dict[Entity, dict[str, float]] = {}
        if path.exists():
            for row in json.loads(path.read_text()):
                entity = tuple((t, n) for t, n in row["entity"])
                self._quotas[entity] = {k: float(v) for k, v in row["values"].items()}

    def describe(self, quota_filter: QuotaFilter) -> list[tuple[Entity, dict[str, float]]]:
        with self._lock:
            return [
                (entity, dict(values))
                for entity, values in sorted(self._quotas.items(), key=lambda kv: repr(kv[0]))
                if quota_filter.matches(entity)
            ]

    def validate(
        self,
        entity: Sequence[tuple[str, str | None]],
        ops: Sequence[tuple[str, float, bool]],
    ) -> Entity:
        """Kafka's checks of one alteration (raises ``KafkaError``); the canonical entity."""
        canonical, keys = _check_entity(entity)
        seen: set[str] = set()
        for key, value, remove in ops:
            if key in seen:
                raise KafkaError(
                    ErrorCode.invalid_request,
                    f"Duplicate quota key {key} not updating quota for this entity",
                )
            seen.add(key)
            if not remove:
                _check_value(keys, key, value)
        return canonical

    def alter(self, changes: Sequence[tuple[Entity, Sequence[tuple[str, float, bool]]]]) -> None:
        """Apply validated alterations (a removal of an absent key is a no-op) and persist."""
        with self._lock:
            for entity, ops in changes:
                values = self._quotas.setdefault(entity, {})
                for key, value, remove in ops:
                    if remove:
                        values.pop(key, None)
                    else:
                        values[key] = float(value)
                if not values:
                    del self._quotas[entity]
            rows = [
                {"entity": [list(e) for e in entity], "values": values}
                for entity, values in self._quotas.items()
            ]
            self._path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(self._path, json.dumps(rows).encode())
