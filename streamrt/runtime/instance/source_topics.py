"""Say at once which source topics an app waits for, and how to create them.

An app whose input topic does not exist cannot form its tasks (their count is the topic's
partition count), so it waits for the topic. It must not wait in silence: on a fresh broker
the first run of an example would otherwise look hung. The check lists topics (a Metadata
request for all topics), which never auto-creates one with the broker's default partition
count, as a Metadata request naming the topic could.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
from collections.abc import Iterable

from streamrt.client_config import ClientConfig
from streamrt.errors import ConfigError
from streamrt.logs import fields
from streamrt.runtime import client_settings
from streamrt.runtime.engine.clients.bootstrap import started_admin

__all__ = (
    "MissingSourceTopicsError",
    "create_command",
    "missing_source_topics",
    "wait_for_source_topics",
)

logger = logging.getLogger(__name__)


class MissingSourceTopicsError(ConfigError):
    """Source topics of the app do not exist; the message says how to create them."""

    def __init__(self, bootstrap_servers: str, missing: list[str], waited_s: float) -> None:
        self.missing = missing
        after = f" after {waited_s:g} s" if waited_s > 0 else ""
        super().__init__(
            f"source topics do not exist{after}: {', '.join(missing)}; create them with "
            + "; ".join(create_command(bootstrap_servers, t) for t in missing)
            + " (add --partitions N for N tasks)"
        )


def create_command(bootstrap_servers: str, topic: str) -> str:
    """The command that creates ``topic`` with the broker's default partition count (Kafka's
    kafka-topics.sh takes the same flags; add ``--partitions N`` for N tasks)."""
    return shlex.join(
        ["streamrt", "topics", "create", "--bootstrap-server", bootstrap_servers, "--topic", topic]
    )


async def missing_source_topics(
    bootstrap_servers: str,
    topics: Iterable[str],
    *,
    client_id: str = "streamrt-source-check",
    client_config: ClientConfig | None = None,
) -> list[str]:
    """Those of ``topics`` that do not exist on the cluster, sorted.

    ``client_config``: the app's client settings (the admin client's security, timeouts).
    """
    wanted = set(topics)
    if not wanted:
        return []
    cfg = client_config or ClientConfig({})
    admin = await started_admin(
        lambda: client_settings.admin_client(cfg, client_id, bootstrap_servers)
    )
    try:
        return sorted(wanted - set(await admin.list_topics()))
    finally:
        await admin.close()


async def wait_for_source_topics(
    bootstrap_servers: str,
    topics: Iterable[str],
    *,
    wait_s: float = 30.0,
    poll_s: float = 0.5,
    client_id: str = "streamrt-source-check",
    client_config: ClientConfig | None = None,
) -> None:
    """Return once every topic exists; log the missing ones at once, raise after ``wait_s``.

    ``wait_s=0`` checks once: a missing topic raises :class:`MissingSourceTopicsError` at once.
    """
    wanted = sorted(set(topics))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    announced: list[str] = []
    while True:
        missing = await missing_source_topics(
            bootstrap_servers, wanted, client_id=client_id, client_config=client_config
        )
        if not missing:
            if announced:
                logger.info("source topics exist now", extra=fields(topics=announced))
            return
        if loop.time() >= deadline:
            raise MissingSourceTopicsError(bootstrap_servers, missing, wait_s)
        if missing != announced:
            logger.warning(
                "waiting up to %g s for source topics that do not exist: %s; create them with %s",
                wait_s,
                ", ".join(missing),
                "; ".join(create_command(bootstrap_servers, t) for t in missing),
                extra=fields(missing=missing),
            )
            announced = missing
        await asyncio.sleep(min(poll_s, max(0.0, deadline - loop.time())))
