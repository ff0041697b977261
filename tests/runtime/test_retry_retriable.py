"""A start-up step repeated while a broker of the cluster is briefly out of reach (Kafka's
retriable errors), and not for an error a retry cannot fix. The one thing faked is the
cluster's answer: the step raises what streamrt's admin client raises when a broker of the
cluster is down (a refused connection) or a partition's leader moves; on a 3-broker Apache
Kafka such an error (then aiokafka's ``NodeNotReadyError``) ended a restarted instance at its
internal-topics step."""

from __future__ import annotations

import asyncio

import pytest

from streamrt.admin.connection import AdminConnectionError
from streamrt.errors import ErrorCode, KafkaError
from streamrt.runtime.engine.clients.bootstrap import retry_retriable


def test_a_step_is_repeated_while_a_broker_is_not_ready() -> None:
    calls: list[int] = []

    async def step() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise AdminConnectionError("cannot connect to 127.0.0.1:1: Connection refused")
        if len(calls) <= 3:
            raise KafkaError(ErrorCode.not_leader_or_follower, "the leader moved")
        return "created"

    assert asyncio.run(retry_retriable(step, "internal topics", timeout_s=30)) == "created"
    assert len(calls) == 4


def test_an_error_a_retry_cannot_fix_is_raised_at_once() -> None:
    calls: list[int] = []

    async def step() -> None:
        calls.append(1)
        raise KafkaError(ErrorCode.topic_authorization_failed, "not allowed")

    with pytest.raises(KafkaError, match="not allowed"):
        asyncio.run(retry_retriable(step, "internal topics"))
    assert len(calls) == 1


def test_the_bound_ends_the_retries() -> None:
    async def step() -> None:
        raise AdminConnectionError("still down")

    with pytest.raises(AdminConnectionError):
        asyncio.run(retry_retriable(step, "internal topics", timeout_s=0.5))
