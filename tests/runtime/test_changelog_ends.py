"""The changelog end offsets the leader measures lag against, listed from the real broker."""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer

from streamrt.broker.embedded import BrokerThread
from streamrt.runtime.engine.restore.changelog_ends import ChangelogEnds
from tests.kafka_helpers import create_topic, produce


def test_task_ends_sum_the_ends_of_each_tasks_changelogs(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "ce-in", 2)
    for store in ("s1", "s2"):
        create_topic(broker.bootstrap, f"ce-app-{store}-changelog", 2)
    produce(broker.bootstrap, "ce-app-s1-changelog", [(b"k", b"v")] * 5, partition=0)
    produce(broker.bootstrap, "ce-app-s1-changelog", [(b"k", b"v")] * 3, partition=1)
    produce(broker.bootstrap, "ce-app-s2-changelog", [(b"k", b"v")] * 2, partition=1)
    ends = ChangelogEnds("ce-app", {0: (("ce-in",), ("s1", "s2")), 1: (("ce-in",), ())})
    assert ends.stateful
    assert ends.task_ends(["0_0", "0_1", "1_0"]) == {}  # nothing listed yet

    async def go() -> None:
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap)
        await consumer.start()
        try:
            await ends.refresh(consumer, lambda topic: {0, 1} if topic == "ce-in" else None)
        finally:
            await consumer.stop()

    asyncio.run(go())
    # the stateless sub-topology 1 has no changelog, so no end
    assert ends.task_ends(["0_0", "0_1", "1_0"]) == {"0_0": 5, "0_1": 5}


def test_a_failed_listing_keeps_the_previous_ends() -> None:
    class Down:
        async def end_offsets(self, partitions: object) -> dict[object, int]:
            raise ConnectionError("broker down")

    ends = ChangelogEnds("app", {0: (("in",), ("s",))})
    ends.ends[("app-s-changelog", 0)] = 7
    asyncio.run(ends.refresh(Down(), lambda _t: {0}))
    assert ends.task_ends(["0_0"]) == {"0_0": 7}
