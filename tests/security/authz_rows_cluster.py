"""Matrix rows of the cluster-level, SASL and disabled APIs (see tests/security/authz_rows.py)."""

from __future__ import annotations

import uuid

from streamrt.wire.api_keys import ApiKey
from tests.security.authz_model import (
    ALTER,
    ALTER_CONFIGS,
    CAF,
    CLUSTER,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    Row,
    topic_partitions,
)

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
        lambda n: {"dirs": [{"path": "/nowhere", "topics": topic_partitions(n)}]},
    ),
    Row(
        ApiKey.DESCRIBE_LOG_DIRS,
        CLUSTER,
        DESCRIBE,
        CAF,
        lambda n: {"topics": None},
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
        ApiKey.UNREGISTER_BROKER,
        CLUSTER,
        ALTER,
        CAF,
        lambda n: {"broker_id": 99},
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
