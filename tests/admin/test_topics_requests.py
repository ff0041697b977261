"""Topic requests carry the broker-side timeout the caller asked for."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

from streamrt.admin.client import AdminClient
from streamrt.admin.models import NewTopic
from tests.admin.fake_broker import FakeBroker, respond

CREATE_TOPICS, DELETE_TOPICS = 19, 20


def _create(version: int, request: Any) -> Any:
    topics = [
        {"name": t.name, "topic_id": None, "error_code": 0, "error_message": None, "configs": None}
        for t in request.topics
    ]
    return respond(CREATE_TOPICS, version, throttle_time=0, topics=topics)


def _delete(version: int, request: Any) -> Any:
    names = [t.name for t in request.topics] if version >= 6 else list(request.topic_names)
    responses = [{"name": n, "topic_id": None, "error_code": 3} for n in names]
    return respond(DELETE_TOPICS, version, throttle_time=0, responses=responses)


def test_create_and_delete_topics_send_timeout_and_map_results() -> None:
    async def scenario() -> None:
        async with (
            FakeBroker(
                {CREATE_TOPICS: (2, 7), DELETE_TOPICS: (1, 6)},
                {CREATE_TOPICS: _create, DELETE_TOPICS: _delete},
            ) as broker,
            AdminClient(broker.bootstrap) as admin,
        ):
            created = await admin.create_topics(
                [NewTopic("a", 2, 1, {"cleanup.policy": "compact"})], timeout_ms=1234
            )
            deleted = await admin.delete_topics(["a"], timeout_ms=4321)
        assert created == {"a": None}
        assert deleted["a"] is not None and deleted["a"].code.value == 3
        (create,) = broker.requests(CREATE_TOPICS)
        assert create.request.timeout == datetime.timedelta(milliseconds=1234)
        assert [(c.name, c.value) for c in create.request.topics[0].configs] == [
            ("cleanup.policy", "compact")
        ]
        (delete,) = broker.requests(DELETE_TOPICS)
        assert (delete.api_version, delete.request.timeout) == (
            6,
            datetime.timedelta(milliseconds=4321),
        )

    asyncio.run(scenario())
