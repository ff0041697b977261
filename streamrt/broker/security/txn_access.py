"""ACL checks for the transaction APIs, in front of the transaction coordinator (which stays
unaware), as Kafka's ``KafkaApis`` makes them:

- InitProducerId with a transactional id, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and
  TxnOffsetCommit need WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
- AddPartitionsToTxn also WRITE on each topic; internal topics never pass. Any refused
  partition fails the request: the others answer OPERATION_NOT_ATTEMPTED;
- AddOffsetsToTxn and TxnOffsetCommit READ on the group, TxnOffsetCommit READ on each topic
  (refused topics answer TOPIC_AUTHORIZATION_FAILED, the rest is committed);
- DescribeTransactions DESCRIBE on each id (its partitions filtered by DESCRIBE on the topic),
  ListTransactions lists only the ids the caller may describe.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

from streamrt.broker.security import (
    DESCRIBE,
    GROUP,
    READ,
    TOPIC,
    TRANSACTIONAL_ID,
    WRITE,
    allowed,
)
from streamrt.errors import ErrorCode
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.error_responses import error_response as _error_response

__all__ = ("guarded", "internal_topic")

Handle = Callable[[Any, Any], Awaitable[Any]]
_TXN_AF = ErrorCode.transactional_id_authorization_failed
_GAF, _TAF = ErrorCode.group_authorization_failed, ErrorCode.topic_authorization_failed
_WRITES_TXN_ID = frozenset(
    {
        ApiKey.INIT_PRODUCER_ID,
        ApiKey.ADD_PARTITIONS_TO_TXN,
        ApiKey.ADD_OFFSETS_TO_TXN,
        ApiKey.END_TXN,
        ApiKey.TXN_OFFSET_COMMIT,
    }
)
_INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def internal_topic(name: str) -> bool:
    """Kafka's ``Topic.isInternal``: the coordinators' topics, which clients never write."""
    return name in _INTERNAL_TOPICS


async def guarded(core: Any, ctx: Any, req: Any, handle: Handle) -> Any:
    """Answer a refused request here; hand the (possibly narrowed) rest to ``handle``."""
    key = ctx.api_key
    if key in _WRITES_TXN_ID and not allowed(core, ctx, WRITE, TRANSACTIONAL_ID, _txn_id(req)):
        return error_response(ctx, req, _TXN_AF)
    reads_group = key in (ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.TXN_OFFSET_COMMIT)
    if reads_group and not allowed(core, ctx, READ, GROUP, req.group_id):
        return error_response(ctx, req, _GAF)
    if key == ApiKey.ADD_PARTITIONS_TO_TXN:
        return await _add_partitions(core, ctx, req, handle)
    if key == ApiKey.TXN_OFFSET_COMMIT:
        return await _txn_offset_commit(core, ctx, req, handle)
    if key == ApiKey.DESCRIBE_TRANSACTIONS:
        return await _describe(core, ctx, req, handle)
    if key == ApiKey.LIST_TRANSACTIONS:
        resp = await handle(ctx, req)
        visible = tuple(
            s
            for s in resp.transaction_states
            if allowed(core, ctx, DESCRIBE, TRANSACTIONAL_ID, s.transactional_id)
        )
        return dataclasses.replace(resp, transaction_states=visible)
    return await handle(ctx, req)


def error_response(ctx: Any, req: Any, code: ErrorCode) -> Any:
    """Every transaction API has a place for an error (unlike, say, a v0 heartbeat)."""
    resp = _error_response(ctx, req, code)
    assert resp is not None, f"API {ctx.api_key} has no error response"
    return resp


def _txn_id(req: Any) -> str:
    """AddPartitionsToTxn v0-3 names it ``v3_and_below_transactional_id``."""
    value = getattr(req, "transactional_id", None)
    if value is None:
        value = getattr(req, "v3_and_below_transactional_id", None)
    return str(value or "")


def _may_write(core: Any, ctx: Any, topic: str) -> bool:
    return not internal_topic(topic) and allowed(core, ctx, WRITE, TOPIC, topic)


async def _add_partitions(core: Any, ctx: Any, req: Any, handle: Handle) -> Any:
    topics = req.v3_and_below_topics
    denied = {t.name for t in topics if not _may_write(core, ctx, t.name)}
    if not denied:
        return await handle(ctx, req)
    refused = error_response(ctx, req, ErrorCode.operation_not_attempted)
    results = tuple(
        dataclasses.replace(
            r,
            results_by_partition=tuple(
                dataclasses.replace(p, partition_error_code=_TAF) for p in r.results_by_partition
            ),
        )
        if r.name in denied
        else r
        for r in refused.results_by_topic_v3_and_below
    )
    return dataclasses.replace(refused, results_by_topic_v3_and_below=results)


async def _txn_offset_commit(core: Any, ctx: Any, req: Any, handle: Handle) -> Any:
    ok = tuple(t for t in req.topics if allowed(core, ctx, READ, TOPIC, t.name))
    denied = tuple(t for t in req.topics if t not in ok)
    if not denied:
        return await handle(ctx, req)
    refused = error_response(ctx, dataclasses.replace(req, topics=denied), _TAF)
    if not ok:
        return refused
    resp = await handle(ctx, dataclasses.replace(req, topics=ok))
    return dataclasses.replace(resp, topics=tuple(resp.topics) + tuple(refused.topics))


async def _describe(core: Any, ctx: Any, req: Any, handle: Handle) -> Any:
    ids = tuple(req.transactional_ids)
    ok = tuple(i for i in ids if allowed(core, ctx, DESCRIBE, TRANSACTIONAL_ID, i))
    denied = tuple(i for i in ids if i not in ok)
    refused = error_response(ctx, dataclasses.replace(req, transactional_ids=denied), _TXN_AF)
    if not ok:
        return refused
    resp = await handle(ctx, dataclasses.replace(req, transactional_ids=ok))
    states = tuple(
        dataclasses.replace(
            s, topics=tuple(t for t in s.topics if allowed(core, ctx, DESCRIBE, TOPIC, t.topic))
        )
        for s in resp.transaction_states
    )
    return dataclasses.replace(resp, transaction_states=states + tuple(refused.transaction_states))
