"""The comparison itself, without a JVM: what counts as a difference and how it reads."""

from __future__ import annotations

from tests.differential import builtins
from tests.differential.compare import first_difference, listing
from tests.differential.streamrt_side import Event

A = Event(0, "out", "a", "x", 5)


def test_identical_outputs_have_no_difference() -> None:
    assert first_difference([A], [Event(0, "out", "a", "x", 5)]) is None
    assert first_difference([], []) is None


def test_each_field_counts() -> None:
    for other in (
        Event(1, "out", "a", "x", 5),
        Event(0, "out2", "a", "x", 5),
        Event(0, "out", "b", "x", 5),
        Event(0, "out", "a", "y", 5),
        Event(0, "out", "a", "x", 6),
    ):
        assert first_difference([A], [other]) is not None, other


def test_missing_and_extra_records_are_named() -> None:
    assert first_difference([A], []) == "record 0: streamrt lacks step 0: out 'a' -> 'x' @ 5"
    extra = first_difference([], [A])
    assert extra == "record 0: streamrt has an extra step 0: out 'a' -> 'x' @ 5"
    assert "!" in listing([A], [])


def test_errors_match_by_step_only() -> None:
    assert first_difference([Event(2, error="Java")], [Event(2, error="Python")]) is None
    assert first_difference([Event(2, error="Java")], [Event(3, error="Python")]) is not None


def test_builtins_print_a_missing_side_as_java_does() -> None:
    assert builtins.joiner("concat")(None, "r") == "null+r"
    assert builtins.aggregator("concat")("k", 7, "ab") == "ab7"
    assert builtins.predicate("len>3")("k", None) is False
    assert builtins.value_mapper("upper")(None) is None
