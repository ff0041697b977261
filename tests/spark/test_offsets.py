import pytest

from streamrt.errors import ConfigError
from streamrt.spark.offsets import (
    EARLIEST,
    LATEST,
    TopicPartition,
    Watermarks,
    offsets_from_json,
    offsets_to_json,
    parse_offset_spec,
    resolve_offsets,
)

MARKS = {
    TopicPartition("t", 0): Watermarks(0, 10),
    TopicPartition("t", 1): Watermarks(5, 8),
}


def test_words_parse_to_defaults() -> None:
    assert parse_offset_spec("startingOffsets", "earliest", LATEST).default == EARLIEST
    assert parse_offset_spec("startingOffsets", " LATEST ", EARLIEST).default == LATEST
    assert parse_offset_spec("startingOffsets", None, EARLIEST).default == EARLIEST


def test_json_uses_spark_conventions() -> None:
    spec = parse_offset_spec("startingOffsets", '{"t":{"0":3,"1":-2}}', EARLIEST)
    assert spec.specific == {TopicPartition("t", 0): 3, TopicPartition("t", 1): EARLIEST}
    assert resolve_offsets(spec, MARKS) == {TopicPartition("t", 0): 3, TopicPartition("t", 1): 5}


def test_partitions_missing_from_json_take_the_default() -> None:
    spec = parse_offset_spec("endingOffsets", '{"t":{"1":6}}', LATEST)
    assert resolve_offsets(spec, MARKS) == {TopicPartition("t", 0): 10, TopicPartition("t", 1): 6}


@pytest.mark.parametrize(
    "text",
    ["{not json", "[1]", '{"t":[1]}', '{"t":{"x":1}}', '{"t":{"0":-3}}', '{"t":{"0":"1"}}'],
)
def test_bad_json_names_the_option(text: str) -> None:
    with pytest.raises(ConfigError, match="option startingOffsets"):
        parse_offset_spec("startingOffsets", text, EARLIEST)


def test_out_of_range_offset_names_option_and_partition() -> None:
    spec = parse_offset_spec("startingOffsets", '{"t":{"1":4}}', EARLIEST)
    with pytest.raises(ConfigError, match=r"startingOffsets.*t-1 is out of range \[5, 8\]"):
        resolve_offsets(spec, MARKS)


def test_unknown_partition_names_option_and_partition() -> None:
    spec = parse_offset_spec("endingOffsets", '{"t":{"7":1}}', LATEST)
    with pytest.raises(ConfigError, match=r"endingOffsets: unknown topic-partition.*t-7"):
        resolve_offsets(spec, MARKS)


def test_checkpoint_json_round_trips_with_string_keys() -> None:
    offsets = {TopicPartition("a", 1): 4, TopicPartition("a", 0): 2, TopicPartition("b", 0): 9}
    as_json = offsets_to_json(offsets)
    assert as_json == {"a": {"0": 2, "1": 4}, "b": {"0": 9}}
    assert offsets_from_json(as_json) == offsets
