"""``GroupMember``: one member of a classic consumer group, as Kafka's ConsumerCoordinator.

It joins, syncs (running the assignor when it leads), heartbeats, commits and leaves, and
tells a :class:`RebalanceListener` which partitions it gained, gave up or lost; its owner fetches
them (manual assign). One asyncio task runs the group loop, so state changes only on that task.

Eager: all owned partitions are revoked before JoinGroup. Cooperative (KIP-429): they are kept
and reported in the subscription, only ``owned - new`` is revoked, and if anything was, the
member rejoins at once: a second round hands those partitions out.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import logging
from collections.abc import Awaitable, Iterable, Mapping
from typing import Any

from streamrt.admin.connection import AdminConnectionError
from streamrt.errors import ErrorCode, KafkaError
from streamrt.logs import fields
from streamrt.membership.assignment import (
    Assignor,
    MemberSubscription,
    UserDataAssignor,
    cooperative_adjust,
)
from streamrt.membership.callback_heartbeats import CallbackHeartbeats
from streamrt.membership.config import (
    CommitFailedError,
    FencedInstanceError,
    MemberConfig,
    MembershipError,
)
from streamrt.membership.loop import MemberLoop
from streamrt.membership.offsets import GroupOffsetRequests
from streamrt.membership.partition_watch import PartitionCountWatch
from streamrt.membership.protocol import (
    TopicPartition,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    flatten,
)
from streamrt.membership.requests import COORDINATOR_MOVED, CoordinatorClient

__all__ = ("Generation", "GroupMember", "RebalanceListener")

logger = logging.getLogger(__name__)

_LOST = (ErrorCode.unknown_member_id, ErrorCode.illegal_generation)


class RebalanceListener:
    """Kafka's ConsumerRebalanceListener; methods may be plain or ``async``.

    ``on_partitions_lost`` defaults to ``on_partitions_revoked``, as in Kafka: the partitions
    already belong to someone else, so nothing may be committed for them.
    """

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> Awaitable[None] | None:
        return None

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> Awaitable[None] | None:
        return None

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> Awaitable[None] | None:
        return self.on_partitions_revoked(partitions)

    def on_join_prepare(self) -> Awaitable[None] | None:
        """Just before each JoinGroup (after an eager revocation): Kafka's onJoinPrepare."""
        return None


@dataclasses.dataclass(frozen=True, slots=True)
class Generation:
    """The identity an offset commit carries; a stale one is refused (ILLEGAL_GENERATION)."""

    generation_id: int
    member_id: str
    protocol: str | None


NO_GENERATION = Generation(-1, "", None)


@dataclasses.dataclass(slots=True)
class _Joined:
    generation: int
    member_id: str
    protocol: str
    leader: bool
    members: tuple[Any, ...]
    skip_assignment: bool = False  # KIP-814: a static leader rejoining a stable group


