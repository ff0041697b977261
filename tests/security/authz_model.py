"""The authorization matrix's model: rows, the resources they name, and response checks.

Each :class:`Row` is one requirement of one API, taken from Kafka's ``KafkaApis`` /
``AuthHelper`` / ``ControllerApis``: the resource type and operation, the error a caller
without it gets, the request that exercises it, and the other ACLs the request needs (granted
first, so only the row's own ACL decides). A row with no resource documents an API Kafka serves
without authorization. ``tests/security/test_authz_matrix.py`` runs them on a real broker.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder

from streamrt.errors import ErrorCode
from streamrt.wire.acl_codes import AclOperation, ResourceType
from streamrt.wire.api_keys import ApiKey

TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
TXN = ResourceType.TRANSACTIONAL_ID
READ, WRITE, CREATE, DELETE = (
    AclOperation.READ,
    AclOperation.WRITE,
    AclOperation.CREATE,
    AclOperation.DELETE,
)
ALTER, DESCRIBE = AclOperation.ALTER, AclOperation.DESCRIBE
ALTER_CONFIGS, DESCRIBE_CONFIGS = AclOperation.ALTER_CONFIGS, AclOperation.DESCRIBE_CONFIGS
IDEMPOTENT_WRITE = AclOperation.IDEMPOTENT_WRITE
TAF, GAF = ErrorCode.topic_authorization_failed, ErrorCode.group_authorization_failed
CAF, XAF = ErrorCode.cluster_authorization_failed, ErrorCode.transactional_id_authorization_failed
AUTH_ERRORS = frozenset({TAF, GAF, CAF, XAF})


@dataclasses.dataclass(frozen=True)
class Names:
    """The row's own resources, so that one row's ACLs never grant another's."""

    topic: str
    group: str
    txn: str

    def of(self, rtype: ResourceType) -> str:
        return {TOPIC: self.topic, GROUP: self.group, TXN: self.txn}.get(rtype, "kafka-cluster")


Request = Callable[[Names], dict[str, Any]]
Refused = Callable[[Any, Names], bool]


@dataclasses.dataclass(frozen=True)
class Row:
    api: ApiKey
    rtype: ResourceType | None  # None: Kafka serves the API without authorization
    op: AclOperation | None
    error: ErrorCode | None  # what a caller without the ACL gets (None: filtered out)
    request: Request | None = None  # None: exercised by the login itself (SASL)
    given: tuple[tuple[ResourceType, AclOperation], ...] = ()
    refused: Refused | None = None  # for listings: is the row's resource left out?
    max_version: int = 32767
    raw_error_at: int | None = None  # read only this error code (kio cannot read -1 times)
    setup: str | None = None  # "txn": the admin starts the row's transactional id first
    note: str = ""

    @property
    def id(self) -> str:
        what = "no-acl" if self.rtype is None else f"{self.op.name}-{self.rtype.name}"  # type: ignore[union-attr]
        return f"{self.api.name}-{what}"


@dataclasses.dataclass(frozen=True)
class RawError:
    """The one error code read from a response kio cannot decode."""

    error_code: int


def codes(value: Any) -> set[int]:
    """Every error code anywhere in a response entity."""
    found: set[int] = set()
    if isinstance(value, (tuple, list)):
        for v in value:
            found |= codes(v)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            if f.name.endswith("error_code"):
                found.add(int(v))
            else:
                found |= codes(v)
    return found


def batch(producer_id: int = -1, epoch: int = -1, *, transactional: bool = False) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=int(transactional),
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=0 if producer_id >= 0 else -1,
        batch_size=1 << 20,
    )
    builder.append(0, timestamp=1_000, key=None, value=b"v", headers=[])
    return bytes(builder.build())


def topic_partitions(n: Names, key: str = "partitions") -> list[dict[str, Any]]:
    return [{"name": n.topic, key: [0]}]
