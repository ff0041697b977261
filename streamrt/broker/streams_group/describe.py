"""StreamsGroupDescribe's view of a group (v0): topology, members, their tasks and targets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamrt.broker.streams_group.group import StreamsGroup
from streamrt.broker.streams_group.member import StreamsMember, Tasks
from streamrt.broker.streams_group.topology import StreamsTopology, TopicInfo
from streamrt.errors import ErrorCode

__all__ = ("described", "described_error")

_NOT_REQUESTED = -(2**31)


def described_error(group_id: str, code: ErrorCode, message: str | None) -> dict[str, Any]:
    return {
        "error_code": code,
        "error_message": message,
        "group_id": group_id,
        "group_state": "Dead",
        "group_epoch": -1,
        "assignment_epoch": -1,
        "topology": None,
        "members": [],
        "authorized_operations": _NOT_REQUESTED,
    }


def _task_list(tasks: Mapping[str, frozenset[int]]) -> list[dict[str, Any]]:
    return [
        {"subtopology_id": s, "partitions": sorted(ps)} for s, ps in sorted(tasks.items()) if ps
    ]


def _assignment(tasks: Tasks) -> dict[str, Any]:
    return {
        "active_tasks": _task_list(tasks.active),
        "standby_tasks": _task_list(tasks.standby),
        "warmup_tasks": _task_list(tasks.warmup),
    }


def _topic(info: TopicInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "partitions": info.partitions,
        "replication_factor": info.replication_factor,
        "topic_configs": [{"key": k, "value": v} for k, v in info.configs],
    }


def _topology(topology: StreamsTopology | None) -> dict[str, Any] | None:
    if topology is None:
        return None
    return {
        "epoch": topology.epoch,
        "subtopologies": [
            {
                "subtopology_id": s.subtopology_id,
                "source_topics": list(s.source_topics),
                "repartition_sink_topics": list(s.repartition_sink_topics),
                "state_changelog_topics": [_topic(t) for t in s.state_changelog_topics],
                "repartition_source_topics": [_topic(t) for t in s.repartition_source_topics],
            }
            for s in topology.subtopologies
        ],
    }


def _member(m: StreamsMember, target: Tasks) -> dict[str, Any]:
    endpoint = None
    if m.user_endpoint is not None:
        endpoint = {"host": m.user_endpoint[0], "port": m.user_endpoint[1]}
    return {
        "member_id": m.member_id,
        "member_epoch": m.member_epoch,
        "instance_id": m.instance_id,
        "rack_id": m.rack_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "topology_epoch": m.topology_epoch,
        "process_id": m.process_id,
        "user_endpoint": endpoint,
        "client_tags": [{"key": k, "value": v} for k, v in m.client_tags],
        "task_offsets": [],
        "task_end_offsets": [],
        "assignment": _assignment(m.assigned),
        "target_assignment": _assignment(target),
        "is_classic": False,
    }


def described(group: StreamsGroup, authorized_operations: int) -> dict[str, Any]:
    members = [
        _member(m, group.target.get(mid) or Tasks()) for mid, m in sorted(group.members.items())
    ]
    return {
        "error_code": ErrorCode.none,
        "error_message": None,
        "group_id": group.group_id,
        "group_state": group.state.value,
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "topology": _topology(group.topology),
        "members": members,
        "authorized_operations": authorized_operations,
    }
