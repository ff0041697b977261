"""Hypothesis strategies for property-based scenarios: one family per operator group, with
random keys (a null key now and then), out-of-order and late timestamps, deletes (null values)
and wall-clock advances. A drawn scenario has the fixed scenarios' shape, so a shrunk
counterexample is saved as a fixed scenario file."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

# Few keys (so records meet in joins and aggregates), a null key or value now and then, and
# timestamps in a short range (so windows overlap, and records come late and out of order).
KEYS = st.sampled_from(["a", "a", "b", "b", "c", None])
WORDS = st.sampled_from(["ab", "abcd", "b", "bcde", "cat", None])
TIMES = st.integers(min_value=0, max_value=30)

Node = dict[str, Any]
Topology = list[Node]


def _steps(topics: list[str], values: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Any]]:
    """Rounds of one record on every input topic (in a drawn order, so joins meet), and now
    and then a wall-clock advance."""

    def pipe(topic: str) -> st.SearchStrategy[dict[str, Any]]:
        return st.fixed_dictionaries(
            {"pipe": st.just(topic), "key": KEYS, "value": values, "ts": TIMES}
        )

    rounds = st.permutations(topics).flatmap(lambda order: st.tuples(*map(pipe, order)))
    advance = st.fixed_dictionaries({"advance_ms": st.sampled_from([1_000, 60_000])})
    chunk = st.one_of(rounds.map(list), rounds.map(list), advance.map(lambda a: [a]))
    chunks = st.lists(chunk, min_size=8 // len(topics), max_size=24 // len(topics))
    return chunks.map(lambda parts: [step for part in parts for step in part])


def scenario_name(family: str, topology: Topology, steps: list[dict[str, Any]]) -> str:
    """``<family>-<digest of the content>``: a saved counterexample's file name."""
    body = {"topology": topology, "steps": steps}
    return f"{family}-{hashlib.sha1(json.dumps(body, sort_keys=True).encode()).hexdigest()[:8]}"


def _scenario(
    family: str,
    topology: st.SearchStrategy[Topology],
    topics: list[str],
    values: st.SearchStrategy[Any] = WORDS,
) -> st.SearchStrategy[dict[str, Any]]:
    def named(parts: tuple[Topology, list[dict[str, Any]]]) -> dict[str, Any]:
        return {
            "name": scenario_name(family, parts[0], parts[1]),
            "description": f"found by the {family} property (tests/differential/properties.py)",
            "topology": parts[0],
            "steps": parts[1],
        }

    return st.tuples(topology, _steps(topics, values)).map(named)


IN: Node = {"op": "stream", "topic": "in"}
TO_STREAM: Node = {"op": "toStream"}
TO: Node = {"op": "to", "topic": "out"}
# Sizes and graces from short lists, not st.integers: Hypothesis favours 0 and 1, which make
# windows too small for records to meet.
GRACE = st.sampled_from([None, 0, 2, 5, 10])
SIZES = st.sampled_from([5, 10, 3, 20, 1])


def _window() -> st.SearchStrategy[dict[str, Any]]:
    def make(kind: str, size: int, advance: int, grace: int | None) -> dict[str, Any]:
        w: dict[str, Any] = {"type": kind}
        if kind in ("tumbling", "hopping"):
            w["size_ms"] = size
        if kind == "hopping":
            w["advance_ms"] = max(1, min(advance, size))
        if kind == "sliding":
            w["diff_ms"] = size
        if kind == "session":
            w["gap_ms"] = size
        if grace is not None:
            w["grace_ms"] = grace
        return w

    kinds = st.sampled_from(["tumbling", "hopping", "sliding", "session"])
    return st.builds(make, kinds, SIZES, SIZES, GRACE)


def stateless() -> st.SearchStrategy[dict[str, Any]]:
    ops = st.sampled_from(
        [
            {"op": "filter", "fn": "len>3"},
            {"op": "mapValues", "fn": "upper"},
            {"op": "selectKey", "fn": "firstChar"},
            {"op": "flatMapValues", "fn": "words"},
            {"op": "map", "fn": "swap"},
        ]
    )
    topology = st.lists(ops, min_size=1, max_size=3).map(lambda chain: [IN, *chain, TO])
    return _scenario("stateless", topology, ["in"])


def windowed_aggregation() -> st.SearchStrategy[dict[str, Any]]:
    def make(window: dict[str, Any], emit: str) -> Topology:
        count: Node = {"op": "count"} if emit == "update" else {"op": "count", "emit": emit}
        grouped: Node = {"op": "windowedBy", "window": window}
        return [IN, {"op": "groupByKey"}, grouped, count, TO_STREAM, TO]

    emits = st.sampled_from(["update", "update", "on_window_close"])
    return _scenario("windowed-aggregation", st.builds(make, _window(), emits), ["in"])


