"""Clients started while the cluster may be briefly out of reach.

An instance (or a stream thread the supervisor replaces) that starts while its broker
restarts used to fail at once with ``KafkaConnectionError: Unable to bootstrap`` from an
aiokafka client (now: no broker reachable from streamrt's admin client), and a few such
failures in a row put the instance into ERROR. Kafka's clients keep retrying instead, bounded
by ``default.api.timeout.ms`` (60 s): so do these, with one warning naming what waits.
(librdkafka's clients need no such wait: they connect in the background and retry.)
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from streamrt.admin.client import AdminClient
from streamrt.admin.cluster import RETRIABLE
from streamrt.admin.connection import AdminConnectionError
from streamrt.errors import KafkaError
from streamrt.logs import fields

__all__ = (
    "BOOTSTRAP_TIMEOUT_S",
    "is_retriable",
    "retry_bootstrap",
    "retry_retriable",
    "started_admin",
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Kafka's ``default.api.timeout.ms`` default
BOOTSTRAP_TIMEOUT_S = 60.0


async def retry_bootstrap(
    start: Callable[[], Awaitable[None]], what: str, timeout_s: float = BOOTSTRAP_TIMEOUT_S
) -> None:
    """``start()``, again after a bootstrap that found no broker (backoff 0.1 s doubling to
    1 s) until ``timeout_s``; then its error is raised. ``start`` must be safe to call again
    after such a failure (the admin client's is: it keeps no connection that failed)."""
    deadline = time.monotonic() + timeout_s
    delay = 0.1
    warned = False
    while True:
        try:
            await start()
            return
        except AdminConnectionError as exc:
            if time.monotonic() + delay > deadline:
                raise
            if not warned:
                warned = True
                logger.warning(
                    "no broker reachable yet, retrying",
                    extra=fields(client=what, error=str(exc), timeout_s=timeout_s),
                )
        await asyncio.sleep(delay)
        delay = min(delay * 2, 1.0)


async def started_admin(
    make: Callable[[], AdminClient], timeout_s: float = BOOTSTRAP_TIMEOUT_S
) -> AdminClient:
    """``make()`` with the cluster's metadata read, retried as :func:`retry_bootstrap` does,
    with a fresh client per try (one whose bootstrap failed is closed, not reused)."""
    made: list[AdminClient] = []

    async def start() -> None:
        admin = make()
        try:
            await admin.__aenter__()
        except AdminConnectionError:
            await admin.close()
            raise
        made.append(admin)

    await retry_bootstrap(start, "admin", timeout_s)
    return made[-1]


def is_retriable(exc: BaseException) -> bool:
    """What Kafka calls retriable: a broker out of reach (its connection refused or timed
    out), a leader or controller moving."""
    if isinstance(exc, AdminConnectionError):
        return True
    return isinstance(exc, KafkaError) and exc.code in RETRIABLE


async def retry_retriable(
    call: Callable[[], Awaitable[T]], what: str, timeout_s: float = BOOTSTRAP_TIMEOUT_S
) -> T:
    """``call()``, again while it fails with an error Kafka calls retriable (a broker of the
    cluster down, a leader moving, a refused connection), with the same backoff and bound as
    :func:`retry_bootstrap`. ``call`` must be safe to repeat (it rereads what it needs). Seen
    on a 3-broker Apache Kafka: an instance restarted while one broker was down ended at its
    internal-topics step with aiokafka's ``NodeNotReadyError``."""
    deadline = time.monotonic() + timeout_s
    delay = 0.1
    while True:
        try:
            return await call()
        except (AdminConnectionError, KafkaError) as exc:
            if not is_retriable(exc) or time.monotonic() + delay > deadline:
                raise
            logger.warning(
                "a broker is not reachable, retrying",
                extra=fields(step=what, error=f"{type(exc).__name__}: {exc}", retry_in_s=delay),
            )
        await asyncio.sleep(delay)
        delay = min(delay * 2, 1.0)
