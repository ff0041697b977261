import pytest

from streamrt.spark.offsets import TopicPartition
from streamrt.spark.planning import OffsetRange, plan_offset_ranges
from streamrt.spark.reader import cap_offsets

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def test_one_range_per_partition_and_empty_ones_dropped() -> None:
    ranges = plan_offset_ranges({A0: 0, A1: 5, B0: 3}, {A0: 4, A1: 5, B0: 9}, 100)
    assert ranges == [OffsetRange("a", 0, 0, 4), OffsetRange("b", 0, 3, 9)]


def test_large_ranges_are_split_contiguously() -> None:
    ranges = plan_offset_ranges({A0: 10}, {A0: 35}, 10)
    assert [(r.start, r.end) for r in ranges] == [(10, 20), (20, 30), (30, 35)]
    assert sum(r.size for r in ranges) == 25


def test_new_partition_reads_from_zero() -> None:
    assert plan_offset_ranges({A0: 3}, {A0: 3, A1: 2}, 10) == [OffsetRange("a", 1, 0, 2)]


def test_rejects_non_positive_split_size() -> None:
    with pytest.raises(ValueError):
        plan_offset_ranges({}, {A0: 1}, 0)


def test_cap_shares_the_limit_by_backlog() -> None:
    capped = cap_offsets({A0: 0, A1: 0}, {A0: 300, A1: 100}, 100)
    assert capped == {A0: 75, A1: 25}


def test_cap_gives_every_backlogged_partition_progress() -> None:
    capped = cap_offsets({A0: 0, A1: 0}, {A0: 10_000, A1: 1}, 10)
    assert capped[A1] == 1 and capped[A0] <= 10


def test_cap_is_a_no_op_under_the_limit() -> None:
    assert cap_offsets({A0: 0}, {A0: 5, A1: 3}, 100) == {A0: 5, A1: 3}
