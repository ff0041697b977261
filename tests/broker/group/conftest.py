from __future__ import annotations

import pytest

from tests.broker.group.context import CoordinatorTestContext


@pytest.fixture
def context() -> CoordinatorTestContext:
    return CoordinatorTestContext()
