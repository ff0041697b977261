"""configure_topics: Kafka's InternalTopicManager / RepartitionTopics / CopartitionedTopicsEnforcer
/ ChangelogTopics cases, rewritten: statuses with Kafka's detail strings, repartition counts
resolved to a fixpoint, copartitioning enforced, internal topics sized and listed for creation."""

from __future__ import annotations

import pytest

from streamrt.broker.streams_group.configured_topology import (
    InternalTopic,
    InvalidTopologyError,
    PartitionCount,
    TopologyStatus,
    configure_topics,
)
from streamrt.broker.streams_group.topology import (
    CopartitionGroup,
    StreamsTopology,
    Subtopology,
    TopicInfo,
)


def _lookup(topics: dict[str, int]) -> PartitionCount:
    return topics.get


def _two_subtopologies() -> StreamsTopology:
    """source1 -> repartition (sink); repartition + source2 (copartitioned) -> changelog2."""
    sub1 = Subtopology(
        "s1",
        source_topics=("source1",),
        repartition_sink_topics=("repartition",),
        state_changelog_topics=(TopicInfo("changelog1", configs=(("cleanup.policy", "x"),)),),
    )
    sub2 = Subtopology(
        "s2",
        source_topics=("source2",),
        repartition_source_topics=(TopicInfo("repartition", replication_factor=3),),
        state_changelog_topics=(TopicInfo("changelog2"),),
        copartition_groups=(CopartitionGroup(source_topics=(0,), repartition_source_topics=(0,)),),
    )
    return StreamsTopology(3, (sub1, sub2))


def test_missing_source_topic_is_a_status_with_kafkas_detail() -> None:
    result = configure_topics(_two_subtopologies(), _lookup({"source1": 2}))
    assert result.status is TopologyStatus.MISSING_SOURCE_TOPICS
    assert result.status_detail == "Source topics source2 are missing."
    assert not result.ready and not result.subtopology_tasks and result.epoch == 3


def test_many_missing_source_topics_are_summarized() -> None:
    subs = tuple(Subtopology(f"s{i}", source_topics=(f"t{i}",)) for i in range(5))
    result = configure_topics(StreamsTopology(1, subs), _lookup({}))
    assert result.status_detail == "Source topics t0, t1, t2 and 2 additional topics are missing."


def test_missing_internal_topics_are_sized_and_listed() -> None:
    topics = {"source1": 2, "source2": 2, "changelog2": 2}
    result = configure_topics(_two_subtopologies(), _lookup(topics))
    assert result.status is TopologyStatus.MISSING_INTERNAL_TOPICS
    assert result.status_detail == "Internal topics are missing: changelog1, repartition"
    assert result.topics_to_create == (
        # the topology's own config wins over the compact default
        InternalTopic("changelog1", 2, -1, (("cleanup.policy", "x"),)),
        InternalTopic("repartition", 2, 3, (("cleanup.policy", "delete"),)),
    )
    assert result.subtopology_tasks == {"s1": 2, "s2": 2} and not result.ready


def test_all_topics_present_is_ready() -> None:
    topics = {"source1": 2, "source2": 2, "changelog1": 2, "changelog2": 2, "repartition": 2}
    result = configure_topics(_two_subtopologies(), _lookup(topics))
    assert result.ready and result.status is None and not result.topics_to_create
    assert result.subtopologies() == ["s1", "s2"]
    assert result.max_num_input_partitions("s2") == 2
    assert result.is_stateful("s1") and result.is_stateful("s2")
    assert InternalTopic("changelog2", 2, -1, (("cleanup.policy", "compact"),)) in (
        result.internal_topics
    )


def test_existing_internal_topic_with_wrong_count_is_incorrectly_partitioned() -> None:
    topics = {"source1": 2, "source2": 2, "changelog1": 2, "changelog2": 5, "repartition": 2}
    result = configure_topics(_two_subtopologies(), _lookup(topics))
    assert result.status is TopologyStatus.INCORRECTLY_PARTITIONED_TOPICS
    assert result.status_detail == (
        "Existing topic changelog2 has different number of partitions: expected 2, found 5"
    )


