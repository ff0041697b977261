"""Fixtures of the broker tests with real group clients."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from streamrt.broker.embedded import BrokerThread
from tests.broker.groups_support import start_broker


@pytest.fixture
def group_broker(tmp_path: Path) -> Iterator[BrokerThread]:
    """A broker with metrics and fast group timings, for the test_groups_* stories."""
    b = start_broker(tmp_path / "broker")
    yield b
    b.stop()
