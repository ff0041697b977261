"""The replication factor of topics streamrt creates (changelogs, repartition, events).

Kafka Streams' ``replication.factor=-1`` means "the brokers' ``default.replication.factor``".
aiokafka speaks CreateTopics v0-3, where -1 (KIP-464, v4+) is not allowed, so the default is
read with DescribeConfigs instead. On one broker it is 1; on a production cluster usually 3.
"""

from __future__ import annotations

import logging

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from streamrt.logs import fields

__all__ = ("resolve_replication_factor",)

logger = logging.getLogger(__name__)


async def resolve_replication_factor(admin: AIOKafkaAdminClient, configured: int) -> int:
    """``configured`` if positive, else the brokers' ``default.replication.factor`` (1 when
    a broker does not answer it: every cluster accepts one replica)."""
    if configured > 0:
        return configured
    try:
        cluster = await admin.describe_cluster()
        node = str(cluster["brokers"][0]["node_id"])
        wanted = {"default.replication.factor": None}
        responses = await admin.describe_configs(
            [ConfigResource(ConfigResourceType.BROKER, node, wanted)]
        )
        for resource in responses[0].to_object()["resources"]:
            for entry in resource["config_entries"]:
                if entry["config_names"] == "default.replication.factor":
                    return max(1, int(entry["config_value"]))
    except Exception as exc:  # an old or restricted broker: one replica always works
        logger.warning(
            "cannot read default.replication.factor; creating internal topics with 1 replica",
            extra=fields(error=repr(exc)),
        )
    return 1
