"""Fetch with long polling (max wait, min bytes, per-partition and response max bytes, the
latter capped by the broker's ``fetch.max.bytes`` as in Kafka).

There are no fetch sessions (KIP-227): every response has session id 0, which tells clients
to keep sending full fetch requests. ``isolation_level=1`` (read_committed) reads stop at the
last stable offset and carry the aborted transactions of the range.

A fetch that asks for no partitions is answered at once, as Kafka's ``ReplicaManager`` does
(``fetchInfos.isEmpty``): it is how a closing consumer ends its fetch session (epoch -1, no
partitions) and waits for the answer. Holding it for ``max_wait`` made every Kafka consumer's
close 0.5 s slower, enough to push a restarting static member past ``session.timeout.ms``.

A parked fetch waits on its own partitions only (:mod:`streamrt.broker.fetch_waiters`), for at
most ``streamrt.fetch.wait.max.ms`` whatever its ``max_wait`` (Kafka has no such cap; its
clients give up on a request after ``request.timeout.ms``, 30 s by default, so a longer wait
only holds memory for an answer nobody reads), and the server cancels it when the client
closes the connection.
"""

from __future__ import annotations

from typing import Any

from streamrt.broker.core import ApiTable, BrokerCore, respond
from streamrt.broker.security import READ, TOPIC, require
from streamrt.errors import ErrorCode, KafkaError
from streamrt.wire.api_keys import ApiKey
from streamrt.wire.codec import ms
from streamrt.wire.context import RequestContext

__all__ = ("register",)


def register(table: ApiTable, core: BrokerCore) -> None:
    table.register(ApiKey.FETCH, 4, 12, fetch)


def _gather(
    core: BrokerCore, ctx: RequestContext, req: Any
) -> tuple[list[dict[str, Any]], int, bool]:
    """One pass over the requested partitions: (responses, bytes, any error).

    The response holds at most the request's ``max_bytes`` and the broker's
    ``fetch.max.bytes`` (the smaller), except that its first batch is always whole (KIP-74)."""
    budget = max(min(int(req.max_bytes), int(core.config["fetch.max.bytes"])), 0)
    read_committed = int(getattr(req, "isolation_level", 0)) == 1
    total = 0
    errors = False
    responses = []
    for topic in req.topics:
        parts = []
        for p in topic.partitions:
            entry: dict[str, Any] = {
                "partition_index": p.partition,
                "error_code": 0,
                "high_watermark": -1,
                "last_stable_offset": -1,
                "log_start_offset": -1,
                "aborted_transactions": None,
                "preferred_read_replica": -1,
                "records": b"",
            }
            try:
                require(core, ctx, READ, TOPIC, topic.topic)
                log = core.logs.log(topic.topic, p.partition)
                limit = min(int(p.partition_max_bytes), budget - total)
                sl = log.read(
                    p.fetch_offset,
                    max(limit, 0),
                    min_one=total == 0,
                    read_committed=read_committed,
                )
                aborted = sl.aborted_transactions
                entry.update(
                    high_watermark=sl.high_watermark,
                    last_stable_offset=sl.last_stable_offset,
                    log_start_offset=sl.log_start_offset,
                    aborted_transactions=None
                    if aborted is None
                    else [{"producer_id": pid, "first_offset": first} for pid, first in aborted],
                    records=sl.records,
                )
                total += len(sl.records)
            except KafkaError as exc:
                errors = True
                entry["error_code"] = exc.code
                if exc.code == ErrorCode.offset_out_of_range:
                    log = core.logs.log(topic.topic, p.partition)
                    entry.update(
                        high_watermark=log.log_end_offset,
                        last_stable_offset=log.last_stable_offset,
                        log_start_offset=log.log_start_offset,
                    )
            parts.append(entry)
        responses.append({"topic": topic.topic, "partitions": parts})
    return responses, total, errors


async def fetch(core: BrokerCore, ctx: RequestContext, req: Any) -> Any:
    wait_ms = min(max(ms(req.max_wait), 0), int(core.config["streamrt.fetch.wait.max.ms"]))
    deadline = core.clock.now_ms() + wait_ms
    partitions = [(topic.topic, p.partition) for topic in req.topics for p in topic.partitions]
    while True:
        responses, total, errors = _gather(core, ctx, req)
        remaining = deadline - core.clock.now_ms()
        enough = total >= req.min_bytes or (total > 0 and req.min_bytes <= 1)
        if not partitions or errors or enough or remaining <= 0:
            break
        await core.data_arrived.wait(partitions, remaining / 1000)
    return respond(ctx, throttle_time=0, error_code=0, session_id=0, responses=responses)
