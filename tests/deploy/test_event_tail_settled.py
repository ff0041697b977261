"""The deploy tools wait for a settled group, not only for RUNNING threads: a member is RUNNING
after the first of two cooperative rounds, and a second round landing after the deploy began
was counted as the deploy's rebalance (seen on a loaded CI machine)."""

from __future__ import annotations

import json
from typing import Any

from streamrt.deploy.event_tail import EventTail
from streamrt.events import events_topic
from tests.kafka_helpers import create_topic, produce, wait_until

APP = "settling"


def _complete(pid: int, thread: int, generation: int, followup: bool) -> tuple[bytes, bytes]:
    event: dict[str, Any] = {
        "v": 1,
        "ts": 1.0,
        "application_id": APP,
        "instance_id": f"i-{pid}",
        "thread": thread,
        "pid": pid,
        "type": "rebalance_complete",
        "fields": {"generation": generation, "followup": followup},
    }
    return f"i-{pid}".encode(), json.dumps(event).encode()


def test_settled_only_when_every_thread_completed_one_generation_with_no_round_due(
    broker,
) -> None:
    topic = events_topic(APP)
    create_topic(broker.bootstrap, topic, 1)
    with EventTail(broker.bootstrap, APP) as tail:
        produce(broker.bootstrap, topic, [_complete(1, 1, 2, True), _complete(2, 1, 2, False)])
        wait_until(lambda: len(tail.events()) == 2, what="the first two events")
        assert not tail.is_settled([1, 2])  # process 1's thread is owed a second round
        produce(broker.bootstrap, topic, [_complete(2, 1, 3, False)])
        wait_until(lambda: len(tail.events()) == 3, what="the third event")
        assert not tail.is_settled([1, 2])  # generations 2 and 3: still moving
        assert not tail.is_settled([1, 2, 3])  # process 3 has completed nothing
        produce(broker.bootstrap, topic, [_complete(1, 1, 3, False)])
        wait_until(lambda: len(tail.events()) == 4, what="the fourth event")
        assert tail.is_settled([1, 2])


def _assignment(pid: int, tasks: list[str]) -> tuple[bytes, bytes]:
    event: dict[str, Any] = {
        "v": 1,
        "ts": 1.0,
        "application_id": APP,
        "instance_id": f"i-{pid}",
        "thread": 1,
        "pid": pid,
        "type": "assignment",
        "fields": {"partitions": [], "tasks": tasks},
    }
    return f"i-{pid}".encode(), json.dumps(event).encode()


def test_a_streams_group_is_settled_when_every_task_is_held_once_whatever_the_epochs(
    broker,
) -> None:
    """Streams-group members keep their own epochs (one whose tasks did not change hears of
    no new group epoch), so one generation is not what settled means there."""
    topic = events_topic(APP)
    create_topic(broker.bootstrap, topic, 1)
    with EventTail(broker.bootstrap, APP) as tail:
        first = [_complete(1, 1, 1, False), _assignment(1, ["0_0", "0_1"])]
        produce(broker.bootstrap, topic, [*first, _complete(2, 1, 2, False)])
        produce(broker.bootstrap, topic, [_assignment(2, ["0_1"])])
        wait_until(lambda: len(tail.events()) == 4, what="the first four events")
        assert not tail.is_settled([1, 2])  # classic: epochs 1 and 2
        assert not tail.is_settled([1, 2], "streams")  # 0_1 held twice
        produce(broker.bootstrap, topic, [_assignment(1, ["0_0"])])
        wait_until(lambda: len(tail.events()) == 5, what="the fifth event")
        assert tail.is_settled([1, 2], "streams")
        assert not tail.is_settled([1, 2])
        assert not tail.is_settled([1], "streams")  # 0_1 held by nobody among these
