"""GroupCoordinatorService over the real LogManager: append before reply, reload after restart."""

from __future__ import annotations

import asyncio
import importlib
from pathlib import Path
from typing import Any

from streamrt.broker.config import BrokerConfig
from streamrt.broker.group.service import CONSUMER_OFFSETS, GroupCoordinatorService, partition_for
from streamrt.broker.log.log_manager import LogManager
from streamrt.errors import ErrorCode
from streamrt.wire.codec import build, codec_for
from streamrt.wire.context import RequestContext

CONFIG = BrokerConfig(
    {
        "offsets.topic.num.partitions": "3",
        "group.initial.rebalance.delay.ms": "0",
        "group.min.session.timeout.ms": "10",
    }
)


def _req(api_key: int, version: int, **fields: Any) -> tuple[RequestContext, Any]:
    ctx = RequestContext(api_key, version, 7, "svc-client", "/127.0.0.1")
    return ctx, build(codec_for(api_key, version).request_cls, **fields)


def fetch_topic(name: str, partitions: list[int], version: int = 7) -> Any:
    """``build`` does not convert dicts inside nullable arrays, so build the entity here."""
    module = importlib.import_module(f"kio.schema.offset_fetch.v{version}.request")
    return build(module.OffsetFetchRequestTopic, name=name, partition_indexes=partitions)


def test_partition_for_matches_java_hashcode() -> None:
    # "group".hashCode() == 98629247 in Java; MIN_INT maps to 0 ("polygenelubricants").
    assert partition_for("group", 50) == 98629247 % 50
    assert partition_for("polygenelubricants", 50) == 0


def _join(svc: GroupCoordinatorService, instance: str) -> Any:
    return svc.handle(
        *_req(
            11,
            5,
            group_id="g",
            session_timeout=30_000,
            rebalance_timeout=30_000,
            member_id="",
            group_instance_id=instance,
            protocol_type="consumer",
            protocols=[{"name": "range", "metadata": b"meta"}],
        )
    )


def test_service_persists_group_and_offsets_and_reloads(tmp_path: Path) -> None:
    async def scenario() -> None:
        logs = LogManager(tmp_path, CONFIG)
        logs.load()
        logs.create_topic("t", 2)
        svc = GroupCoordinatorService(logs, CONFIG)
        await svc.start()
        assert logs.topics()[CONSUMER_OFFSETS].internal
        joined = await _join(svc, "i1")
        assert joined.error_code == ErrorCode.none
        member = joined.member_id
        synced = await svc.handle(
            *_req(
                14,
                3,
                group_id="g",
                generation_id=joined.generation_id,
                member_id=member,
                group_instance_id="i1",
                assignments=[{"member_id": member, "assignment": b"a1"}],
            )
        )
        assert synced.error_code == ErrorCode.none and synced.assignment == b"a1"
        commit_fields = dict(
            group_id="g",
            generation_id_or_member_epoch=joined.generation_id,
            member_id=member,
            group_instance_id="i1",
            topics=[
                {
                    "name": "t",
                    "partitions": [
                        {"partition_index": 1, "committed_offset": 42, "committed_metadata": "m"},
                        {"partition_index": 9, "committed_offset": 1, "committed_metadata": ""},
                    ],
                }
            ],
        )
        committed = await svc.handle(*_req(8, 8, **commit_fields))
        codes = [p.error_code for p in committed.topics[0].partitions]
        assert codes == [ErrorCode.none, ErrorCode.unknown_topic_or_partition]
        partition = partition_for("g", 3)
        assert logs.log(CONSUMER_OFFSETS, partition).log_end_offset >= 2
        described = await svc.handle(
            *_req(15, 5, groups=["g"], include_authorized_operations=False)
        )
        await svc.stop()

        reloaded = GroupCoordinatorService(logs, CONFIG)
        await reloaded.start()
        again = await reloaded.handle(
            *_req(15, 5, groups=["g"], include_authorized_operations=False)
        )
        assert again == described
        fetched = await reloaded.handle(*_req(9, 7, group_id="g", topics=[fetch_topic("t", [1])]))
        assert fetched.topics[0].partitions[0].committed_offset == 42
        heartbeat = await reloaded.handle(
            *_req(12, 3, group_id="g", generation_id=1, member_id=member, group_instance_id="i1")
        )
        assert heartbeat.error_code == ErrorCode.none
        metrics = reloaded.group_metrics()
        assert [(m.group_id, m.state, m.members_static) for m in metrics] == [("g", "Stable", 1)]
        await reloaded.stop()
        logs.close()

    asyncio.run(scenario())


def test_stop_answers_parked_join_not_coordinator(tmp_path: Path) -> None:
    config = CONFIG.with_overrides({"group.initial.rebalance.delay.ms": "60000"})

    async def scenario() -> None:
        logs = LogManager(tmp_path, config)
        logs.load()
        svc = GroupCoordinatorService(logs, config)
        await svc.start()
        parked = asyncio.create_task(_join(svc, "i1"))
        await asyncio.sleep(0.05)
        assert not parked.done()
        await svc.stop()
        response = await parked
        assert response.error_code == ErrorCode.not_coordinator
        after = await _join(svc, "i2")
        assert after.error_code == ErrorCode.not_coordinator
        logs.close()

    asyncio.run(scenario())


def test_before_load_completes_heartbeats_get_none_and_the_rest_load_in_progress(
    tmp_path: Path,
) -> None:
    """Kafka answers a heartbeat during load blindly; JoinGroup and commits must retry."""

    async def scenario() -> None:
        logs = LogManager(tmp_path, CONFIG)
        logs.load()
        svc = GroupCoordinatorService(logs, CONFIG)  # not started: still loading
        heartbeat = await svc.handle(
            *_req(12, 4, group_id="g", generation_id=1, member_id="m", group_instance_id="i1")
        )
        assert heartbeat.error_code == ErrorCode.none
        joined = await _join(svc, "i1")
        assert joined.error_code == ErrorCode.coordinator_load_in_progress
        await svc.start()
        joined = await _join(svc, "i1")
        assert joined.error_code == ErrorCode.none
        await svc.stop()

    asyncio.run(scenario())