class GroupMember(MemberLoop):
    """``member = GroupMember(config, topics, assignor, listener); await member.start()``.

    ``start`` returns once the first assignment is in; ``close`` revokes what the member owns
    and, for a dynamic member only, leaves the group (a static member's session keeps its
    partitions for it across a restart, KIP-345).
    """

    def __init__(
        self,
        config: MemberConfig,
        topics: Iterable[str],
        assignor: Assignor,
        listener: RebalanceListener | None = None,
        *,
        offsets_connection: bool = False,
    ) -> None:
        """``offsets_connection``: commits and offset fetches go on a connection of their own,
        so they never wait behind a JoinGroup the coordinator holds (a broker answers one
        request per connection at a time) and an owner can commit through a rebalance."""
        super().__init__(config)
        self.topics = tuple(sorted(set(topics)))
        self.assignor = assignor
        self.listener = listener or RebalanceListener()
        self.offsets_client = CoordinatorClient(config) if offsets_connection else self.client
        self._offsets = GroupOffsetRequests(self.offsets_client, config.group_id)
        self._generation = NO_GENERATION
        self._owned: set[TopicPartition] = set()
        self._rejoin_reason: str | None = "initial join"
        self._counts = PartitionCountWatch(self.client.partition_counts, config.metadata_max_age_ms)
        # Kafka's needsJoinPrepare: the listener's on_join_prepare runs once per rebalance; a
        # round that fails (broker down: retried every retry.backoff.ms) does not run it again
        self._needs_join_prepare = True

    # -- what the owner reads ------------------------------------------------------------

    @property
    def generation(self) -> int:
        return self._generation.generation_id

    @property
    def member_id(self) -> str:
        return self._generation.member_id

    @property
    def current_generation(self) -> Generation:
        return self._generation

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        return frozenset(self._owned)

    @property
    def cooperative(self) -> bool:
        return self.config.rebalance_protocol == "cooperative"

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the group loop and wait for the first assignment (or the loop's failure);
        bound it with ``asyncio.timeout`` (a rebalance may take the rebalance timeout)."""
        await self._start_loop(f"group-member-{self.config.group_id}")

    def request_rejoin(self, reason: str) -> None:
        """Ask for a rebalance (e.g. the subscription changed); the loop rejoins promptly."""
        self._rejoin_reason = self._rejoin_reason or reason
        self._wake.set()

    async def wait_failed(self) -> BaseException | None:
        """Wait for the group loop to end; its error (e.g. :class:`FencedInstanceError`)."""
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        return self.error

    async def close(self, *, revoke: bool = True) -> None:
        """Revoke what is owned (``revoke=False``: the owner already closed it), leave if
        dynamic, close the connections. The group loop stops first, so no rejoin follows."""
        await self._stop_loop()
        try:
            if not revoke:
                self._owned = set()
            if self._owned:
                owned, self._owned = set(self._owned), set()
                await self._call(self.listener.on_partitions_revoked, owned)
            if not self.config.static and self.member_id and self.error is None:
                with contextlib.suppress(KafkaError, AdminConnectionError, TimeoutError):
                    await self.client.leave(self.member_id, "the member is closing")
        finally:
            await self.client.close()
            if self.offsets_client is not self.client:
                await self.offsets_client.close()

    async def find_coordinator(self) -> None:
        """Look up and connect to the group coordinator now (e.g. while held before a join)."""
        await self.client.cluster.coordinator(self.config.group_id)

    async def check_membership(self, *, generation: bool = False) -> None:
        """One Heartbeat now; raise :class:`FencedInstanceError` if another member took this
        ``group.instance.id`` (an owner asks before doing something only the current
        incarnation may do); with ``generation``, :class:`CommitFailedError` if the group
        dropped this member. Other answers are left to the group loop."""
        if self.error is not None:
            raise self.error
        response = await self.offsets_client.heartbeat(self.generation, self.member_id)
        code = ErrorCode(int(response.error_code))
        self._check_fatal(code, "Heartbeat")
        if generation and code in _LOST:
            raise CommitFailedError(code, f"Heartbeat: {code.name.upper()}")

    # -- the group loop ----------------------------------------------------------------------

    async def _step(self) -> None:
        if self._rejoin_reason is not None:
            await self._rebalance(self._rejoin_reason)
            return
        await self._heartbeat()
        if (changed := await self._counts.changed()) is not None:  # as leader
            self.request_rejoin(changed)
        await self._sleep(self.config.heartbeat_interval_ms / 1000)

    async def _lose(self, why: str) -> None:
        """The membership is gone: the owned partitions may already be someone else's."""
        self._generation = dataclasses.replace(self._generation, generation_id=-1)
        if self._owned:
            lost, self._owned = set(self._owned), set()
            logger.info("partitions lost", extra=fields(why=why, partitions=sorted(lost)))
            await self._call(self.listener.on_partitions_lost, lost)

    @staticmethod
    async def _call(callback: Any, partitions: set[TopicPartition]) -> None:
        result = callback(set(partitions))
        if inspect.isawaitable(result):
            await result

    def _check_fatal(self, code: ErrorCode, what: str) -> None:
        if code == ErrorCode.fenced_instance_id:
            raise FencedInstanceError(self.config.group_instance_id, what)

    # -- heartbeat -------------------------------------------------------------------------

    async def _heartbeat(self) -> None:
        await self._on_heartbeat(await self._heartbeat_code())

    async def _heartbeat_code(self) -> ErrorCode:
        response = await self.client.heartbeat(self.generation, self.member_id)
        return ErrorCode(int(response.error_code))

    def _callback_heartbeats(self) -> CallbackHeartbeats:
        """Heartbeats while callbacks run (:mod:`~streamrt.membership.callback_heartbeats`)."""
        interval = self.config.heartbeat_interval_ms / 1000
        return CallbackHeartbeats(self._heartbeat_code, interval, self.request_rejoin)

    async def _on_heartbeat(self, code: ErrorCode) -> None:
        self._check_fatal(code, "Heartbeat")
        if code == ErrorCode.none:
            return
        if code == ErrorCode.rebalance_in_progress:
            self.request_rejoin("the group is rebalancing")
        elif code in _LOST:
            await self.lose_membership(code)
        elif code in COORDINATOR_MOVED:
            self.client.note(code)
        else:
            raise MembershipError(f"Heartbeat to group {self.config.group_id!r}: {code.name}")

    async def lose_membership(self, code: ErrorCode) -> None:
        """UNKNOWN_MEMBER_ID resets the member id (a static member keeps its instance id);
        ILLEGAL_GENERATION keeps it. Both lose the partitions and rejoin."""
        if code == ErrorCode.unknown_member_id:
            self._generation = NO_GENERATION
        await self._lose(code.name.upper())
        self.request_rejoin(code.name.upper())

    # -- rebalance ---------------------------------------------------------------------------

    async def _rebalance(self, reason: str) -> None:
        """One JoinGroup + SyncGroup round; as Kafka's ``rejoinNeeded``, the rejoin stays due
        until one completes (broker gone mid-join or mid-sync, coordinator moved: retried)."""
        assignment: set[TopicPartition] | None = None
        try:
            if not self.cooperative and self._owned:
                revoked, self._owned = set(self._owned), set()
                async with self._callback_heartbeats() as beats:
                    await self._call(self.listener.on_partitions_revoked, revoked)
                if beats.error is not None:
                    await self._on_heartbeat(beats.error)
            if self._needs_join_prepare:  # once per rebalance, not per failed round (Kafka's)
                prepared = self.listener.on_join_prepare()
                if inspect.isawaitable(prepared):
                    await prepared
                self._needs_join_prepare = False
            # a request made from here on asks for one more round; one made before (a heartbeat
            # answered REBALANCE_IN_PROGRESS while the eager revocation ran) is this JoinGroup
            self._rejoin_reason = None
            joined = await self._join(reason)
            if joined is not None:
                # Kafka's AbstractCoordinator takes the generation from the JoinGroup answer:
                # a member whose SyncGroup is refused (the group began another round) then
                # rejoins claiming its partitions in the generation the others claim theirs,
                # so the leader holds them back; with the older one its claims were ignored
                # and its partitions handed to another member while it still processed them
                self._generation = Generation(joined.generation, joined.member_id, joined.protocol)
            assignment = None if joined is None else await self._sync(joined)
        finally:
            if assignment is None:
                self._rejoin_reason = self._rejoin_reason or reason
        if joined is None or assignment is None:
            return
        self._needs_join_prepare = True
        self.rebalances += 1
        async with self._callback_heartbeats() as beats:
            await self._apply(assignment)
        if beats.error is not None:  # e.g. removed meanwhile: lost, and a rejoin
            await self._on_heartbeat(beats.error)

    def _subscription(self) -> bytes:
        owned = self._owned if self.cooperative else set()
        extra = self._user_data()
        return encode_subscription(
            self.topics,
            owned_partitions=owned,
            generation_id=self.generation if self.cooperative else -1,
            rack_id=self.config.client_rack,
            user_data=extra.subscription_user_data() if extra is not None else None,
        )

    def _user_data(self) -> UserDataAssignor | None:
        """The assignor, if it speaks through the protocol's user data."""
        a = self.assignor
        return a if hasattr(a, "subscription_user_data") else None  # type: ignore[return-value]

    async def _join(self, reason: str) -> _Joined | None:
        response = await self.client.join(
            self.member_id, self.assignor.name, self._subscription(), reason
        )
        code = ErrorCode(int(response.error_code))
        self._check_fatal(code, "JoinGroup")
        if code == ErrorCode.none:
            return _Joined(
                generation=int(response.generation_id),
                member_id=str(response.member_id),
                protocol=str(response.protocol_name),
                leader=response.leader == response.member_id,
                members=tuple(response.members),
                skip_assignment=bool(getattr(response, "skip_assignment", False)),
            )
        if code == ErrorCode.member_id_required:  # KIP-394: rejoin with the id given
            self._generation = Generation(-1, str(response.member_id), None)
        elif code in _LOST:
            await self.lose_membership(code)
        elif code in COORDINATOR_MOVED or code == ErrorCode.rebalance_in_progress:
            self.client.note(code)
            await asyncio.sleep(self.config.retry_backoff_ms / 1000)
        else:
            raise MembershipError(f"JoinGroup to group {self.config.group_id!r}: {code.name}")
        return None

    async def _sync(self, joined: _Joined) -> set[TopicPartition] | None:
        assignments: dict[str, bytes] = {}
        self._counts.forget()  # watched again only if this member assigns below
        if joined.leader and joined.skip_assignment:
            # As Kafka's ConsumerCoordinator: the group is stable and keeps its assignment (the
            # coordinator ignores a leader's SyncGroup assignments then): no metadata lookup, no
            # assignor run on the hand-off's path.
            logger.info(
                "skipped assignment for a returning static leader",
                extra=fields(generation=joined.generation),
            )
        elif joined.leader:
            assignments = await self._leader_assign(joined)
        response = await self.client.sync(
            joined.generation, joined.member_id, joined.protocol, assignments
        )
        code = ErrorCode(int(response.error_code))
        self._check_fatal(code, "SyncGroup")
        if code == ErrorCode.none:
            decoded = decode_assignment(response.assignment)
            user_data = self._user_data()
            if user_data is not None:
                user_data.on_assignment(decoded.user_data)
            return flatten(decoded.partitions)
        if code in _LOST:
            await self.lose_membership(code)
        elif code in COORDINATOR_MOVED:
            self.client.note(code)
        elif code != ErrorCode.rebalance_in_progress:
            raise MembershipError(f"SyncGroup to group {self.config.group_id!r}: {code.name}")
        else:
            logger.info(
                "SyncGroup refused: the group began another round",
                extra=fields(generation=joined.generation, owned=sorted(self._owned)),
            )
        return None

    async def _leader_assign(self, joined: _Joined) -> dict[str, bytes]:
        """Run the assignor over the members' subscriptions (and the cooperative rules)."""
        members = {
            str(m.member_id): MemberSubscription(
                str(m.member_id), m.group_instance_id, decode_subscription(m.metadata)
            )
            for m in joined.members
        }
        topics = sorted({t for m in members.values() for t in m.subscription.topics})
        counts = await self.client.partition_counts(topics)
        self._counts.assigned(topics, counts)
        target = {m: set(ps) for m, ps in self.assignor.assign(members, counts).items()}
        if self.cooperative:
            subscriptions = {m: s.subscription for m, s in members.items()}
            target = cooperative_adjust(subscriptions, target)
        logger.info(
            "leader assigned",
            extra=fields(generation=joined.generation, assignment=_sorted(target)),
        )
        extra = self._user_data()
        return {
            m: encode_assignment(
                target.get(m, set()),
                user_data=extra.assignment_user_data(m) if extra is not None else None,
            )
            for m in members
        }

    async def _apply(self, assignment: set[TopicPartition]) -> None:
        """Revoke what moved (cooperative: then a second round is due, even if a callback fails);
        partitions whose assigned callback failed are dropped and a rejoin hands them out."""
        revoked = self._owned - assignment
        added = assignment - self._owned
        if revoked and self.cooperative:
            self.request_rejoin("partitions were revoked; second round of the rebalance")
        if revoked:
            self._owned -= revoked
            await self._call(self.listener.on_partitions_revoked, revoked)
        self._owned = set(assignment)
        try:
            await self._call(self.listener.on_partitions_assigned, added)
        except Exception:
            self._owned -= added
            self.request_rejoin("the assigned callback failed")
            raise
        self._first_assignment.set()

    # -- offsets -----------------------------------------------------------------------------

    async def commit(
        self,
        offsets: Mapping[TopicPartition, int],
        *,
        generation: Generation | None = None,
        metadata: str | None = None,
    ) -> None:
        """Commit ``offsets`` as of ``generation`` (default: the current one).

        Pass the generation the records were processed in: if the group has moved on, the
        coordinator refuses it and :class:`CommitFailedError` says why (ILLEGAL_GENERATION,
        UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS or FENCED_INSTANCE_ID).
        """
        gen = generation or self._generation
        await self._offsets.commit(gen.generation_id, gen.member_id, offsets, metadata)

    async def committed(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The group's committed offsets for ``partitions`` (those with none are left out)."""
        return await self._offsets.committed(partitions)


def _sorted(assignment: Mapping[str, set[TopicPartition]]) -> dict[str, list[TopicPartition]]:
    return {m: sorted(ps) for m, ps in sorted(assignment.items())}