def suppress() -> st.SearchStrategy[dict[str, Any]]:
    def make(window: dict[str, Any], limit: int, final: bool) -> Topology:
        if final:
            windowed = {"op": "windowedBy", "window": window}
            sup: Node = {"op": "suppress", "until": "window_close"}
            return [IN, {"op": "groupByKey"}, windowed, {"op": "count"}, sup, TO_STREAM, TO]
        sup = {"op": "suppress", "until": "time_limit", "ms": limit}
        return [IN, {"op": "groupByKey"}, {"op": "count"}, sup, TO_STREAM, TO]

    limits = st.sampled_from([5, 10, 0, 20])
    return _scenario("suppress", st.builds(make, _window(), limits, st.booleans()), ["in"])


def table_aggregation() -> st.SearchStrategy[dict[str, Any]]:
    aggs = st.sampled_from(
        [
            {"op": "count"},
            {"op": "aggregate", "init": "empty", "adder": "concat", "subtractor": "remove"},
        ]
    )
    table: Node = {"op": "table", "topic": "in"}
    group: Node = {"op": "groupBy", "fn": "valueFirstChar"}
    topology = aggs.map(lambda agg: [table, group, agg, TO_STREAM, TO])
    return _scenario("table-aggregation", topology, ["in"])


def table_transform_values() -> st.SearchStrategy[dict[str, Any]]:
    """``KTable.transformValues`` (countCalls shows every transform call), materialized or
    not, read downstream as a changelog, re-grouped (old values) or by a join's getter."""

    def make(fn: str, store: bool, read: str) -> Topology:
        tv: Node = {"id": "tv", "op": "transformValues", "from": "t", "fn": fn}
        if store:
            tv["store"] = "tv-store"
        regroup: Node = {"op": "groupBy", "from": "tv", "fn": "valueFirstChar"}
        reads = {
            "toStream": [{**TO_STREAM, "from": "tv"}, TO],
            "regroup": [regroup, {"op": "count"}, TO_STREAM, TO],
            "join": [_join("leftJoin", "tv"), TO],
        }
        stream = [LEFT, {"op": "to", "from": "l", "topic": "out-left"}]  # "left" always read
        return [{"id": "t", "op": "table", "topic": "tab"}, tv, *stream, *reads[read]]

    functions = st.sampled_from(["countCalls", "keyConcat"])
    reads = st.sampled_from(["toStream", "regroup", "join"])
    topology = st.builds(make, functions, st.booleans(), reads)
    return _scenario("table-transform-values", topology, ["tab", "left"])


def stream_partitioner() -> st.SearchStrategy[dict[str, Any]]:
    """Stream partitioners at ``to`` and ``repartition`` (the driver's one partition: a
    multicast is duplicates, a drop a missing record), counted after the repartition."""
    partitioners = st.sampled_from(
        ["default", "drop", "partitions:0", "partitions:0,1,2", "dropKey:a", "dupKey:b"]
    )

    def make(at_to: str, at_repartition: str, objects: bool) -> Topology:
        s: Node = {"id": "s", "op": "stream", "topic": "in"}
        moved: Node = {"op": "repartition", "from": "s", "name": "r", "objects": objects}
        return [
            s,
            {"op": "to", "from": "s", "topic": "out-to", "partitioner": at_to},
            {**moved, "partitioner": at_repartition},
            {"op": "groupByKey"},
            {"op": "count"},
            TO_STREAM,
            TO,
        ]

    topology = st.builds(make, partitioners, partitioners, st.booleans())
    return _scenario("stream-partitioner", topology, ["in"])


LEFT: Node = {"id": "l", "op": "stream", "topic": "left"}
RIGHT: Node = {"id": "r", "op": "stream", "topic": "right"}


def _join(op: str, other: str = "r", **params: Any) -> Node:
    return {"op": op, "from": "l", "other": other, "joiner": "concat", **params}


def stream_table_join() -> st.SearchStrategy[dict[str, Any]]:
    table: Node = {"id": "t", "op": "table", "topic": "tab"}
    topology = st.sampled_from(["join", "leftJoin"]).map(
        lambda op: [LEFT, table, _join(op, "t"), TO]
    )
    return _scenario("stream-table-join", topology, ["left", "tab"])


def _join_window() -> st.SearchStrategy[dict[str, Any]]:
    def make(diff: int, grace: int | None, before: int | None, after: int | None) -> Node:
        w: dict[str, Any] = {"diff_ms": diff}
        for name, value in (("grace_ms", grace), ("before_ms", before), ("after_ms", after)):
            if value is not None:
                w[name] = value
        return w

    sides = st.sampled_from([None, None, 0, 3, 10])
    return st.builds(make, st.sampled_from([5, 10, 15, 2, 0]), GRACE, sides, sides)


