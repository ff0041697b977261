"""Before a transactional producer's ``init_transactions``: settle what the previous producer
with its transactional.id left open, without librdkafka's fixed 500 ms retry.

Why: after a stream thread's process is killed mid-transaction, its successor's first
InitProducerId finds the old transaction open; the coordinator fences it, starts its abort and
answers CONCURRENT_TRANSACTIONS. librdkafka then asks again on a fixed 500 ms timer
(``rd_kafka_idemp_pid_timer_restart``; Kafka's Java producer waits ``retry.backoff.ms``, 100 ms),
though the abort takes a few milliseconds; the thread's tasks wait for that producer (the
restore reads the changelogs up to their last stable offset, which the abort releases).
Measured in the bounce test: such a producer start took 541-759 ms (22-200 ms with nothing to
abort), and the tasks waited up to 490 ms for it after the join (docs/benchmarks.md).

So the thread first sends the same InitProducerId itself, through the thread's admin client
(the offsets consumer's, already connected: an admin client of its own cost each start a
connection, ApiVersions and Metadata, 8-15 ms against 3 ms measured), and asks again every
:data:`POLL_S` while the coordinator answers CONCURRENT_TRANSACTIONS (the old transaction is
being aborted, or its commit completed). Once it gets an epoch,
librdkafka's InitProducerId gets the next one at once. The id's epoch is bumped once more per
start than before; what is fenced and aborted is unchanged (what ``init_transactions`` would
fence a moment later). Best effort: on any error, or past :data:`DEADLINE_S`, it returns and
``init_transactions`` fences and waits as before.
"""

from __future__ import annotations

import asyncio
import logging

from streamrt.admin.client import AdminClient
from streamrt.errors import StreamrtError
from streamrt.logs import fields

__all__ = ("DEADLINE_S", "POLL_S", "settle_open_transaction")

logger = logging.getLogger(__name__)

#: how often the coordinator is asked whether the old transaction is complete
POLL_S = 0.02
#: past this the producer's own init_transactions takes over (it waits as long as it must)
DEADLINE_S = 5.0


async def settle_open_transaction(
    admin: AdminClient, transactional_id: str, timeout_ms: int
) -> bool:
    """Fence ``transactional_id``'s producer and wait out the transaction it left open (for
    at most :data:`DEADLINE_S`); True if the coordinator was completing one when asked."""
    answers = 0
    try:
        async with asyncio.timeout(DEADLINE_S):  # an admin call alone may retry for 60 s
            while not await admin.fence_transaction(transactional_id, timeout_ms):
                answers += 1  # CONCURRENT_TRANSACTIONS: the old transaction is completing
                await asyncio.sleep(POLL_S)
    except (StreamrtError, OSError) as exc:  # TimeoutError too; the connection's: Streamrt's
        logger.info(
            "open transaction not settled ahead of init_transactions",
            extra=fields(transactional_id=transactional_id, error=repr(exc)),
        )
        return answers > 0
    if answers:
        logger.info(
            "settled the previous producer's transaction",
            extra=fields(transactional_id=transactional_id, concurrent_answers=answers),
        )
    return answers > 0
