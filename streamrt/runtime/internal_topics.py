"""Create the application's internal topics before its threads join the group.

Repartition topics get the largest partition count of the external sources; each changelog
gets its sub-topology's task count (the largest partition count of its sources), so that
changelog partition ``p`` belongs to task ``<sub>_p``. Changelogs are compacted.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from streamrt.errors import ConfigError
from streamrt.logs import fields
from streamrt.runtime.source_topics import wait_for_source_topics
from streamrt.runtime.topology import SubTopology, Topology, changelog_topic

__all__ = ("ensure_internal_topics",)

logger = logging.getLogger(__name__)


async def _partition_counts(admin: AIOKafkaAdminClient, topics: list[str]) -> dict[str, int]:
    """Partition counts of those ``topics`` that exist (listed first: a metadata request for
    a missing topic could auto-create it with the broker's default partition count)."""
    present = set(await admin.list_topics()) & set(topics)
    if not present:
        return {}
    counts: dict[str, int] = {}
    for t in await admin.describe_topics(sorted(present)):
        if t.get("error_code", 0) == 0 and t["partitions"]:
            counts[t["topic"]] = len(t["partitions"])
    return counts


async def ensure_internal_topics(
    bootstrap_servers: str,
    application_id: str,
    topology: Topology,
    subtopologies: list[SubTopology],
    *,
    wait_s: float = 30.0,
    admin_kwargs: Mapping[str, Any] | None = None,
) -> dict[str, int]:
    """Create missing repartition and changelog topics; returns every topic's partition count.

    ``admin_kwargs``: extra AIOKafkaAdminClient arguments (security, timeouts).
    """
    extra = dict(admin_kwargs or {})
    admin = AIOKafkaAdminClient(
        **{**extra, "bootstrap_servers": bootstrap_servers, "client_id": f"{application_id}-admin"}
    )
    await admin.start()
    try:
        repartition = set(topology.repartition_topics(application_id))
        external = [t for t in topology.source_topics(application_id) if t not in repartition]
        # Says at once which source topics are missing and how to create them, then waits.
        await wait_for_source_topics(
            bootstrap_servers,
            external,
            wait_s=wait_s,
            client_id=f"{application_id}-admin",
            admin_kwargs=extra,
        )
        counts = await _partition_counts(admin, external)
        wanted: dict[str, tuple[int, dict[str, str]]] = {}
        width = max(counts.values(), default=1)
        for topic in sorted(repartition):
            wanted[topic] = (width, {})
        for sub in subtopologies:
            tasks = max(
                (counts.get(t, wanted.get(t, (0, {}))[0]) for t in sub.source_topics), default=1
            )
            for store in sub.stores:
                wanted[changelog_topic(application_id, store)] = (
                    tasks,
                    {"cleanup.policy": "compact"},
                )
        existing = await _partition_counts(admin, list(wanted))
        new = [
            NewTopic(name, n, 1, topic_configs=cfg)
            for name, (n, cfg) in wanted.items()
            if name not in existing
        ]
        if new:
            await admin.create_topics(new)
            logger.info(
                "created internal topics",
                extra=fields(topics=[t.name for t in new], application_id=application_id),
            )
        for name, (n, _cfg) in wanted.items():
            if name in existing and existing[name] != n:
                raise ConfigError(
                    f"internal topic {name} has {existing[name]} partitions, expected {n}"
                )
        counts.update({name: n for name, (n, _cfg) in wanted.items()})
        return counts
    finally:
        await admin.close()
