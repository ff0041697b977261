"""What a stream thread starts beside its join, so that the assignment finds it done.

Measured on hand-offs (docs/benchmarks.md, "Hand-off gap"): the successor's path from
``released`` to its first record was a chain of round trips, each waiting for the one before.
Two of them do not need to wait:

- under exactly_once_v2, the transactional producer's start (InitProducerId: it fences an
  older incarnation with our transactional.id and aborts that one's open transaction) took
  80-540 ms before the JoinGroup was even sent. Kafka only needs it done before this thread
  reads a changelog for a restore (read_committed: an aborted transaction releases the last
  stable offset) and before it produces; so it now runs beside JoinGroup, SyncGroup and
  OffsetFetch and is awaited before the assignment's tasks open (:meth:`producer_ready`).
- the first join's changelog-end listing (20-170 ms for a warmed hand-off successor, ~450 ms
  for a freshly started offsets consumer after a restart) starts as soon as the clients are
  up, beside the consumer's start and the coordinator lookup, or while a hand-off successor
  waits for the release; the first join then waits for it instead of listing again. The ends
  are only the group leader's lag reference for placing tasks: listed a little earlier they
  cost at most a warm-up more, as a failed listing already may (``ChangelogEnds.refresh``
  keeps the previous ends).
- the restore consumer's lookup of the changelog topics: librdkafka starts a partition of a
  topic it has no metadata for only after looking it up, and the restore did that on the path
  that opens the assigned tasks, one topic after the other (seen in the bounce test: an
  exactly-once SIGKILL's restart opened its tasks in 330-790 ms, a task's restore check
  waiting for the lookup of its changelog topic). It now runs beside the join.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

__all__ = ("StartAhead",)


class StartAhead:
    """One thread's producer start in flight and whether its changelog ends were listed."""

    def __init__(self, mark: Callable[[str], None]) -> None:
        self._mark = mark  # the thread's timeline mark
        self._producer: asyncio.Future[None] | None = None
        self._ends: asyncio.Future[None] | None = None
        self._lookup: asyncio.Future[None] | None = None

    def start_producer(self, start: Callable[[], Awaitable[None]]) -> None:
        """Run ``start()`` in the background (on the running loop); mark ``producer_started``."""

        async def started() -> None:
            await start()
            self._mark("producer_started")

        self._producer = asyncio.ensure_future(started())

    async def producer_ready(self) -> None:
        """Wait for the producer's start (raises its error); at once if nothing is starting."""
        if self._producer is not None:
            await asyncio.shield(self._producer)

    async def settle(self) -> None:
        """When the thread ends: a start still in flight finishes first (a producer is not
        closed under its own InitProducerId); its error was raised where it was awaited. A
        listing still on is dropped; a lookup still on ends first (its client is closed next)."""
        if self._lookup is not None:
            await asyncio.wait((self._lookup,))
        if self._ends is not None:
            self._ends.cancel()
            await asyncio.wait((self._ends,))
        if self._producer is None:
            return
        await asyncio.wait((self._producer,))
        with contextlib.suppress(BaseException):
            self._producer.result()

    @property
    def producer_started(self) -> bool:
        """A start was begun (so there is a producer to stop)."""
        return self._producer is not None

    def look_up(self, lookup: Callable[[], Awaitable[None]]) -> None:
        """Begin the restore consumer's changelog-topic lookup now, in the background (best
        effort: the restore looks a topic up itself if this has not)."""

        async def quietly() -> None:
            with contextlib.suppress(Exception):
                await lookup()

        self._lookup = asyncio.ensure_future(quietly())

    def list_ends(self, listing: Callable[[], Awaitable[None]]) -> None:
        """Begin the first join's changelog-end listing now, in the background."""
        self._ends = asyncio.ensure_future(listing())

    async def take_ends_listed(self) -> bool:
        """Once: wait for the listing :meth:`list_ends` began and say True (the join then
        skips its own); False if none was begun (a later rejoin lists as before)."""
        ends, self._ends = self._ends, None
        if ends is None:
            return False
        with contextlib.suppress(Exception):  # best effort, as the listing itself
            await ends
        return True
