"""An admin client started while the cluster may be briefly out of reach.

An instance that starts while its broker restarts (a host reboot, a deploy that bounces both,
the chaos test's instance restart during a broker kill) used to exit at once with
``KafkaConnectionError: Unable to bootstrap``. Kafka's clients keep retrying instead, bounded by
the admin client's ``default.api.timeout.ms`` (60 s): so does this, with a fresh client per try
(a client whose bootstrap failed is not reused) and one warning naming the servers.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaConnectionError

from streamrt.logs import fields

__all__ = ("BOOTSTRAP_TIMEOUT_S", "started_admin")

logger = logging.getLogger(__name__)

#: Kafka's admin ``default.api.timeout.ms`` default
BOOTSTRAP_TIMEOUT_S = 60.0


async def started_admin(
    make: Callable[[], AIOKafkaAdminClient], timeout_s: float = BOOTSTRAP_TIMEOUT_S
) -> AIOKafkaAdminClient:
    """``make()`` started; a bootstrap that finds no broker is tried again (backoff 0.1 s
    doubling to 1 s) until ``timeout_s``, then its error is raised."""
    deadline = time.monotonic() + timeout_s
    delay = 0.1
    warned = False
    while True:
        admin = make()
        try:
            await admin.start()
            return admin
        except KafkaConnectionError as exc:
            await admin.close()
            if time.monotonic() + delay > deadline:
                raise
            if not warned:
                warned = True
                logger.warning(
                    "no broker reachable yet, retrying",
                    extra=fields(error=str(exc), timeout_s=timeout_s),
                )
        await asyncio.sleep(delay)
        delay = min(delay * 2, 1.0)
