"""The group loop of both members (classic ``GroupMember``, KIP-1071 streams member), once,
so both retry a lost connection or a moved coordinator and stop on anything else alike."""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging

from streamrt.admin.connection import AdminConnectionError
from streamrt.errors import KafkaError
from streamrt.logs import fields
from streamrt.membership.config import MemberConfig
from streamrt.membership.requests import COORDINATOR_MOVED, CoordinatorClient

__all__ = ("MemberLoop",)

logger = logging.getLogger(__name__)


class MemberLoop(abc.ABC):
    """Base of a group member: ``start``, the loop, and its wake-up, failure and stop."""

    def __init__(self, config: MemberConfig) -> None:
        self.config = config
        self.client = CoordinatorClient(config)
        self.error: BaseException | None = None
        self.rebalances = 0
        self._wake = asyncio.Event()
        self._first_assignment = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False

    @abc.abstractmethod
    async def _step(self) -> None:
        """One turn: a rebalance or a heartbeat, then the wait."""

    @abc.abstractmethod
    async def _lose(self, why: str) -> None:
        """Gone: tell the owner what it no longer owns."""

    async def _start_loop(self, name: str) -> None:
        """Start the loop and wait for the first assignment (or the loop's failure)."""
        self._task = asyncio.create_task(self._run(), name=name)
        waiter = asyncio.create_task(self._first_assignment.wait())
        try:
            await asyncio.wait({waiter, self._task}, return_when="FIRST_COMPLETED")
        finally:
            waiter.cancel()
        if self.error is not None:
            raise self.error

    async def _stop_loop(self) -> None:
        """Stop the loop first, so that no rejoin follows what the owner does next."""
        self._closing = True
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        backoff = self.config.retry_backoff_ms / 1000
        while not self._closing:
            try:
                await self._step()
            except (AdminConnectionError, TimeoutError) as exc:
                logger.debug("group request failed, retrying", extra=fields(error=str(exc)))
                self.client.cluster.forget_coordinator(self.config.group_id)
                await asyncio.sleep(backoff)
            except KafkaError as exc:
                if exc.code not in COORDINATOR_MOVED:  # FENCED_INSTANCE_ID among them
                    await self._fail(exc)
                    return
                self.client.note(exc.code)
                await asyncio.sleep(backoff)
            except Exception as exc:  # a fatal answer, a failing assignor or listener: say why
                await self._fail(exc)
                return

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)
        self._wake.clear()

    async def _fail(self, exc: BaseException) -> None:
        logger.error("group member stops", extra=fields(group=self.config.group_id, error=str(exc)))
        self.error = exc
        await self._lose(str(exc))
        self._first_assignment.set()
