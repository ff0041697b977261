"""A stream thread's group membership, kept by :class:`streamrt.membership.GroupMember`.

The thread's librdkafka consumer only fetches, in manual-assign mode (``assign``/``seek``;
no subscribe, no client-side group coordinator): the member joins, syncs (the runtime's
assignor, through
:class:`~streamrt.runtime.engine.assignment.member_assignor.MemberStreamsAssignor`), heartbeats,
commits with its generation and member id, and the :class:`MemberListener` turns its callbacks into
consumer assignments and task changes. Under the cooperative protocol (the default) only
the tasks of revoked partitions stop; the others keep processing through the rebalance.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

from streamrt.admin.connection import AdminConnectionError
from streamrt.errors import ErrorCode, KafkaError
from streamrt.logs import fields
from streamrt.membership.config import CommitFailedError, FencedInstanceError, MemberConfig
from streamrt.membership.member import GroupMember, RebalanceListener
from streamrt.membership.requests import COORDINATOR_MOVED
from streamrt.runtime.engine.assignment.assignor import StreamsPartitionAssignor
from streamrt.runtime.engine.assignment.member_assignor import MemberStreamsAssignor
from streamrt.runtime.engine.clients.rdkafka_txn import GroupMetadata
from streamrt.runtime.engine.commit.commit import CommitDeferredError, TaskMigratedError
from streamrt.runtime.engine.env import ThreadEnv
from streamrt.topic_partition import TopicPartition

__all__ = ("StreamrtMembership",)

logger = logging.getLogger(__name__)

_SECURITY = ("security.", "ssl.", "sasl.")
_LOST = (ErrorCode.unknown_member_id, ErrorCode.illegal_generation)


def member_config(env: ThreadEnv, client_id: str, instance_id: str | None) -> MemberConfig:
    """The member's settings from the streams config: the group's, and the main consumer's
    client settings (``consumer.``/``main.consumer.`` prefixes or bare: timeouts, rack,
    ``metadata.max.age.ms``, TLS/SASL)."""
    cfg = env.config
    consumer = cfg.client_config().for_role("main.consumer")
    security = {k: v for k, v in consumer.items() if k.startswith(_SECURITY)}
    return MemberConfig(
        bootstrap_servers=cfg.bootstrap_servers,
        group_id=cfg.application_id,
        group_instance_id=instance_id,
        session_timeout_ms=cfg.session_timeout_ms,
        rebalance_timeout_ms=max(cfg.session_timeout_ms, 10_000),
        heartbeat_interval_ms=cfg.heartbeat_interval_ms,
        rebalance_protocol="cooperative" if cfg.rebalance_protocol == "cooperative" else "eager",
        client_id=client_id,
        client_rack=consumer.get("client.rack"),
        request_timeout_ms=int(consumer.get("request.timeout.ms", 30_000)),
        retry_backoff_ms=int(consumer.get("retry.backoff.ms", 100)),
        metadata_max_age_ms=int(consumer.get("metadata.max.age.ms", 300_000)),
        security=security,
    )


class StreamrtMembership:
    """One thread's :class:`GroupMember` and its offsets (the committers' ``GroupOffsets``)."""

    def __init__(
        self,
        env: ThreadEnv,
        client_id: str,
        instance_id: str | None,
        streams: StreamsPartitionAssignor,
    ) -> None:
        config = member_config(env, client_id, instance_id)
        topics = {t for s in env.subtopologies for t in s.source_topics}
        self.assignor = MemberStreamsAssignor(streams)
        self.member = GroupMember(config, topics, self.assignor, offsets_connection=True)
        self._start: asyncio.Task[None] | None = None
        self._lost: tuple[int, ErrorCode] | None = None  # generation migrated from, and why
        # from a join to its assignment: the generation is about to change, so a commit now
        # would be refused (a TxnOffsetCommit's refusal loses the transaction); the thread's
        # scheduled commits wait, as Kafka Streams' do while a rebalance is in progress
        self.rebalancing = False

    # -- identity ------------------------------------------------------------------------------

    @property
    def member_id(self) -> str | None:
        return self.member.member_id or None

    @property
    def generation(self) -> int:
        return self.member.generation

    @property
    def cooperative(self) -> bool:
        return self.member.cooperative

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions the member owns (revoked ones have left it)."""
        return self.member.assignment

    def group_metadata(self) -> GroupMetadata:
        """What a TxnOffsetCommit v3 carries (KIP-447): our member's generation and ids."""
        return GroupMetadata(
            self.member.generation, self.member.member_id, self.member.config.group_instance_id
        )

    # -- lifecycle -----------------------------------------------------------------------------

    async def find_coordinator(self) -> None:
        """Connect to the group coordinator now (a held hand-off successor, before release)."""
        await self.member.find_coordinator()

    async def partition_counts(self, subtopologies: Iterable[Any]) -> dict[str, int]:
        """Each source topic's partition count (the leader's changelog ends need them)."""
        topics = sorted({t for s in subtopologies for t in s.source_topics})
        try:
            return await self.member.client.partition_counts(topics)
        except Exception as exc:  # best effort, as the changelog ends themselves
            logger.info("partition counts not read", extra=fields(error=repr(exc)))
            return {}

    def start(self, listener: RebalanceListener) -> None:
        """Start joining in the background; ``listener`` hears of every assignment."""
        self.member.listener = listener
        self._start = asyncio.create_task(self.member.start(), name="streamrt-member-start")

    def raise_if_failed(self) -> None:
        """The member's group loop stopped with an error (e.g. FENCED_INSTANCE_ID): raise it."""
        if self.member.error is not None:
            raise self.member.error

    def request_rejoin(self, reason: str) -> None:
        self.member.request_rejoin(reason)

    async def retire(self) -> None:
        """Stopped for good (final commit made): no rejoin from now on; a dynamic member
        leaves, a static one keeps its session (the tasks are closed by the thread)."""
        if self._start is not None:
            self._start.cancel()
            await asyncio.gather(self._start, return_exceptions=True)
        with contextlib.suppress(Exception):
            await self.member.close(revoke=False)

    # -- offsets (GroupOffsets) ----------------------------------------------------------------

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit as the member's current generation. Refused during a rebalance
        (REBALANCE_IN_PROGRESS) while the partitions are still ours: :class:`CommitDeferredError`
        (the tasks keep the offsets and send them with the next commit, as Kafka Streams
        retries; none are kept here, where they could outlive the partitions' loss and move a
        later owner's offset back). Refused for a stale generation or an unknown member, or
        during a rebalance that took partitions: :class:`TaskMigratedError` (the partitions
        are lost, re-read elsewhere)."""
        merged = dict(offsets)
        try:
            await self.member.commit({tuple(tp): o for tp, o in merged.items()})  # type: ignore[misc]
        except CommitFailedError as exc:
            if "FENCED_INSTANCE_ID" in str(exc):
                raise FencedInstanceError(self.member.config.group_instance_id, str(exc)) from exc
            still_ours = {tuple(tp) for tp in merged} <= self.member.assignment
            if "REBALANCE_IN_PROGRESS" in str(exc) and still_ours:
                logger.info("offset commit refused, retried later", extra=fields(error=str(exc)))
                raise CommitDeferredError(str(exc)) from exc
            raise self._migrated(exc, "offset commit refused") from exc
        except (AdminConnectionError, TimeoutError) as exc:
            # the broker is gone for now (restarting, paused): Kafka Streams retries a commit
            # that timed out; the offsets go with the next one, the checkpoints wait for it
            logger.info("offset commit failed, retried later", extra=fields(error=str(exc)))
            raise CommitDeferredError(str(exc)) from exc
        except KafkaError as exc:
            if exc.code not in COORDINATOR_MOVED:
                raise
            logger.info("offset commit failed, retried later", extra=fields(error=str(exc)))
            raise CommitDeferredError(str(exc)) from exc

    async def check_generation(self) -> None:
        """Before a commit appends anything: raise :class:`TaskMigratedError` if the group
        dropped this member (a pause past ``session.timeout.ms``), so a zombie writes nothing
        after the partitions' new owner."""
        try:
            await self.member.check_membership(generation=True)
        except CommitFailedError as exc:
            raise self._migrated(exc, "membership lost before a commit") from exc
        except (AdminConnectionError, TimeoutError) as exc:  # the offset commit will tell
            logger.info("membership not checked before a commit", extra=fields(error=repr(exc)))

    def _migrated(self, exc: CommitFailedError, what: str) -> TaskMigratedError:
        logger.warning(what, extra=fields(error=str(exc), generation=self.member.generation))
        code = exc.code if exc.code in _LOST else ErrorCode.illegal_generation
        self._lost = (self.member.generation, code)
        return TaskMigratedError(f"{what}: {exc}")

    async def lose_all(self) -> None:
        """After :class:`TaskMigratedError`: the member loses its partitions (its listener
        closes their tasks dirty) and rejoins (Kafka Streams' handleLostAll, then a rejoin);
        unless its group loop already did, and may have joined a newer generation since."""
        lost, self._lost = self._lost, None
        if lost is not None and lost[0] == self.member.generation:
            await self.member.lose_membership(lost[1])

    async def committed(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The group's committed offsets; while a transaction holds offsets of these
        partitions (UNSTABLE_OFFSET_COMMIT) ask again, as Kafka's consumer does, until the
        request timeout."""
        wanted = list(partitions)
        deadline = time.monotonic() + self.member.config.request_timeout_ms / 1000
        while True:
            try:
                found = await self.member.committed(wanted)
            except KafkaError as exc:
                if exc.code != ErrorCode.unstable_offset_commit or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(self.member.config.retry_backoff_ms / 1000)
                continue
            return found

    async def check_membership(self) -> None:
        await self.member.check_membership()
