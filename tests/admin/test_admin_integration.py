"""The admin CLI and client against the real embedded broker, with real aiokafka consumers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from streamrt.admin.client import EARLIEST, LATEST, AdminClient
from streamrt.admin.models import NewTopic
from streamrt.broker.embedded import BrokerThread
from streamrt.cli import main
from tests.kafka_helpers import wait_until_async

# Static members keep their partitions through a session timeout this long; the removal must
# rebalance the group long before it (the waits below are bounded well under it).
SESSION_TIMEOUT_MS = 60_000
GROUP_OVERRIDES = {"group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1000"}


@pytest.fixture
def group_broker(broker_factory: Callable[..., BrokerThread]) -> BrokerThread:
    return broker_factory(GROUP_OVERRIDES)


async def _cli(argv: Sequence[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    """Run ``streamrt <argv> --output json`` off the loop; (exit code, parsed stdout)."""
    code = await asyncio.to_thread(main, [*argv, "--output", "json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else None


def _static_consumer(bootstrap: str, topic: str, group: str, instance: str) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        group_instance_id=instance,
        client_id=f"client-{instance}",
        session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=300,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )


def test_remove_static_member_triggers_an_immediate_rebalance(
    group_broker: BrokerThread, topic_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap, group = group_broker.bootstrap, "static-group"
    all_partitions = {TopicPartition(topic_name, p) for p in range(4)}

    async def scenario() -> None:
        async with AdminClient(bootstrap) as admin:
            assert await admin.create_topics([NewTopic(topic_name, 4, 1)]) == {topic_name: None}
        a = _static_consumer(bootstrap, topic_name, group, "inst-a")
        b = _static_consumer(bootstrap, topic_name, group, "inst-b")
        await a.start()
        await b.start()
        b_stopped = False
        try:

            async def both_assigned() -> bool:
                owned = [a.assignment(), b.assignment()]
                return all(owned) and owned[0] | owned[1] == all_partitions

            await wait_until_async(both_assigned, 20, "both static members to be assigned")

            code, described = await _cli(
                ["groups", "describe", "--bootstrap-server", bootstrap, "--group", group], capsys
            )
            assert code == 0
            (g,) = described
            assert (g["state"], g["protocol_type"]) == ("Stable", "consumer")
            members = {m["group_instance_id"]: m for m in g["members"]}
            assert set(members) == {"inst-a", "inst-b"}
            assert members["inst-a"]["client_id"] == "client-inst-a"
            assigned = [
                (topic_name, p) for m in members.values() for p in m["assignment"][topic_name]
            ]
            assert sorted(assigned) == [(topic_name, p) for p in range(4)]

            await b.stop()  # a static member sends no LeaveGroup: the group keeps waiting
            b_stopped = True
            assert a.assignment() != all_partitions

            remove = ["groups", "remove-members", "--bootstrap-server", bootstrap, "--group", group]
            code, result = await _cli(
                [*remove, "--instance-id", "inst-b", "--instance-id", "ghost"], capsys
            )
            assert code == 3
            assert result["results"]["inst-b"] is None
            assert result["results"]["ghost"]["code"] == "UNKNOWN_MEMBER_ID"

            async def survivor_owns_all() -> bool:
                return a.assignment() == all_partitions

            await wait_until_async(survivor_owns_all, 20, "the survivor to own every partition")

            code, described = await _cli(
                ["groups", "describe", "--bootstrap-server", bootstrap, "--group", group], capsys
            )
            assert [m["group_instance_id"] for m in described[0]["members"]] == ["inst-a"]
        finally:
            await a.stop()
            if not b_stopped:
                await b.stop()

    asyncio.run(scenario())


def test_offsets_and_group_lifecycle(
    group_broker: BrokerThread, topic_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap, group = group_broker.bootstrap, "offsets-group"
    tp = TopicPartition(topic_name, 0)

    async def scenario() -> None:
        async with AdminClient(bootstrap) as admin:
            await admin.create_topics([NewTopic(topic_name, 1, 1)])
            producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
            await producer.start()
            try:
                for i in range(5):
                    await producer.send_and_wait(topic_name, f"v{i}".encode(), partition=0)
            finally:
                await producer.stop()
            assert await admin.list_offsets([(topic_name, 0)], LATEST) == {(topic_name, 0): 5}
            assert await admin.list_offsets([(topic_name, 0)], EARLIEST) == {(topic_name, 0): 0}

            consumer = _static_consumer(bootstrap, topic_name, group, "inst-1")
            await consumer.start()
            try:
                consumed = 0
                while consumed < 3:
                    batch = await consumer.getmany(timeout_ms=500, max_records=3 - consumed)
                    consumed += sum(len(v) for v in batch.values())
                await consumer.commit({tp: 3})
                committed = await admin.fetch_committed_offsets(group)
                assert committed[(topic_name, 0)].offset == 3

                listing = {g.group_id: g for g in await admin.list_groups()}
                assert listing[group].protocol_type == "consumer"
                non_empty = await admin.delete_groups([group])
                assert non_empty[group] is not None
            finally:
                await consumer.stop()
            code, listed = await _cli(["groups", "list", "--bootstrap-server", bootstrap], capsys)
            assert code == 0 and group in {g["group_id"] for g in listed}
            # The static member is still in the group until removed or its session expires.
            remove = ["groups", "remove-members", "--bootstrap-server", bootstrap, "--group", group]
            code, _ = await _cli([*remove, "--instance-id", "inst-1"], capsys)
            assert code == 0
            code, deleted = await _cli(
                ["groups", "delete", "--bootstrap-server", bootstrap, "--group", group], capsys
            )
            assert code == 0 and deleted == {group: None}
            assert await admin.fetch_committed_offsets(group) == {}

    asyncio.run(scenario())


def test_topics_commands(
    group_broker: BrokerThread, topic_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap = group_broker.bootstrap
    base = ["--bootstrap-server", bootstrap, "--topic", topic_name]

    async def scenario() -> None:
        create = [
            "topics",
            "create",
            *base,
            "--partitions",
            "3",
            "--config",
            "cleanup.policy=compact",
        ]
        code, created = await _cli(create, capsys)
        assert (code, created) == (0, {topic_name: None})
        code, again = await _cli(create, capsys)
        assert code == 1 and again[topic_name]["code"] == "TOPIC_ALREADY_EXISTS"
        code, _ = await _cli([*create, "--if-not-exists"], capsys)
        assert code == 0

        code, names = await _cli(["topics", "list", "--bootstrap-server", bootstrap], capsys)
        assert code == 0 and topic_name in names
        code, described = await _cli(["topics", "describe", *base], capsys)
        assert code == 0
        (topic,) = described
        assert [p["partition"] for p in topic["partitions"]] == [0, 1, 2]
        assert topic["configs"]["cleanup.policy"] == {
            "value": "compact",
            "source": "DYNAMIC_TOPIC_CONFIG",
        }

        code, deleted = await _cli(["topics", "delete", *base], capsys)
        assert (code, deleted) == (0, {topic_name: None})
        code, missing = await _cli(["topics", "delete", *base], capsys)
        assert code == 1 and missing[topic_name]["code"] == "UNKNOWN_TOPIC_OR_PARTITION"
        code, _ = await _cli(["topics", "delete", *base, "--if-exists"], capsys)
        assert code == 0

    asyncio.run(scenario())


def test_unreachable_broker_fails_fast_with_a_clear_message(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["groups", "list", "--bootstrap-server", "127.0.0.1:1", "--timeout", "5"])
    assert code == 1
    assert "cannot connect to 127.0.0.1:1" in capsys.readouterr().err
