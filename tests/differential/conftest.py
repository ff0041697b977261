"""One Kafka Streams JVM for the whole session; the suite skips with the reason without it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.differential.oracle import Oracle, OracleUnavailable


def started_oracle() -> Iterator[Oracle]:
    """A new oracle JVM, closed afterwards; skips the test with the reason without one."""
    try:
        jvm = Oracle()
    except (OracleUnavailable, OSError) as exc:
        pytest.skip(f"Kafka Streams oracle unavailable: {exc}")
    yield jvm
    jvm.close()


@pytest.fixture(scope="session")
def oracle() -> Iterator[Oracle]:
    yield from started_oracle()
