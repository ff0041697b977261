"""Matrix rows of the data-plane and topic APIs (see tests/security/authz_rows.py)."""

from __future__ import annotations

from typing import Any

from streamrt.wire.api_keys import ApiKey
from tests.security.authz_model import (
    ALTER,
    ALTER_CONFIGS,
    CREATE,
    DELETE,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    READ,
    TAF,
    TOPIC,
    WRITE,
    Names,
    Row,
    batch,
)


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


def _config_resource(rtype: int, name: str, entries: str = "configs") -> dict[str, Any]:
    return {
        "resource_type": rtype,
        "resource_name": name,
        entries: [{"name": "retention.ms", "value": "86400000", "config_operation": 0}],
    }


def _listed_topics(resp: Any, n: Names) -> bool:
    return n.topic not in {t.name for t in resp.topics}


ROWS: tuple[Row, ...] = (
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
    Row(
        ApiKey.DESCRIBE_PRODUCERS,
        TOPIC,
        READ,
        TAF,
        lambda n: {"topics": [{"name": n.topic, "partition_indexes": [0]}]},
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
)
