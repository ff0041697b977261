"""The admin client's transaction call, sent to the transactional id's coordinator.

InitProducerId with a transactional id: what a transactional producer's ``init_transactions``
sends first. It bumps the id's epoch, which fences an older producer with that id and makes the
coordinator abort the transaction it left open. Why the runtime sends it itself: see
:mod:`streamrt.runtime.engine.clients.txn_settle`. (Not DescribeTransactions: kio cannot decode
its answer for an id with no transaction running, whose start time is -1.)
"""

from __future__ import annotations

from streamrt.admin.cluster import Cluster
from streamrt.errors import ErrorCode, KafkaError
from streamrt.wire.api_keys import ApiKey

__all__ = ("fence_transaction",)


async def fence_transaction(cluster: Cluster, transactional_id: str, timeout_ms: int) -> bool:
    """InitProducerId for ``transactional_id``: True when a new epoch was given (nothing was
    open), False when the coordinator answered CONCURRENT_TRANSACTIONS (it is aborting, or
    completing, the open transaction: ask again once it is done)."""
    conn = await cluster.transaction_coordinator(transactional_id)
    response = await conn.call(
        ApiKey.INIT_PRODUCER_ID,
        max_version=4,
        transactional_id=transactional_id,
        transaction_timeout=timeout_ms,
        producer_id=-1,
        producer_epoch=-1,
    )
    code = ErrorCode(int(response.error_code))
    if code is ErrorCode.concurrent_transactions:
        return False
    if code is not ErrorCode.none:
        raise KafkaError(code, f"InitProducerId {transactional_id!r}")
    return True
