"""Matrix rows of the group and transaction APIs (see tests/security/authz_rows.py)."""

from __future__ import annotations

from typing import Any

from streamrt.wire.api_keys import ApiKey
from tests.security.authz_model import (
    CAF,
    CLUSTER,
    DELETE,
    DESCRIBE,
    GAF,
    GROUP,
    IDEMPOTENT_WRITE,
    READ,
    TAF,
    TOPIC,
    TXN,
    WRITE,
    XAF,
    Names,
    Row,
    topic_partitions,
)


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


def _listed_groups(resp: Any, n: Names) -> bool:
    return n.group not in {g.group_id for g in resp.groups}


def _listed_txns(resp: Any, n: Names) -> bool:
    return n.txn not in {s.transactional_id for s in resp.transaction_states}


def _txn_ids(n: Names) -> dict[str, Any]:
    return {"transactional_id": n.txn, "producer_id": 0, "producer_epoch": 0}


ROWS: tuple[Row, ...] = (
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
        ApiKey.ADD_PARTITIONS_TO_TXN,
        TXN,
        WRITE,
        XAF,
        lambda n: {
            "v3_and_below_transactional_id": n.txn,
            "v3_and_below_producer_id": 0,
            "v3_and_below_producer_epoch": 0,
            "v3_and_below_topics": topic_partitions(n),
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
            "v3_and_below_topics": topic_partitions(n),
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
        ApiKey.DELETE_GROUPS,
        GROUP,
        DELETE,
        GAF,
        lambda n: {"groups_names": [n.group]},
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
        GROUP,
        READ,
        GAF,
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
        note="KIP-848: READ on the group (Kafka's KafkaApis.handleConsumerGroupHeartbeat)",
    ),
    Row(
        ApiKey.CONSUMER_GROUP_DESCRIBE,
        GROUP,
        DESCRIBE,
        GAF,
        lambda n: {"group_ids": [n.group], "include_authorized_operations": False},
        note="KIP-848: DESCRIBE on each group, refused ones answer GROUP_AUTHORIZATION_FAILED",
    ),
    Row(
        ApiKey.STREAMS_GROUP_HEARTBEAT,
        GROUP,
        READ,
        GAF,
        lambda n: {
            "group_id": n.group,
            "member_id": "m",
            "member_epoch": 0,
            "endpoint_information_epoch": 0,
            "instance_id": None,
            "rack_id": None,
            "rebalance_timeout": 10000,
            "topology": {
                "epoch": 0,
                "subtopologies": [
                    {
                        "subtopology_id": "0",
                        "source_topics": [n.topic],
                        "state_changelog_topics": [],
                        "repartition_source_topics": [],
                        "copartition_groups": [],
                    }
                ],
            },
            "active_tasks": [],
            "standby_tasks": [],
            "warmup_tasks": [],
            "process_id": "p",
            "user_endpoint": None,
            "client_tags": [],
            "task_offsets": None,
            "task_end_offsets": None,
            "shutdown_application": False,
        },
        note="KIP-1071: READ on the group (Kafka's KafkaApis.handleStreamsGroupHeartbeat)",
    ),
    Row(
        ApiKey.STREAMS_GROUP_DESCRIBE,
        GROUP,
        DESCRIBE,
        GAF,
        lambda n: {"group_ids": [n.group], "include_authorized_operations": False},
        note="KIP-1071: DESCRIBE on each group, refused ones answer GROUP_AUTHORIZATION_FAILED",
    ),
)
