"""A stopping thread's final commit, without a broker (see :mod:`.rig`): only an accepted
commit makes a clean stop, which a hand-off tells its successor."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

from streamrt.runtime.engine.commit.commit import CommitDeferredError
from streamrt.topic_partition import TopicPartition
from tests.runtime.engine.rig import INPUT, rig


def test_a_deferred_final_commit_is_not_a_clean_stop(tmp_path: Path) -> None:
    """The final commit refused for now (the coordinator moving or unreachable, a rebalance):
    nothing is committed and no later commit comes, so the stop is not clean. Before, the
    thread reported a clean stop (``stopped_cleanly``) and a hand-off told its successor the
    state was clean while the input offsets were never committed."""
    r = rig(tmp_path, 1, {})

    async def refuse(offsets: Mapping[TopicPartition, int]) -> None:
        raise CommitDeferredError("COORDINATOR_NOT_AVAILABLE")

    async def scenario() -> None:
        r.assign(["0_0"])
        await r.listener.on_partitions_assigned([INPUT])
        task = r.tasks.task_for(INPUT)
        assert task is not None
        task.process("in", 41, 1000, b"k", b"v")
        r.membership.commit = refuse  # type: ignore[method-assign]
        await r.thread._final_commit(r.tasks, r.committer)
        await r.tasks.close_all()

    asyncio.run(scenario())
    assert not r.thread.stopped_cleanly
    assert ("final_commit_deferred", {"tasks": ["0_0"]}) in r.events


def test_an_accepted_final_commit_is_a_clean_stop(tmp_path: Path) -> None:
    r = rig(tmp_path, 1, {})

    async def scenario() -> None:
        r.assign(["0_0"])
        await r.listener.on_partitions_assigned([INPUT])
        task = r.tasks.task_for(INPUT)
        assert task is not None
        task.process("in", 41, 1000, b"k", b"v")
        await r.thread._final_commit(r.tasks, r.committer)
        await r.tasks.close_all()

    asyncio.run(scenario())
    assert r.thread.stopped_cleanly and r.membership.commits == [{INPUT: 42}]
