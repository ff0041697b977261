"""``remove_members`` and ``groups remove-members`` against a canned broker.

The canned broker isolates the client's request and result mapping; the rebalance it triggers
is tested against the real broker in ``test_admin_integration.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

import pytest

from streamrt.admin import cli
from streamrt.admin.client import AdminClient
from streamrt.admin.connection import UnsupportedVersionError
from streamrt.errors import ErrorCode
from tests.admin.fake_broker import FakeBroker, FakeBrokerThread, respond

LEAVE_GROUP = 13


class LeaveGroupCoordinator:
    """Answers LeaveGroup like Kafka's coordinator: per-member errors by group.instance.id."""

    def __init__(self, errors: dict[str, int] | None = None, omit: str | None = None) -> None:
        self.errors = errors or {}
        self.omit = omit  # an instance id the response leaves out

    def __call__(self, version: int, request: Any) -> Any:
        return respond(
            LEAVE_GROUP,
            version,
            throttle_time=0,
            error_code=0,
            members=[
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "error_code": self.errors.get(m.group_instance_id, 0),
                }
                for m in request.members
                if m.group_instance_id != self.omit
            ],
        )


def _broker(coordinator: LeaveGroupCoordinator, leave_max: int = 5) -> FakeBroker:
    return FakeBroker({LEAVE_GROUP: (0, leave_max)}, {LEAVE_GROUP: coordinator})


def _remove(broker: FakeBroker, ids: list[str]) -> dict[str, Any]:
    async def scenario() -> dict[str, Any]:
        async with broker, AdminClient(broker.bootstrap) as admin:
            return await admin.remove_members("g", ids)

    return asyncio.run(scenario())


def test_one_batch_leave_group_by_instance_id_with_per_member_results() -> None:
    broker = _broker(LeaveGroupCoordinator({"gone": ErrorCode.unknown_member_id.value}))
    results = _remove(broker, ["a", "b", "gone", "a"])

    assert list(results) == ["a", "b", "gone"]  # duplicates dropped, order kept
    assert results["a"] is None and results["b"] is None
    assert results["gone"] is not None and results["gone"].code == ErrorCode.unknown_member_id
    (leave,) = broker.requests(LEAVE_GROUP)
    assert leave.api_version == 5
    assert leave.request.group_id == "g"
    assert [(m.member_id, m.group_instance_id) for m in leave.request.members] == [
        ("", "a"),
        ("", "b"),
        ("", "gone"),
    ]


def test_an_id_missing_from_the_response_is_reported_unknown() -> None:
    results = _remove(_broker(LeaveGroupCoordinator(omit="b")), ["a", "b"])
    assert results["a"] is None
    assert results["b"] is not None and results["b"].code == ErrorCode.unknown_member_id


def test_uses_leave_group_v3_on_a_kafka_2_3_broker() -> None:
    broker = _broker(LeaveGroupCoordinator(), leave_max=3)
    assert _remove(broker, ["a"]) == {"a": None}
    assert [s.api_version for s in broker.requests(LEAVE_GROUP)] == [3]


def test_refuses_brokers_without_batch_leave_group() -> None:
    broker = _broker(LeaveGroupCoordinator(), leave_max=2)
    with pytest.raises(UnsupportedVersionError, match=r"LeaveGroup up to v2.*needs v3\+"):
        _remove(broker, ["a"])
    assert broker.requests(LEAVE_GROUP) == []


def _cli(argv: list[str]) -> int:
    """The admin subcommands alone, as ``streamrt.cli.main`` dispatches them."""
    parser = argparse.ArgumentParser(prog="streamrt")
    cli.register(parser.add_subparsers())
    args = parser.parse_args(argv)
    return int(args.func(args))


@pytest.mark.parametrize(
    ("errors", "expected_exit"),
    [
        ({}, 0),
        ({"b": ErrorCode.unknown_member_id.value}, 3),
        ({"b": ErrorCode.fenced_instance_id.value}, 1),
    ],
)
def test_cli_exit_codes(
    errors: dict[str, int], expected_exit: int, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeBrokerThread(_broker(LeaveGroupCoordinator(errors))) as broker:
        argv = ["groups", "remove-members", "--bootstrap-server", broker.bootstrap]
        code = _cli([*argv, "--group", "g", "--instance-id", "a", "--instance-id", "b"])
    assert code == expected_exit
    out = capsys.readouterr().out
    assert "REMOVED" in out and "a" in out


def test_cli_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    coordinator = LeaveGroupCoordinator({"b": ErrorCode.unknown_member_id.value})
    with FakeBrokerThread(_broker(coordinator)) as broker:
        code = _cli(
            [
                "groups",
                "remove-members",
                f"--bootstrap-server={broker.bootstrap}",
                "--group=g",
                "--instance-id=a",
                "--instance-id=b",
                "--output=json",
            ]
        )
    assert code == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["group_id"] == "g"
    assert doc["results"]["a"] is None
    assert doc["results"]["b"]["code"] == "UNKNOWN_MEMBER_ID"
