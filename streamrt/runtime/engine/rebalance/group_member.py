"""GroupMember: a stream thread's side of the group protocol.

It builds the thread's :class:`StreamsPartitionAssignor`, answers its questions (what this
member reports in its subscription: previous tasks, state on disk, standbys), keeps what the
assignment says, and, as the group leader, schedules and triggers the probing rebalances of
KIP-441 when warm-up replicas were placed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from streamrt.logs import fields
from streamrt.runtime.engine.assignment.assignor import (
    AssignmentInfo,
    PlacementConfig,
    StreamsPartitionAssignor,
    SubscriptionInfo,
    TaskPlacement,
)
from streamrt.runtime.engine.env import Emit, ThreadEnv
from streamrt.runtime.engine.restore.changelog_ends import ChangelogEnds
from streamrt.runtime.engine.restore_consumer import EndOffsets
from streamrt.runtime.engine.tasks.task import TaskId
from streamrt.runtime.engine.tasks.task_manager import TaskManager
from streamrt.state import read_checkpoint_hint

__all__ = ("GroupMember", "local_task_offsets")

logger = logging.getLogger(__name__)


class GroupMember:
    """Responsibilities: the subscription, the assignment received, probing rebalances."""

    def __init__(
        self,
        env: ThreadEnv,
        member_name: str,  # group.instance.id (static) or the client id
        thread_name: str,
        emit: Emit,
        generation: Callable[[], int | None],
        tasks: Callable[[], TaskManager | None],
    ) -> None:
        self.env = env
        self.member_name = member_name
        self.thread_name = thread_name
        self.emit = emit
        self._generation = generation
        self._tasks = tasks
        self.assignment_info: AssignmentInfo | None = None
        subs = env.subtopologies
        self.changelog_ends = ChangelogEnds(  # the leader's lag reference
            env.config.application_id, {s.id: (s.source_topics, s.stores) for s in subs}
        )
        self._probe_at_ms: int | None = None  # when the leader asks for a probing rebalance

    def assignor(self) -> StreamsPartitionAssignor:
        subs, cfg = self.env.subtopologies, self.env.config
        return StreamsPartitionAssignor(
            {s.id: s.source_topics for s in subs},
            {s.id: s.stores for s in subs},
            self._subscription_info,
            self._on_assignment_info,
            self._on_leader,
            PlacementConfig(
                cfg.num_standby_replicas, cfg.acceptable_recovery_lag, cfg.max_warmup_replicas
            ),
            self._on_placement,
            self.changelog_ends.task_ends,
        )

    def _subscription_info(self) -> SubscriptionInfo:
        tasks = self._tasks()
        if tasks is not None:
            tasks.standbys.checkpoint()  # report how far the standbys are right now
        return SubscriptionInfo(
            self.env.instance_id,
            self.member_name,
            self.env.config.application_server,
            tasks.previous if tasks is not None else (),
            local_task_offsets(self.env.config.app_state_dir),
            tasks.standbys.task_ids if tasks is not None else (),
        )

    def _on_assignment_info(self, info: AssignmentInfo) -> None:
        self.assignment_info = info

    def _on_leader(self, members: int, tasks: int) -> None:
        """This thread's consumer is the group leader and just computed the assignment."""
        generation = self._generation()
        logger.info(
            "computed the group assignment as leader",
            extra=fields(
                thread=self.thread_name, generation=generation, members=members, tasks=tasks
            ),
        )
        self.emit("group_leader", generation=generation, members=members, tasks=tasks)

    async def refresh_changelog_ends(
        self,
        offsets_consumer: EndOffsets,
        partitions_of: Callable[[str], Iterable[int] | None],
    ) -> None:
        """Before joining: list the changelog ends, in case this thread leads the assignment
        (``partitions_of``: a source topic's partitions, from the membership's metadata)."""
        if self.changelog_ends.stateful:
            await self.changelog_ends.refresh(offsets_consumer, partitions_of)

    def _on_placement(self, plan: TaskPlacement) -> None:
        """As the group leader: warm-ups mean a probing rebalance is due later (KIP-441)."""
        if not plan.probing_rebalance_needed:
            self._probe_at_ms = None
            return
        due = self.env.clock.now_ms() + self.env.config.probing_rebalance_interval_ms
        self._probe_at_ms = due
        self.emit(
            "probing_rebalance_scheduled",
            warmups=plan.warmup_count,
            moved=plan.moved,
            due_ms=due,
        )

    def maybe_probe(self, rejoin: Callable[[], object]) -> None:
        """Trigger the scheduled probing rebalance: the leader rejoins, which always rebalances
        a stable group; members then report their warm-ups' offsets."""
        if self._probe_at_ms is None or self.env.clock.now_ms() < self._probe_at_ms:
            return
        self._probe_at_ms = None
        logger.info("probing rebalance", extra=fields(thread=self.thread_name))
        self.emit("probing_rebalance", generation=self._generation())
        rejoin()


def local_task_offsets(app_state_dir: Path) -> dict[str, int]:
    """Task ids with state on disk → the sum of their stores' checkpointed changelog offsets.

    Read from each task's checkpoint hint file, so no RocksDB (and no task lock) is opened. A
    task directory with stores but no hint yet counts as 0: it has state, nothing checkpointed.
    """
    out: dict[str, int] = {}
    if not app_state_dir.is_dir():
        return out
    for child in app_state_dir.iterdir():
        try:
            TaskId.parse(child.name)
        except ValueError:
            continue
        if any(p.is_dir() for p in child.iterdir()):
            out[child.name] = sum(read_checkpoint_hint(child).values())
    return out
