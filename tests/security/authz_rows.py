"""The authorization matrix: for every API the broker serves, the ACL Apache Kafka requires.

Each :class:`Row` is one requirement of one API, taken from Kafka's ``KafkaApis`` /
``AuthHelper`` / ``ControllerApis``: the resource type and operation, the error a caller
without it gets, the request that exercises it, and the other ACLs the request needs (granted
first, so only the row's own ACL decides). A row with no resource documents an API Kafka serves
without authorization. ``tests/security/test_authz_matrix.py`` runs them on a real broker.
"""

from __future__ import annotations

import dataclasses
import uuid
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


def _produce(n: Names) -> dict[str, Any]:
    data = [{"name": n.topic, "partition_data": [{"index": 0, "records": batch()}]}]
    return {"transactional_id": None, "acks": -1, "timeout": 5000, "topic_data": data}


def _fetch(n: Names) -> dict[str, Any]:
    part = {
        "partition": 0,
        "current_leader_epoch": -1,
        "fetch_offset": 0,
        "last_fetched_epoch": -1,
        "log_start_offset": -1,
        "partition_max_bytes": 1 << 20,
    }
    return {
        "cluster_id": None,
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic": n.topic, "partitions": [part]}],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def _topic_partitions(n: Names, key: str = "partitions") -> list[dict[str, Any]]:
    return [{"name": n.topic, key: [0]}]


def _offset_commit_topics(n: Names) -> list[dict[str, Any]]:
    return [
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
    ]


def _config_resource(rtype: int, name: str, entries: str = "configs") -> dict[str, Any]:
    return {
        "resource_type": rtype,
        "resource_name": name,
        entries: [{"name": "retention.ms", "value": "86400000", "config_operation": 0}],
    }


def _listed_groups(resp: Any, n: Names) -> bool:
    return n.group not in {g.group_id for g in resp.groups}


def _listed_txns(resp: Any, n: Names) -> bool:
    return n.txn not in {s.transactional_id for s in resp.transaction_states}


def _listed_topics(resp: Any, n: Names) -> bool:
    return n.topic not in {t.name for t in resp.topics}


def _txn_ids(n: Names) -> dict[str, Any]:
    return {"transactional_id": n.txn, "producer_id": 0, "producer_epoch": 0}


_ACL = {
    "resource_type": 2,
    "resource_name": "matrix-unused",
    "resource_pattern_type": 3,
    "principal": "User:nobody",
    "host": "*",
    "operation": 3,
    "permission_type": 3,
}
_ACL_FILTER = {
    "resource_type_filter": 2,
    "resource_name_filter": "matrix-unused",
    "pattern_type_filter": 3,
    "principal_filter": None,
    "host_filter": None,
    "operation": 1,
    "permission_type": 1,
}

ROWS: tuple[Row, ...] = (
    Row(
        ApiKey.API_VERSIONS,
        None,
        None,
        None,
        lambda n: {"client_software_name": "matrix", "client_software_version": "1"},
    ),
    Row(ApiKey.SASL_HANDSHAKE, None, None, None, note="before login"),
    Row(ApiKey.SASL_AUTHENTICATE, None, None, None, note="before login"),
    Row(ApiKey.PRODUCE, TOPIC, WRITE, TAF, _produce),
    Row(ApiKey.FETCH, TOPIC, READ, TAF, _fetch),
    Row(
        ApiKey.LIST_OFFSETS,
        TOPIC,
        DESCRIBE,
        TAF,
        lambda n: {
            "replica_id": -1,
            "isolation_level": 0,
            "timeout": 5000,
            "topics": [
                {
                    "name": n.topic,
                    "partitions": [
                        {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}
                    ],
                }
            ],
        },
    ),
    Row(
        ApiKey.METADATA,
        TOPIC,
        DESCRIBE,
        TAF,
        lambda n: {
            "topics": [{"name": n.topic, "topic_id": None}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": True,
        },
    ),
    Row(
        ApiKey.METADATA,
        TOPIC,
        DESCRIBE,
        None,
        lambda n: {
            "topics": None,
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
        refused=_listed_topics,
        note="all topics: the undescribable ones are left out",
    ),
    Row(
        ApiKey.OFFSET_COMMIT,
        GROUP,
        READ,
        GAF,
        lambda n: {
            "group_id": n.group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": _offset_commit_topics(n),
        },
        given=((TOPIC, READ),),
    ),
    Row(
        ApiKey.OFFSET_COMMIT,
        TOPIC,
        READ,
        TAF,
        lambda n: {
            "group_id": n.group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": _offset_commit_topics(n),
        },
        given=((GROUP, READ),),
    ),
    Row(
        ApiKey.OFFSET_FETCH,
        GROUP,
        DESCRIBE,
        GAF,
        lambda n: {
            "groups": [
                {"group_id": n.group, "member_id": None, "member_epoch": -1, "topics": None}
            ],
            "require_stable": False,
        },
    ),
    Row(
        ApiKey.OFFSET_FETCH,
        TOPIC,
        DESCRIBE,
        TAF,
        lambda n: {
            "groups": [
                {
                    "group_id": n.group,
                    "member_id": None,
                    "member_epoch": -1,
                    "topics": [{"name": n.topic, "partition_indexes": [0]}],
                }
            ],
            "require_stable": False,
        },
        given=((GROUP, DESCRIBE),),
        note="a named topic answers TOPIC_AUTHORIZATION_FAILED; an all-topics fetch omits it",
    ),
    Row(
        ApiKey.FIND_COORDINATOR,
        GROUP,
        DESCRIBE,
        GAF,
        lambda n: {"key_type": 0, "coordinator_keys": [n.group]},
    ),
    Row(
        ApiKey.FIND_COORDINATOR,
        TXN,
        DESCRIBE,
        XAF,
        lambda n: {"key_type": 1, "coordinator_keys": [n.txn]},
    ),
    Row(
        ApiKey.JOIN_GROUP,
        GROUP,
        READ,
        GAF,
        lambda n: {
            "group_id": n.group,
            "session_timeout": 10000,
            "rebalance_timeout": 10000,
            "member_id": "",
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}],
            "reason": None,
        },
    ),
    Row(
        ApiKey.HEARTBEAT,
        GROUP,
        READ,
        GAF,
        lambda n: {
            "group_id": n.group,
            "generation_id": 1,
            "member_id": "m",
            "group_instance_id": None,
        },
    ),
    Row(
        ApiKey.LEAVE_GROUP,
        GROUP,
        READ,
        GAF,
        lambda n: {
            "group_id": n.group,
            "members": [{"member_id": "m", "group_instance_id": None, "reason": None}],
        },
    ),
    Row(
        ApiKey.SYNC_GROUP,
        GROUP,
        READ,
        GAF,
        lambda n: {
            "group_id": n.group,
            "generation_id": 1,
            "member_id": "m",
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [],
        },
    ),
    Row(
        ApiKey.DESCRIBE_GROUPS,
        GROUP,
        DESCRIBE,
        GAF,
        lambda n: {"groups": [n.group], "include_authorized_operations": True},
    ),
    Row(
        ApiKey.LIST_GROUPS,
        GROUP,
        DESCRIBE,
        None,
        lambda n: {"states_filter": [], "types_filter": []},
        refused=_listed_groups,
        setup="group",
        note="without DESCRIBE on the cluster, only describable groups are listed",
    ),
    Row(
        ApiKey.CREATE_TOPICS,
        TOPIC,
        CREATE,
        TAF,
        lambda n: {
            "topics": [
                {
                    "name": n.topic,
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [],
                }
            ],
            "timeout": 5000,
            "validate_only": True,
        },
        note="CREATE on the topic or on the cluster; allowed, it already exists",
    ),
    Row(
        ApiKey.DELETE_TOPICS,
        TOPIC,
        DELETE,
        TAF,
        lambda n: {"topics": [{"name": n.topic, "topic_id": None}], "timeout": 5000},
        max_version=6,
    ),
    Row(
        ApiKey.DELETE_RECORDS,
        TOPIC,
        DELETE,
        TAF,
        lambda n: {
            "topics": [{"name": n.topic, "partitions": [{"partition_index": 0, "offset": 0}]}],
            "timeout": 5000,
        },
    ),
    Row(
        ApiKey.INIT_PRODUCER_ID,
        TXN,
        WRITE,
        XAF,
        lambda n: {
            "transactional_id": n.txn,
            "transaction_timeout": 60000,
            "producer_id": -1,
            "producer_epoch": -1,
        },
    ),
    Row(
        ApiKey.INIT_PRODUCER_ID,
        CLUSTER,
        IDEMPOTENT_WRITE,
        CAF,
        lambda n: {
            "transactional_id": None,
            "transaction_timeout": 60000,
            "producer_id": -1,
            "producer_epoch": -1,
        },
        note="or WRITE on any topic (KIP-679)",
    ),
    Row(
        ApiKey.OFFSET_FOR_LEADER_EPOCH,
        TOPIC,
        DESCRIBE,
        TAF,
        lambda n: {
            "replica_id": -1,
            "topics": [
                {
                    "topic": n.topic,
                    "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}],
                }
            ],
        },
    ),
    Row(
        ApiKey.ADD_PARTITIONS_TO_TXN,
        TXN,
        WRITE,
        XAF,
        lambda n: {
            "v3_and_below_transactional_id": n.txn,
            "v3_and_below_producer_id": 0,
            "v3_and_below_producer_epoch": 0,
            "v3_and_below_topics": _topic_partitions(n),
        },
        given=((TOPIC, WRITE),),
    ),
    Row(
        ApiKey.ADD_PARTITIONS_TO_TXN,
        TOPIC,
        WRITE,
        TAF,
        lambda n: {
            "v3_and_below_transactional_id": n.txn,
            "v3_and_below_producer_id": 0,
            "v3_and_below_producer_epoch": 0,
            "v3_and_below_topics": _topic_partitions(n),
        },
        given=((TXN, WRITE),),
    ),
    Row(
        ApiKey.ADD_OFFSETS_TO_TXN,
        TXN,
        WRITE,
        XAF,
        lambda n: {**_txn_ids(n), "group_id": n.group},
        given=((GROUP, READ),),
    ),
    Row(
        ApiKey.ADD_OFFSETS_TO_TXN,
        GROUP,
        READ,
        GAF,
        lambda n: {**_txn_ids(n), "group_id": n.group},
        given=((TXN, WRITE),),
    ),
    Row(
        ApiKey.END_TXN,
        TXN,
        WRITE,
        XAF,
        lambda n: {**_txn_ids(n), "committed": False},
    ),
    *(
        Row(
            ApiKey.TXN_OFFSET_COMMIT,
            rtype,
            op,
            error,
            lambda n: {
                **_txn_ids(n),
                "group_id": n.group,
                "generation_id": -1,
                "member_id": "",
                "group_instance_id": None,
                "topics": [
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
            },
            given=tuple(g for g in ((TXN, WRITE), (GROUP, READ), (TOPIC, READ)) if g[0] != rtype),
        )
        for rtype, op, error in ((TXN, WRITE, XAF), (GROUP, READ, GAF), (TOPIC, READ, TAF))
    ),
    Row(
        ApiKey.DESCRIBE_ACLS,
        CLUSTER,
        DESCRIBE,
        CAF,
        lambda n: dict(_ACL_FILTER),
    ),
    Row(
        ApiKey.CREATE_ACLS,
        CLUSTER,
        ALTER,
        CAF,
        lambda n: {"creations": [dict(_ACL)]},
    ),
    Row(
        ApiKey.DELETE_ACLS,
        CLUSTER,
        ALTER,
        CAF,
        lambda n: {"filters": [dict(_ACL_FILTER)]},
    ),
    Row(
        ApiKey.DESCRIBE_CONFIGS,
        TOPIC,
        DESCRIBE_CONFIGS,
        TAF,
        lambda n: {
            "resources": [
                {"resource_type": 2, "resource_name": n.topic, "configuration_keys": None}
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
    ),
    Row(
        ApiKey.DESCRIBE_CONFIGS,
        CLUSTER,
        DESCRIBE_CONFIGS,
        CAF,
        lambda n: {
            "resources": [{"resource_type": 4, "resource_name": "1", "configuration_keys": None}],
            "include_synonyms": False,
            "include_documentation": False,
        },
        note="a broker resource",
    ),
    Row(
        ApiKey.ALTER_CONFIGS,
        TOPIC,
        ALTER_CONFIGS,
        TAF,
        lambda n: {"resources": [_config_resource(2, n.topic)], "validate_only": True},
    ),
    Row(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        TOPIC,
        ALTER_CONFIGS,
        TAF,
        lambda n: {"resources": [_config_resource(2, n.topic)], "validate_only": True},
    ),
    Row(
        ApiKey.LIST_CONFIG_RESOURCES,
        CLUSTER,
        DESCRIBE_CONFIGS,
        CAF,
        lambda n: {},
    ),
    Row(
        ApiKey.ALTER_REPLICA_LOG_DIRS,
        CLUSTER,
        ALTER,
        CAF,
        lambda n: {"dirs": [{"path": "/nowhere", "topics": _topic_partitions(n)}]},
    ),
    Row(
        ApiKey.DESCRIBE_LOG_DIRS,
        CLUSTER,
        DESCRIBE,
        CAF,
        lambda n: {"topics": None},
    ),
    Row(
        ApiKey.CREATE_PARTITIONS,
        TOPIC,
        ALTER,
        TAF,
        lambda n: {
            "topics": [{"name": n.topic, "count": 2, "assignments": None}],
            "timeout": 5000,
            "validate_only": True,
        },
    ),
    *(
        Row(
            api,
            None,
            None,
            None,
            request,
            raw_error_at=5,
            note="tokens are disabled, answered before ACLs",
        )
        for api, request in (
            (
                ApiKey.CREATE_DELEGATION_TOKEN,
                lambda n: {
                    "owner_principal_type": None,
                    "owner_principal_name": None,
                    "renewers": [],
                    "max_lifetime": -1,
                },
            ),
            (ApiKey.RENEW_DELEGATION_TOKEN, lambda n: {"hmac": b"x", "renew_period": -1}),
            (ApiKey.EXPIRE_DELEGATION_TOKEN, lambda n: {"hmac": b"x", "expiry_time_period": -1}),
            (ApiKey.DESCRIBE_DELEGATION_TOKEN, lambda n: {"owners": None}),
        )
    ),
    Row(
        ApiKey.DELETE_GROUPS,
        GROUP,
        DELETE,
        GAF,
        lambda n: {"groups_names": [n.group]},
    ),
    Row(
        ApiKey.ELECT_LEADERS,
        CLUSTER,
        ALTER,
        CAF,
        lambda n: {
            "election_type": 0,
            "topic_partitions": [{"topic": n.topic, "partitions": [0]}],
            "timeout": 5000,
        },
    ),
    Row(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        CLUSTER,
        ALTER,
        CAF,
        lambda n: {
            "timeout": 5000,
            "topics": [{"name": n.topic, "partitions": [{"partition_index": 0, "replicas": None}]}],
        },
    ),
    Row(
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        CLUSTER,
        DESCRIBE,
        CAF,
        lambda n: {"timeout": 5000, "topics": None},
    ),
    Row(
        ApiKey.OFFSET_DELETE,
        GROUP,
        DELETE,
        GAF,
        lambda n: {
            "group_id": n.group,
            "topics": [{"name": n.topic, "partitions": [{"partition_index": 0}]}],
        },
    ),
    Row(
        ApiKey.DESCRIBE_CLIENT_QUOTAS,
        CLUSTER,
        DESCRIBE_CONFIGS,
        CAF,
        lambda n: {"components": [], "strict": False},
    ),
    Row(
        ApiKey.ALTER_CLIENT_QUOTAS,
        CLUSTER,
        ALTER_CONFIGS,
        CAF,
        lambda n: {
            "entries": [
                {
                    "entity": [{"entity_type": "user", "entity_name": "matrix"}],
                    "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}],
                }
            ],
            "validate_only": True,
        },
    ),
    Row(
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
        CLUSTER,
        DESCRIBE,
        CAF,
        lambda n: {"users": None},
    ),
    Row(
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        CLUSTER,
        ALTER,
        CAF,
        lambda n: {"deletions": [{"name": "matrix-nobody", "mechanism": 1}], "upsertions": []},
    ),
    Row(
        ApiKey.DESCRIBE_QUORUM,
        CLUSTER,
        DESCRIBE,
        CAF,
        lambda n: {
            "topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]
        },
    ),
    Row(
        ApiKey.UPDATE_FEATURES,
        CLUSTER,
        ALTER,
        CAF,
        lambda n: {"timeout": 5000, "feature_updates": [], "validate_only": True},
    ),
    Row(
        ApiKey.DESCRIBE_CLUSTER,
        None,
        None,
        None,
        lambda n: {"include_cluster_authorized_operations": True, "endpoint_type": 1},
        note="the authorized operations are 0 without DESCRIBE on the cluster",
    ),
    Row(
        ApiKey.DESCRIBE_PRODUCERS,
        TOPIC,
        READ,
        TAF,
        lambda n: {"topics": [{"name": n.topic, "partition_indexes": [0]}]},
    ),
    Row(
        ApiKey.UNREGISTER_BROKER,
        CLUSTER,
        ALTER,
        CAF,
        lambda n: {"broker_id": 99},
    ),
    Row(
        ApiKey.DESCRIBE_TRANSACTIONS,
        TXN,
        DESCRIBE,
        XAF,
        lambda n: {"transactional_ids": [n.txn]},
        raw_error_at=10,  # header, throttle, array length, then the first state's code
    ),
    Row(
        ApiKey.LIST_TRANSACTIONS,
        TXN,
        DESCRIBE,
        None,
        lambda n: {"state_filters": [], "producer_id_filters": [], "duration_filter": -1},
        refused=_listed_txns,
        setup="txn",
    ),
    Row(
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        None,
        None,
        None,
        lambda n: {
            "group_id": n.group,
            "member_id": "m",
            "member_epoch": 0,
            "instance_id": None,
            "rack_id": None,
            "rebalance_timeout": 10000,
            "subscribed_topic_names": [n.topic],
            "subscribed_topic_regex": None,
            "server_assignor": None,
            "topic_partitions": [],
        },
        note="the consumer protocol is disabled: UNSUPPORTED_VERSION before ACLs, as Kafka",
    ),
    Row(
        ApiKey.CONSUMER_GROUP_DESCRIBE,
        None,
        None,
        None,
        lambda n: {"group_ids": [n.group], "include_authorized_operations": False},
        note="the consumer protocol is disabled: UNSUPPORTED_VERSION before ACLs, as Kafka",
    ),
    Row(
        ApiKey.DESCRIBE_TOPIC_PARTITIONS,
        TOPIC,
        DESCRIBE,
        TAF,
        lambda n: {
            "topics": [{"name": n.topic}],
            "response_partition_limit": 100,
            "cursor": None,
        },
    ),
    *(
        Row(api, CLUSTER, ALTER, CAF, request)
        for api, request in (
            (
                ApiKey.ADD_RAFT_VOTER,
                lambda n: {
                    "cluster_id": None,
                    "timeout": 5000,
                    "voter_id": 7,
                    "voter_directory_id": uuid.UUID(int=1),
                    "listeners": [],
                },
            ),
            (
                ApiKey.REMOVE_RAFT_VOTER,
                lambda n: {
                    "cluster_id": None,
                    "voter_id": 7,
                    "voter_directory_id": uuid.UUID(int=1),
                },
            ),
        )
    ),
)
