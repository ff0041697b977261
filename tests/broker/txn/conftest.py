from __future__ import annotations

import pytest

from tests.broker.txn.context import TxnTestContext


@pytest.fixture
def context() -> TxnTestContext:
    return TxnTestContext()
