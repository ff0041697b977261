"""The aiokafka internals the runtime relies on are still where kafka_adapter expects them."""

from __future__ import annotations

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
