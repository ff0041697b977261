"""The runtime's assignor through streamrt's membership (no broker): user data both ways,
the cooperative first round holding back tasks still owned elsewhere, and the config switch."""

from __future__ import annotations

import pytest

from streamrt.errors import ConfigError
from streamrt.membership.assignment import MemberSubscription
from streamrt.membership.protocol import ConsumerSubscription
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.engine.assignment.assignor import (
    AssignmentInfo,
    StreamsPartitionAssignor,
    SubscriptionInfo,
)
from streamrt.runtime.engine.assignment.member_assignor import MemberStreamsAssignor


def streams(received: list[AssignmentInfo], me: str = "a-thread-1") -> StreamsPartitionAssignor:
    return StreamsPartitionAssignor(
        {0: ("events",)},
        {0: ()},
        lambda: SubscriptionInfo(me.split("-thread")[0], me, None, ("0_0",)),
        received.append,
    )


def subscription(
    thread: str, previous: tuple[str, ...], owned: tuple[int, ...], generation: int
) -> MemberSubscription:
    info = SubscriptionInfo(thread.split("-thread")[0], thread, None, previous)
    return MemberSubscription(
        thread,
        thread,
        ConsumerSubscription(
            version=3,
            topics=("events",),
            user_data=info.encode(),
            owned_partitions={"events": owned} if owned else {},
            generation_id=generation,
            rack_id=None,
        ),
    )


def test_subscription_and_assignment_user_data_round_trip() -> None:
    received: list[AssignmentInfo] = []
    face = MemberStreamsAssignor(streams(received))
    sent = SubscriptionInfo.decode(face.subscription_user_data() or b"", "m")
    assert sent.thread_instance_id == "a-thread-1" and sent.previous_tasks == ("0_0",)
    members = {"a-thread-1": subscription("a-thread-1", (), (), -1)}
    target = face.assign(members, {"events": 2})
    assert target == {"a-thread-1": {("events", 0), ("events", 1)}}
    face.on_assignment(face.assignment_user_data("a-thread-1"))
    assert received[-1].tasks == ("0_0", "0_1")


def test_cooperative_first_round_holds_back_what_another_member_still_owns() -> None:
    received: list[AssignmentInfo] = []
    members = {  # a owned all four in generation 5; b is new
        "a-thread-1": subscription("a-thread-1", ("0_0", "0_1", "0_2", "0_3"), (0, 1, 2, 3), 5),
        "b-thread-1": subscription("b-thread-1", (), (), -1),
    }
    face = MemberStreamsAssignor(streams(received))
    target = face.assign(members, {"events": 4})
    assert len(target["a-thread-1"]) == 2 and target["b-thread-1"] == set()
    b_info = AssignmentInfo.decode(face.assignment_user_data("b-thread-1") or b"")
    assert b_info.tasks == ()  # its tasks come in the second round
    assert b_info.followup  # ... so the rebalance is not over for anyone
    assert not AssignmentInfo.decode(b'{"tasks": [], "cluster": []}').followup
    a_info = AssignmentInfo.decode(face.assignment_user_data("a-thread-1") or b"")
    assert {("events", int(t.split("_")[1])) for t in a_info.tasks} == target["a-thread-1"]


def test_the_leader_holds_back_whatever_its_own_protocol_and_eager_members_own_nothing() -> None:
    """Mid-migration (``upgrade.from`` being removed), an eager-configured leader assigns to a
    cooperative member that kept its partitions through the join: handing them to another
    member now would let two threads process them at once, so they wait for the second round
    (Kafka Streams' assignor holds back owned partitions whatever the leader's protocol). An
    eager member revoked everything before its join and reports nothing owned: all at once."""
    received: list[AssignmentInfo] = []
    cooperative_a = {
        "a-thread-1": subscription("a-thread-1", ("0_0", "0_1", "0_2", "0_3"), (0, 1, 2, 3), 5),
        "b-thread-1": subscription("b-thread-1", (), (), -1),
    }
    target = MemberStreamsAssignor(streams(received, "b-thread-1")).assign(
        cooperative_a, {"events": 4}
    )
    assert len(target["a-thread-1"]) == 2 and target["b-thread-1"] == set()
    eager_a = {
        "a-thread-1": subscription("a-thread-1", ("0_0", "0_1", "0_2", "0_3"), (), -1),
        "b-thread-1": subscription("b-thread-1", (), (), -1),
    }
    face = MemberStreamsAssignor(streams(received))
    eager = face.assign(eager_a, {"events": 4})
    assert len(eager["a-thread-1"]) == 2 and len(eager["b-thread-1"]) == 2
    assert not AssignmentInfo.decode(face.assignment_user_data("b-thread-1") or b"").followup


@pytest.mark.parametrize(
    ("values", "protocol"),
    [
        ({}, "cooperative"),  # the default
        ({"upgrade.from": "2.3"}, "eager"),
        ({"upgrade.from": "3.9"}, "cooperative"),
    ],
)
def test_rebalance_protocol_config(values: dict[str, str], protocol: str) -> None:
    config = StreamsConfig.from_mapping({"application.id": "app", **values})
    assert config.rebalance_protocol == protocol


def test_a_bad_upgrade_from_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"upgrade\.from '2\.3\.1' must be one of"):
        StreamsConfig.from_mapping({"application.id": "app", "upgrade.from": "2.3.1"})


@pytest.mark.parametrize(
    "bad",
    [
        b'{"instance_id": "x", "thread_instance_id": "x-thread-1", "task_offsets": []}',
        b'{"instance_id": "x", "thread_instance_id": "x-thread-1", "previous_tasks": [[0]]}',
        b'{"instance_id": "x", "thread_instance_id": "x-thread-1", "previous_tasks": "0_1"}',
    ],
)
def test_a_member_with_malformed_user_data_is_a_stateless_thread(bad: bytes) -> None:
    """A member whose user data has the wrong shapes (another client, a corrupt join) must
    not stop the leader's assignment: it counts as a thread with no history."""
    received: list[AssignmentInfo] = []
    face = MemberStreamsAssignor(streams(received))
    good = subscription("a-thread-1", ("0_0",), (), -1)
    odd = MemberSubscription(
        "x-thread-1",
        None,
        ConsumerSubscription(
            version=3,
            topics=("events",),
            user_data=bad,
            owned_partitions={},
            generation_id=-1,
            rack_id=None,
        ),
    )
    decoded = SubscriptionInfo.decode(bad, "x-thread-1")
    assert decoded.previous_tasks == () and decoded.task_offsets == {}
    target = face.assign({"a-thread-1": good, "x-thread-1": odd}, {"events": 4})
    given = [tp for parts in target.values() for tp in parts]
    assert sorted(given) == [("events", p) for p in range(4)]  # each exactly once
    assert target["a-thread-1"] and target["x-thread-1"]
