"""Create the application's internal topics before its threads join the group.

Repartition topics get their reading sub-topology's user-topic partition count (or an explicit
``repartition(n)``; see runtime.graph.copartition, which also checks join inputs); each changelog
gets its sub-topology's task count (the largest partition count of its sources), so that
changelog partition ``p`` belongs to task ``<sub>_p``. Changelogs are compacted; window and
session store changelogs are ``compact,delete`` with their retention (as Kafka Streams).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from streamrt.admin.client import AdminClient
from streamrt.admin.models import NewTopic
from streamrt.client_config import ClientConfig
from streamrt.errors import ConfigError, ErrorCode, KafkaError
from streamrt.logs import fields
from streamrt.runtime import client_settings
from streamrt.runtime.config import StreamsConfig
from streamrt.runtime.engine.clients.bootstrap import retry_retriable, started_admin
from streamrt.runtime.graph.copartition import repartition_counts, validate_copartitioning
from streamrt.runtime.graph.internal_topic_configs import (
    REPARTITION_TOPIC_CONFIG,
    changelog_config,
)
from streamrt.runtime.graph.topology import SubTopology, Topology, changelog_topic
from streamrt.runtime.instance.source_topics import wait_for_source_topics

__all__ = ("changelog_config", "ensure_internal_topics", "ensure_internal_topics_for")

logger = logging.getLogger(__name__)


async def _partition_counts(admin: AdminClient, topics: list[str]) -> dict[str, int]:
    """Partition counts of those ``topics`` that exist (all topics are listed: a metadata
    request naming a missing topic could auto-create it with the broker's default count)."""
    listed = await admin.list_topics()
    return {t: len(listed[t].partitions) for t in topics if t in listed and listed[t].partitions}


def _raise_create_errors(results: Mapping[str, KafkaError | None]) -> None:
    """CreateTopics answers per topic; an already existing topic (another instance made it
    first) is fine, any other error is the app's to report."""
    for name, error in results.items():
        if error is not None and error.code != ErrorCode.topic_already_exists:
            raise ConfigError(
                f"could not create internal topic {name}: error {int(error.code)} {error}"
            )


async def _led(admin: AdminClient, topics: Mapping[str, int]) -> set[str]:
    """Those of ``topics`` whose partitions all have a leader (a topic the metadata does not
    show whole yet is not)."""
    try:
        described = await admin.describe_topics(sorted(topics))
    except KafkaError as exc:  # e.g. LEADER_NOT_AVAILABLE for a topic just created
        logger.debug("internal topics not led yet", extra=fields(error=str(exc)))
        return set()
    return {
        name
        for name, t in described.items()
        if len([p for p in t.partitions if p.leader >= 0]) >= topics.get(name, 0)
    }


async def _wait_until_led(admin: AdminClient, topics: Mapping[str, int], wait_s: float) -> None:
    """Wait until every partition of the new ``topics`` has a leader, as Kafka Streams'
    InternalTopicManager does: a CreateTopics answer does not mean the partitions are led
    yet, and an assignment computed from metadata without them has no tasks for them."""
    deadline = asyncio.get_running_loop().time() + wait_s
    pending = dict(topics)
    while True:
        for name in await _led(admin, pending):
            pending.pop(name, None)
        if not pending:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise ConfigError(
                f"internal topics have partitions without a leader after {wait_s:g} s: "
                + ", ".join(sorted(pending))
            )
        await asyncio.sleep(0.1)


_Wanted = dict[str, tuple[int, dict[str, str]]]  # topic → (partitions, topic configs)


async def ensure_internal_topics_for(config: StreamsConfig, topology: Topology) -> None:
    """:func:`ensure_internal_topics` with an application's settings (``App.prepare``),
    repeated while a broker of the cluster is briefly out of reach (it rereads what exists)."""
    await retry_retriable(
        lambda: ensure_internal_topics(
            config.bootstrap_servers,
            config.application_id,
            topology,
            topology.subtopologies(config.application_id),
            client_config=config.client_config(),
            window_additional_retention_ms=config.windowstore_changelog_additional_retention_ms,
            replication_factor=config.replication_factor,
        ),
        "internal topics",
    )


async def ensure_internal_topics(
    bootstrap_servers: str,
    application_id: str,
    topology: Topology,
    subtopologies: list[SubTopology],
    *,
    wait_s: float = 30.0,
    client_config: ClientConfig | None = None,
    window_additional_retention_ms: int = 86_400_000,
    replication_factor: int = -1,
) -> dict[str, int]:
    """Create missing repartition and changelog topics; returns every topic's partition count.

    ``client_config``: the app's client settings (the admin client's security, timeouts).
    ``replication_factor``: of the topics created (``replication.factor``; -1: the brokers'
    ``default.replication.factor``, as Kafka Streams: CreateTopics v4+ asks for it, KIP-464).
    """
    cfg = client_config or ClientConfig({})
    client_id = f"{application_id}-admin"
    admin = await started_admin(
        lambda: client_settings.admin_client(cfg, client_id, bootstrap_servers)
    )
    try:
        repartition = set(topology.repartition_topics(application_id))
        external = [t for t in topology.source_topics(application_id) if t not in repartition]
        # Says at once which source topics are missing and how to create them, then waits.
        await wait_for_source_topics(
            bootstrap_servers,
            external,
            wait_s=wait_s,
            client_id=client_id,
            client_config=cfg,
        )
        counts = await _partition_counts(admin, external)
        wanted = _wanted_topics(
            topology, application_id, subtopologies, counts, window_additional_retention_ms
        )
        existing = await _partition_counts(admin, list(wanted))
        missing = {name: wanted[name] for name in wanted if name not in existing}
        await _create(admin, missing, replication_factor, wait_s, application_id)
        for name, (n, _cfg) in wanted.items():
            if name in existing and existing[name] != n:
                raise ConfigError(
                    f"internal topic {name} has {existing[name]} partitions, expected {n}"
                )
        counts.update({name: n for name, (n, _cfg) in wanted.items()})
        return counts
    finally:
        await admin.close()


def _wanted_topics(
    topology: Topology,
    application_id: str,
    subtopologies: list[SubTopology],
    counts: Mapping[str, int],
    window_additional_retention_ms: int,
) -> _Wanted:
    """Every internal topic with its partition count and configs: repartition topics as
    planned (the co-partitioning of join inputs checked), each changelog with its
    sub-topology's task count."""
    repartition = topology.repartition_topics(application_id)
    planned = repartition_counts(topology, application_id, subtopologies, counts)
    validate_copartitioning(topology, application_id, {**counts, **planned})
    wanted: _Wanted = {
        topic: (planned[topic], dict(REPARTITION_TOPIC_CONFIG))
        for topic in sorted(set(repartition))
    }
    for sub in subtopologies:
        tasks = max(
            (counts.get(t, wanted.get(t, (0, {}))[0]) for t in sub.source_topics), default=1
        )
        for store in sub.stores:
            wanted[changelog_topic(application_id, store)] = (
                tasks,
                changelog_config(topology, store, window_additional_retention_ms),
            )
    return wanted


async def _create(
    admin: AdminClient,
    missing: _Wanted,
    replication_factor: int,
    wait_s: float,
    application_id: str,
) -> None:
    """Create the ``missing`` topics and wait until each partition has a leader."""
    if not missing:
        return
    new = [NewTopic(name, n, replication_factor, cfg) for name, (n, cfg) in missing.items()]
    _raise_create_errors(await admin.create_topics(new))
    logger.info(
        "created internal topics",
        extra=fields(topics=[t.name for t in new], application_id=application_id),
    )
    await _wait_until_led(admin, {t.name: t.num_partitions for t in new}, wait_s)