def test_repartition_count_follows_the_largest_upstream_input() -> None:
    sub1 = Subtopology("s1", source_topics=("a", "b"), repartition_sink_topics=("r",))
    sub2 = Subtopology("s2", repartition_source_topics=(TopicInfo("r"),))
    result = configure_topics(StreamsTopology(1, (sub1, sub2)), _lookup({"a": 3, "b": 7}))
    assert result.topics_to_create == (InternalTopic("r", 7, -1, (("cleanup.policy", "delete"),)),)
    assert result.subtopology_tasks == {"s1": 7, "s2": 7}


def test_repartition_counts_chain_to_a_fixpoint_in_any_order() -> None:
    # s3 reads r2, written by s2 which reads r1, written by s1: listed backwards on purpose
    s1 = Subtopology("s1", source_topics=("in",), repartition_sink_topics=("r1",))
    s2 = Subtopology(
        "s2", repartition_source_topics=(TopicInfo("r1"),), repartition_sink_topics=("r2",)
    )
    s3 = Subtopology("s3", repartition_source_topics=(TopicInfo("r2"),))
    result = configure_topics(StreamsTopology(1, (s3, s2, s1)), _lookup({"in": 4}))
    assert {t.name: t.partitions for t in result.topics_to_create} == {"r1": 4, "r2": 4}


def test_explicit_repartition_count_is_kept() -> None:
    sub1 = Subtopology("s1", source_topics=("a",), repartition_sink_topics=("r",))
    sub2 = Subtopology("s2", repartition_source_topics=(TopicInfo("r", partitions=9),))
    result = configure_topics(StreamsTopology(1, (sub1, sub2)), _lookup({"a": 3}))
    assert result.subtopology_tasks == {"s1": 3, "s2": 9}
    assert result.topics_to_create[0].partitions == 9


def test_repartition_loop_is_an_invalid_topology() -> None:
    s1 = Subtopology(
        "s1", repartition_source_topics=(TopicInfo("r2"),), repartition_sink_topics=("r1",)
    )
    s2 = Subtopology(
        "s2", repartition_source_topics=(TopicInfo("r1"),), repartition_sink_topics=("r2",)
    )
    with pytest.raises(InvalidTopologyError, match="loops in the topology"):
        configure_topics(StreamsTopology(1, (s1, s2)), _lookup({}))


def test_repartition_source_that_nobody_writes_is_an_invalid_topology() -> None:
    sub = Subtopology("s1", source_topics=("a",), repartition_source_topics=(TopicInfo("r"),))
    with pytest.raises(InvalidTopologyError, match="never used as a sink topic"):
        configure_topics(StreamsTopology(1, (sub,)), _lookup({"a": 1}))


def _join(left: TopicInfo | str, right: TopicInfo | str) -> Subtopology:
    """A subtopology joining two inputs that must be copartitioned."""
    sources = tuple(t for t in (left, right) if isinstance(t, str))
    repartitions = tuple(t for t in (left, right) if isinstance(t, TopicInfo))
    group = CopartitionGroup(
        source_topics=tuple(range(len(sources))),
        repartition_source_topics=tuple(range(len(repartitions))),
    )
    return Subtopology(
        "join",
        source_topics=sources,
        repartition_source_topics=repartitions,
        copartition_groups=(group,),
    )


def _writer(sub_id: str, source: str, sink: str) -> Subtopology:
    return Subtopology(sub_id, source_topics=(source,), repartition_sink_topics=(sink,))


def test_copartitioned_source_topics_must_match() -> None:
    topology = StreamsTopology(1, (_join("a", "b"),))
    result = configure_topics(topology, _lookup({"a": 2, "b": 3}))
    assert result.status is TopologyStatus.INCORRECTLY_PARTITIONED_TOPICS
    assert result.status_detail == (
        "Following topics do not have the same number of partitions: [{a=2, b=3}]"
    )
    assert configure_topics(topology, _lookup({"a": 3, "b": 3})).ready


def test_flexible_repartition_topic_takes_the_source_count() -> None:
    # r would be sized 8 from its writer, but it is joined with a 2-partition topic
    topology = StreamsTopology(1, (_writer("w", "big", "r"), _join("a", TopicInfo("r"))))
    result = configure_topics(topology, _lookup({"big": 8, "a": 2}))
    assert {t.name: t.partitions for t in result.topics_to_create} == {"r": 2}
    assert result.subtopology_tasks == {"join": 2, "w": 8}


