"""The aiokafka internals the runtime relies on are still where kafka_adapter expects them."""

from __future__ import annotations

import asyncio
import contextlib

import aiokafka
import pytest

from streamrt.runtime.engine import kafka_adapter


def test_pinned_aiokafka_internals_are_unchanged() -> None:
    problems = kafka_adapter.check_pinned_internals()
    assert not problems, (
        "aiokafka internals used by streamrt/runtime/engine/kafka_adapter.py changed:\n  "
        + "\n  ".join(problems)
    )


def test_the_check_notices_a_missing_internal(monkeypatch: pytest.MonkeyPatch) -> None:
    from aiokafka.consumer.group_coordinator import GroupCoordinator

    monkeypatch.delattr(GroupCoordinator, "_send_req")
    monkeypatch.setattr(aiokafka, "__version__", "9.9.9")
    problems = kafka_adapter.check_pinned_internals()
    assert any("_send_req" in p for p in problems)
    assert any("9.9.9" in p and kafka_adapter.AIOKAFKA_VERSION in p for p in problems)


def test_member_info_of_a_consumer_without_a_coordinator_is_none() -> None:
    assert kafka_adapter.member_id(None) is None
    assert kafka_adapter.generation(None) is None


def test_fencing_is_recognised_however_it_is_wrapped() -> None:
    inner = kafka_adapter.FencedInstanceIdError("taken")
    outer = RuntimeError("heartbeat failed")
    outer.__cause__ = inner
    assert kafka_adapter.is_fenced(outer)
    assert not kafka_adapter.is_fenced(RuntimeError("other"))


class _SwallowingConsumer:
    """The one thing isolated: aiokafka 0.14's close, whose fetch routine swallows the first
    cancel (it lands in ``suppress(CancelledError)``) and then waits on for ever."""

    def __init__(self) -> None:
        self.closed = False
        self.routine: asyncio.Task[None] | None = None

    async def _fetch_routine(self) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(3600)  # the dropped fetches' wait: a cancel here is lost
        with contextlib.suppress(asyncio.CancelledError):  # its own end: a second cancel
            await asyncio.sleep(3600)  # waiting for work that never comes

    async def stop(self) -> None:
        self.routine = asyncio.ensure_future(self._fetch_routine())
        await asyncio.sleep(0)
        self.routine.cancel()
        await self.routine
        self.closed = True


def test_a_consumer_close_stuck_on_a_swallowed_cancel_still_finishes() -> None:
    async def go() -> _SwallowingConsumer:
        consumer = _SwallowingConsumer()
        await asyncio.wait_for(
            kafka_adapter.stop_consumer(consumer, "test", stuck_after_s=0.2),  # type: ignore[arg-type]
            timeout=10,
        )
        return consumer

    consumer = asyncio.run(go())
    assert consumer.closed and consumer.routine is not None and consumer.routine.done()


def test_a_consumer_close_error_is_raised() -> None:
    class Failing:
        async def stop(self) -> None:
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        asyncio.run(kafka_adapter.stop_consumer(Failing(), "test"))  # type: ignore[arg-type]
