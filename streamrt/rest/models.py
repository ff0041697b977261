"""The REST API's request and response bodies (they make the OpenAPI document)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = (
    "ErrorBody",
    "InstanceIdText",
    "InstanceView",
    "InstancesView",
    "MemberRemoval",
    "RemoveMembersRequest",
    "RemoveMembersResponse",
)

InstanceIdText = Annotated[str, Field(min_length=1, max_length=249, pattern=r"^[A-Za-z0-9._-]+$")]


class ErrorBody(BaseModel):
    error: str = Field(description="machine-readable error name")
    message: str


class InstanceView(BaseModel):
    instance_id: str
    application_server: str | None
    host: str | None
    port: int | None
    group_instance_ids: list[str]
    tasks: list[str]
    topic_partitions: list[tuple[str, int]]
    state_store_names: list[str]


class InstancesView(BaseModel):
    application_id: str
    local_instance_id: str
    instances: list[InstanceView]


class RemoveMembersRequest(BaseModel):
    """Ids to remove: a ``group.instance.id`` (``web-3-thread-1``) or a whole instance id
    (``web-3``), which stands for all of that instance's threads."""

    model_config = ConfigDict(extra="forbid")
    instance_ids: list[InstanceIdText] = Field(min_length=1, max_length=100)


class MemberRemoval(BaseModel):
    group_instance_id: str
    removed: bool
    error: str | None = Field(description="Kafka error name, e.g. UNKNOWN_MEMBER_ID")


class RemoveMembersResponse(BaseModel):
    group_id: str
    results: list[MemberRemoval]


class KeyQueryResponse(BaseModel):
    store: str
    key: Any
    value: Any
    found: bool
    instance_id: str = Field(description="the instance that answered from its store")


class WindowView(BaseModel):
    start: int = Field(description="window start, ms since the epoch")
    end: int = Field(description="window end, ms (exclusive for time windows)")
    value: Any


class WindowQueryResponse(BaseModel):
    store: str
    key: Any
    time_from: int = Field(description="window stores: lowest window start; sessions: end")
    time_to: int = Field(description="window stores: highest window start; sessions: start")
    windows: list[WindowView]
    instance_id: str = Field(description="the instance that answered from its store")