def test_fixed_repartition_topic_that_disagrees_with_the_source_is_reported() -> None:
    topology = StreamsTopology(
        1, (_writer("w", "big", "r"), _join("a", TopicInfo("r", partitions=4)))
    )
    result = configure_topics(topology, _lookup({"big": 8, "a": 2}))
    assert result.status is TopologyStatus.INCORRECTLY_PARTITIONED_TOPICS
    assert result.status_detail == (
        "Number of partitions [4] of repartition topic [r] doesn't match number of "
        "partitions [2] of the source topic."
    )


def test_repartition_only_group_takes_the_largest_count() -> None:
    topology = StreamsTopology(
        1,
        (
            _writer("w1", "x", "r1"),
            _writer("w2", "y", "r2"),
            _join(TopicInfo("r1"), TopicInfo("r2")),
        ),
    )
    result = configure_topics(topology, _lookup({"x": 3, "y": 5}))
    assert {t.name: t.partitions for t in result.topics_to_create} == {"r1": 5, "r2": 5}


def test_repartition_only_group_with_fixed_counts_that_differ() -> None:
    topology = StreamsTopology(
        1,
        (
            _writer("w1", "x", "r1"),
            _writer("w2", "y", "r2"),
            _join(TopicInfo("r1", partitions=2), TopicInfo("r2", partitions=3)),
        ),
    )
    result = configure_topics(topology, _lookup({"x": 3, "y": 5}))
    assert result.status is TopologyStatus.INCORRECTLY_PARTITIONED_TOPICS
    assert result.status_detail == (
        "Following topics do not have the same number of partitions: [{r1=2, r2=3}]"
    )


def test_flexible_repartition_topic_follows_a_fixed_one_in_its_group() -> None:
    topology = StreamsTopology(
        1,
        (
            _writer("w1", "x", "r1"),
            _writer("w2", "y", "r2"),
            _join(TopicInfo("r1", partitions=3), TopicInfo("r2")),
        ),
    )
    result = configure_topics(topology, _lookup({"x": 8, "y": 5}))
    assert {t.name: t.partitions for t in result.topics_to_create} == {"r1": 3, "r2": 3}


def test_fixed_repartition_topic_that_agrees_with_the_source_is_fine() -> None:
    topology = StreamsTopology(
        1, (_writer("w", "big", "r"), _join("a", TopicInfo("r", partitions=2)))
    )
    result = configure_topics(topology, _lookup({"big": 8, "a": 2}))
    assert result.status is TopologyStatus.MISSING_INTERNAL_TOPICS
    assert {t.name: t.partitions for t in result.topics_to_create} == {"r": 2}


def test_stateless_topology_without_internal_topics_is_ready_at_once() -> None:
    result = configure_topics(StreamsTopology(1, (Subtopology("s", ("a",)),)), _lookup({"a": 4}))
    assert result.ready and result.internal_topics == () and not result.is_stateful("s")
    assert result.subtopology_tasks == {"s": 4}


def test_changelog_named_like_a_source_topic_is_not_created() -> None:
    sub = Subtopology("s", source_topics=("table",), state_changelog_topics=(TopicInfo("table"),))
    result = configure_topics(StreamsTopology(1, (sub,)), _lookup({"table": 6}))
    assert result.ready and result.internal_topics == () and result.is_stateful("s")


@pytest.mark.parametrize(
    ("topology", "message"),
    [
        (StreamsTopology(1, (Subtopology("s"),)), "has no source topics"),
        (
            StreamsTopology(1, (Subtopology("s", ("a",), source_topic_regex=("a.*",)),)),
            "regular expressions for source topics are not supported yet",
        ),
        (
            StreamsTopology(1, (Subtopology("s", ("a",)), Subtopology("s", ("b",)))),
            "Duplicate subtopology id",
        ),
        (
            StreamsTopology(
                1,
                (Subtopology("s", ("a",), copartition_groups=(CopartitionGroup((0, 5)),)),),
            ),
            "source topic index 5 outside 0..0",
        ),
        (
            StreamsTopology(
                1, (Subtopology("s", ("a",), state_changelog_topics=(TopicInfo("c", -2),)),)
            ),
            r"Internal topic c of subtopology s has a negative partition count .*\(-2, 0\)",
        ),
    ],
)
def test_bad_topology_raises_a_clear_error(topology: StreamsTopology, message: str) -> None:
    with pytest.raises(InvalidTopologyError, match=message):
        configure_topics(topology, _lookup({"a": 1, "b": 1}))
