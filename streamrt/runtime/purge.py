"""Purge consumed repartition records after a commit, as Kafka Streams does.

Kafka Streams owns its repartition topics: once a task has committed its input offset on one,
the records before it will never be read again, so ``TaskManager.maybePurgeCommittedRecords``
deletes them with DeleteRecords. Without it repartition topics grow forever.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.records_to_delete import RecordsToDelete
from aiokafka.structs import TopicPartition

__all__ = ("purge_repartition_records",)

logger = logging.getLogger(__name__)


async def purge_repartition_records(
    admin: AIOKafkaAdminClient,
    committed: Mapping[TopicPartition, int],
    *,
    timeout_ms: int = 30_000,
) -> dict[TopicPartition, int]:
    """DeleteRecords up to each committed offset; returns each partition's new log start offset.

    ``committed`` holds only repartition-topic partitions with the offset just committed (the
    next record to read). Partitions with a negative offset are skipped. A failed purge is
    logged and not raised: purging is housekeeping and retried after the next commit, as in
    Kafka Streams.
    """
    wanted = {tp: RecordsToDelete(offset) for tp, offset in committed.items() if offset > 0}
    if not wanted:
        return {}
    try:
        return await admin.delete_records(wanted, timeout_ms=timeout_ms)
    except Exception as exc:
        logger.warning(
            "purging repartition records failed; will retry after the next commit: %s", exc
        )
        return {}
