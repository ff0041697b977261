"""The topology a streams-group member sends when it joins (``group.protocol=streams``).

Built from the same subtopologies, topic names and store names as the classic protocol uses,
so the broker's task ids ``<subtopology>_<partition>``, the state directories and the changelog
topics are the same under both protocols. Repartition topics read by a subtopology are its
repartition source topics (with their count when ``repartition(n)`` fixed one, else 0: the
broker derives it); the ones its sinks write are its repartition sink topics.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

from streamrt.membership.streams_protocol import StreamsSubtopology, StreamsTopology, TopicInfo
from streamrt.runtime.engine.env import ThreadEnv
from streamrt.runtime.graph.internal_topic_configs import REPARTITION_TOPIC_CONFIG, changelog_config
from streamrt.runtime.graph.topology import SinkNode, SourceNode, SubTopology, changelog_topic

__all__ = ("PROCESS_FILE", "process_id", "streams_topology")

#: Kafka Streams keeps its process id in this file of the application's state directory.
PROCESS_FILE = "kafka-streams-process-metadata"


def streams_topology(env: ThreadEnv) -> StreamsTopology:
    """The application's topology in KIP-1071's terms, subtopology ids ``"0"``, ``"1"``..."""
    return StreamsTopology(tuple(_subtopology(env, sub) for sub in env.subtopologies))


def _subtopology(env: ThreadEnv, sub: SubTopology) -> StreamsSubtopology:
    app, topology = env.config.application_id, env.topology
    sources: list[str] = []
    repartition: list[TopicInfo] = []
    by_node: dict[str, str] = {}
    sinks: list[str] = []
    for name in sub.nodes:
        node = topology.nodes[name]
        if isinstance(node, SourceNode):
            topic = topology.topic_of(node, app)
            by_node[name] = topic
            if node.internal and all(t.name != topic for t in repartition):
                info = TopicInfo(topic, node.partitions or 0, REPARTITION_TOPIC_CONFIG)
                repartition.append(info)
            elif not node.internal and topic not in sources:
                sources.append(topic)
        elif isinstance(node, SinkNode) and node.internal:
            sinks.append(topology.topic_of(node, app))
    extra_ms = env.config.windowstore_changelog_additional_retention_ms
    changelogs = tuple(
        TopicInfo(changelog_topic(app, store), 0, changelog_config(topology, store, extra_ms))
        for store in sub.stores
    )
    groups = []
    names = [t.name for t in repartition]
    for group in topology.copartition_groups:
        topics = {by_node[n] for n in group if n in by_node}
        if len(topics) > 1:
            groups.append(
                (
                    tuple(sorted(sources.index(t) for t in topics if t in sources)),
                    tuple(sorted(names.index(t) for t in topics if t in names)),
                )
            )
    return StreamsSubtopology(
        str(sub.id),
        tuple(sources),
        tuple(dict.fromkeys(sinks)),
        tuple(repartition),
        changelogs,
        tuple(groups),
    )


def process_id(app_state_dir: Path) -> str:
    """This process's id in the group: a UUID kept in the application's state directory, so a
    restarted instance is the same process to the broker's sticky assignor (as Kafka Streams'
    ``processId``). Every thread of the instance reads the same file; the first one writes it."""
    app_state_dir.mkdir(parents=True, exist_ok=True)
    path = app_state_dir / PROCESS_FILE
    try:
        return _read(path)
    except FileNotFoundError:
        corrupt = False
    except (OSError, ValueError, KeyError, TypeError):
        corrupt = True  # rewritten: a new id only costs this process its stickiness
    fresh = str(uuid.uuid4())
    tmp = path.with_name(f"{PROCESS_FILE}.{fresh}")
    tmp.write_text(json.dumps({"processId": fresh}))
    try:
        if corrupt:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # atomic: only the first writer's id is kept
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return _read(path)


def _read(path: Path) -> str:
    return str(uuid.UUID(json.loads(path.read_text())["processId"]))
