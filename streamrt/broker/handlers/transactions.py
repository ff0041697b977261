"""Transaction APIs: handed to the transaction coordinator service; TxnOffsetCommit is verified
against the transaction, then handed to the group coordinator (KIP-447 fencing happens there)."""

from __future__ import annotations

from typing import Any

from streamrt.broker.core import ApiTable, BrokerCore
from streamrt.broker.security.txn_access import guarded
from streamrt.broker.txn.responses import error_response
from streamrt.errors import ErrorCode, KafkaError
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.context import RequestContext

__all__ = ("register",)

#: TxnOffsetCommit v0-4: v3 adds group metadata (KIP-447); v5 is transaction.version 2.
_TXN_OFFSET_COMMIT_VERSIONS = (0, 4)


async def _to_coordinator(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    if core.txn is None:
        raise KafkaError(ErrorCode.coordinator_not_available, "transaction coordinator not running")
    return await guarded(core, ctx, req, core.txn.handle)  # ACLs (security/txn_access)


async def txn_offset_commit(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    async def verified(ctx: RequestContext, req: Any) -> Any:
        return await _verified_txn_offset_commit(core, ctx, req)

    return await guarded(core, ctx, req, verified)  # ACLs first, as Kafka


async def _verified_txn_offset_commit(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    """The group's offsets partition must be in the producer's ongoing transaction (added by
    AddOffsetsToTxn) — Kafka's verification; a stale epoch gets INVALID_PRODUCER_EPOCH."""
    if core.coordinator is None or core.txn is None:
        return error_response(ctx, req, ErrorCode.coordinator_not_available)
    if req.group_id:
        code = core.txn.verify(
            req.transactional_id,
            req.producer_id,
            req.producer_epoch,
            core.txn.offsets_partition(req.group_id),
        )
        if code is ErrorCode.invalid_producer_id_mapping:
            code = ErrorCode.invalid_txn_state
        if code is not ErrorCode.none:
            return error_response(ctx, req, code)
    return await core.coordinator.handle(ctx, req)


def register(table: ApiTable, core: BrokerCore) -> None:
    """Advertise exactly the transaction APIs the running coordinators implement."""
    if core.txn is None:
        return
    for api_key, (lo, hi) in core.txn.supported_apis.items():
        table.register(api_key, lo, hi, _to_coordinator)
    if core.coordinator is not None:
        table.register(ApiKey.TXN_OFFSET_COMMIT, *_TXN_OFFSET_COMMIT_VERSIONS, txn_offset_commit)
