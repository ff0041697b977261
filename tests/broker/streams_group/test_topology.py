"""The heartbeat's kio Topology converts to the broker's frozen values, indexes and all."""

from __future__ import annotations

from kio.schema.streams_group_heartbeat.v0 import request as wire
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32

from streamrt.broker.streams_group.topology import (
    CopartitionGroup,
    StreamsTopology,
    Subtopology,
    TopicInfo,
    from_request,
)


def test_from_request_keeps_every_field() -> None:
    kv = wire.KeyValue(key="cleanup.policy", value="compact")
    request = wire.Topology(
        epoch=i32(7),
        subtopologies=(
            wire.Subtopology(
                subtopology_id="0",
                source_topics=(TopicName("orders"), TopicName("users")),
                state_changelog_topics=(
                    wire.TopicInfo(
                        name=TopicName("app-store-changelog"),
                        partitions=i32(0),
                        replication_factor=i16(0),
                        topic_configs=(kv,),
                    ),
                ),
                repartition_sink_topics=(TopicName("app-rekey-repartition"),),
                repartition_source_topics=(),
                copartition_groups=(wire.CopartitionGroup(source_topics=(i16(0), i16(1))),),
            ),
        ),
    )
    topology = from_request(request)
    sub = Subtopology(
        subtopology_id="0",
        source_topics=("orders", "users"),
        state_changelog_topics=(
            TopicInfo("app-store-changelog", 0, 0, (("cleanup.policy", "compact"),)),
        ),
        repartition_sink_topics=("app-rekey-repartition",),
        copartition_groups=(CopartitionGroup(source_topics=(0, 1)),),
    )
    assert topology == StreamsTopology(epoch=i32(7), subtopologies=(sub,))
    assert topology.subtopology("0") is not None and topology.subtopology("1") is None
    assert sub.is_stateful
    assert sub.copartitioned_topic_names(sub.copartition_groups[0]) == {"orders", "users"}
    hash(topology)  # frozen all the way down: usable as a cache key