def _stream_stream(family: str, ops: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    topology = st.builds(
        lambda op, w: [LEFT, RIGHT, _join(op, window=w), TO], st.sampled_from(ops), _join_window()
    )
    return _scenario(family, topology, ["left", "right"])


def stream_stream_inner_join() -> st.SearchStrategy[dict[str, Any]]:
    return _stream_stream("stream-stream-inner-join", ["join"])


def stream_stream_outer_join() -> st.SearchStrategy[dict[str, Any]]:
    return _stream_stream("stream-stream-outer-join", ["leftJoin", "outerJoin"])


def table_table_join() -> st.SearchStrategy[dict[str, Any]]:
    tables = [
        {"id": "l", "op": "table", "topic": "left"},
        {"id": "r", "op": "table", "topic": "right"},
    ]
    topology = st.sampled_from(["join", "leftJoin", "outerJoin"]).map(
        lambda op: [*tables, _join(op), TO_STREAM, TO]
    )
    return _scenario("table-table-join", topology, ["left", "right"])


def fk_join() -> st.SearchStrategy[dict[str, Any]]:
    tables = [
        {"id": "l", "op": "table", "topic": "left"},
        {"id": "r", "op": "table", "topic": "right"},
    ]
    topology = st.sampled_from(["join", "leftJoin"]).map(
        lambda op: [*tables, _join(op, foreign_key="prefix"), TO_STREAM, TO]
    )
    # left values name a right key before the colon ("a:1"); right keys are a, b, c
    values = st.sampled_from(["a:1", "b:2", "c:3", "a:4", "x", None])
    return _scenario("fk-join", topology, ["left", "right"], values)


def windowed_cogroup() -> st.SearchStrategy[dict[str, Any]]:
    """Two streams cogrouped into one windowed aggregate (time, sliding or session windows)."""

    def make(window: dict[str, Any]) -> Topology:
        cogroup: Node = {
            "op": "cogroup",
            "from": "ga",
            "fn": "concat",
            "with": [{"from": "gb", "fn": "concat"}],
            "init": "empty",
            "window": window,
        }
        if window["type"] == "session":
            cogroup["merger"] = "concat"
        inputs: Topology = [
            {"id": "a", "op": "stream", "topic": "in"},
            {"id": "b", "op": "stream", "topic": "in2"},
            {"id": "ga", "op": "groupByKey", "from": "a"},
            {"id": "gb", "op": "groupByKey", "from": "b"},
        ]
        return [*inputs, cogroup, TO_STREAM, TO]

    return _scenario("windowed-cogroup", st.builds(make, _window()), ["in", "in2"])


def split_and_route() -> st.SearchStrategy[dict[str, Any]]:
    """Two merged streams split into named branches (one mapped inside ``Branched``), a branch
    routed by a topic extractor on the record's source topic, a table re-keyed by
    ``toStream(mapper)``."""

    def make(predicate: str, function: str) -> Topology:
        split: Node = {
            "id": "s",
            "op": "split",
            "from": "m",
            "predicates": [predicate, "startsWith:a"],
            "default": True,
            "functions": {"0": function},
        }
        return [
            {"id": "a", "op": "stream", "topic": "in"},
            {"id": "b", "op": "stream", "topic": "in2"},
            {"id": "m", "op": "merge", "from": "a", "other": "b"},
            split,
            {
                "op": "to",
                "from": "s.0",
                "extractor": "sourceTopic",
                "topics": ["out-in", "out-in2"],
            },
            {"op": "to", "from": "s.1", "topic": "out-a"},
            {"id": "t", "op": "toTable", "from": "s.default"},
            {"op": "toStream", "from": "t", "fn": "firstChar"},
            TO,
        ]

    predicates = st.sampled_from(["len>3", "even", "startsWith:b", "notNull"])
    functions = st.sampled_from(["upper", "suffix:!", "identity"])
    return _scenario("split-and-route", st.builds(make, predicates, functions), ["in", "in2"])


FAMILIES: dict[str, Callable[[], st.SearchStrategy[dict[str, Any]]]] = {
    "stateless": stateless,
    "windowed-aggregation": windowed_aggregation,
    "suppress": suppress,
    "table-aggregation": table_aggregation,
    "table-transform-values": table_transform_values,
    "stream-partitioner": stream_partitioner,
    "stream-table-join": stream_table_join,
    "stream-stream-inner-join": stream_stream_inner_join,
    "stream-stream-outer-join": stream_stream_outer_join,
    "table-table-join": table_table_join,
    "fk-join": fk_join,
    "windowed-cogroup": windowed_cogroup,
    "split-and-route": split_and_route,
}
