"""Build a scenario's topology with streamrt's public DSL, node by node, as a user would.

A scenario's ``topology`` is a list of nodes ``{"op": ..., "id": ..., "from": ..., params}``
(``id`` defaults to the node's index, ``from`` to the previous node); the vocabulary and its
parameters are the Java runner's (``Dsl.java``), so both sides build the same topology. A node
with ``"objects": true`` is built here with the option objects (``Consumed``, ``Produced``,
``Grouped``, ``StreamJoined``, ``Joined``, ``Repartitioned``) instead of the keywords (the
runner always uses them). An
operator streamrt lacks fails here with ``AttributeError``/``TypeError``: the scenario then
differs ("missing in streamrt").
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from streamrt.runtime import (
    Branched,
    BufferConfig,
    Consumed,
    Grouped,
    Joined,
    JoinWindows,
    Processor,
    Produced,
    Repartitioned,
    SessionWindowedCogroupedKStream,
    SessionWindowedKStream,
    SessionWindows,
    SlidingWindows,
    StreamJoined,
    StreamsBuilder,
    Suppressed,
    TableJoined,
    TimeWindowedKStream,
    TimeWindows,
    Windowed,
)
from tests.differential import builtins as fn
from tests.differential import extras, stores

JSON = "json"
STR = "str"
# the extra topic a windowed stream's ``to`` also writes with its own windowed key serde (no
# key serde given: Kafka's bytes), compared as hex of the raw key (the runner's WIRE_SUFFIX)
WIRE_SUFFIX = ".windowed-key-bytes"


@dataclass
class Node:
    """A built node: the DSL object, what it is, and whether its keys are ``Windowed``."""

    obj: Any
    kind: str  # stream, table, grouped, gtable, windowed, global, split
    windowed: bool = False


@dataclass
class Built:
    """The builder with the topics the driver must create."""

    builder: StreamsBuilder = field(default_factory=StreamsBuilder)
    nodes: dict[str, Node] = field(default_factory=dict)
    store_types: dict[str, str] = field(default_factory=dict)  # processor-API stores' types
    inputs: set[str] = field(default_factory=set)
    outputs: set[str] = field(default_factory=set)
    printed: io.StringIO | None = None  # what print nodes write (the runner's captured stdout)


def build(topology: list[dict[str, Any]]) -> Built:
    """The streamrt topology of a scenario's node list."""
    built = Built()
    previous: str | None = None
    for index, spec in enumerate(topology):
        node_id = str(spec.get("id", index))
        source = spec.get("from", previous)
        if spec["op"] == "addStateStore":  # a store, not a node
            built.store_types[spec["store"]["name"]] = spec["store"]["type"]
            built.builder.add_state_store(stores.builder(spec["store"]))
            continue
        result = _apply(built, {**spec, "id": node_id}, source)
        if result is not None:
            built.nodes[node_id] = result
            if result.kind == "split":
                for name, branch in result.obj.items():
                    built.nodes[f"{node_id}.{name}"] = Node(branch, "stream")
        previous = node_id
    return built


def _apply(built: Built, spec: dict[str, Any], source: str | None) -> Node | None:
    op = spec["op"]
    b = built.builder
    if op in ("stream", "table", "globalTable"):
        built.inputs.add(spec["topic"])
        return _source(b, op, spec)
    if op == "to":
        if "extractor" in spec:  # the topics it may name are listed, so they are read
            built.outputs.update(spec["topics"])
            target: Any = fn.topic_extractor(spec["extractor"])
        else:
            built.outputs.add(spec["topic"])
            target = spec["topic"]
        node = built.nodes[str(source)]
        _to(node, target, spec)
        if node.windowed and isinstance(target, str):
            built.outputs.add(target + WIRE_SUFFIX)
            node.obj.to(target + WIRE_SUFFIX, value_serde=JSON)
        return None
    if op == "print":
        _print(built, spec)
        return None
    node = built.nodes[str(source)]
    handler = _HANDLERS[node.kind]
    result = handler(built, op, spec, node.obj)
    regrouped = op == "groupBy" and node.kind == "table"  # keys are what the mapper makes
    result.windowed = result.windowed or (node.windowed and not regrouped)
    return result


def _source(b: StreamsBuilder, op: str, spec: dict[str, Any]) -> Node:
    topic = spec["topic"]
    if op == "stream" and spec.get("objects"):
        return Node(b.stream(topic, Consumed.with_(STR, JSON)), "stream")
    if op == "stream":
        return Node(b.stream(topic, key_serde=STR, value_serde=JSON), "stream")
    if op == "globalTable":
        gt = b.global_table(topic, store=f"{topic}-global", key_serde=STR, value_serde=JSON)
        return Node(gt, "global")
    history = spec.get("versioned_history_ms")
    table = b.table(
        topic,
        store=f"{topic}-store",
        key_serde=STR,
        value_serde=JSON,
        versioned_history_ms=history,
    )
    return Node(table, "table")


def _print(built: Built, spec: dict[str, Any]) -> None:
    built.printed = built.printed or io.StringIO()
    mapper = extras.print_mapper(spec["mapper"]) if "mapper" in spec else None
    stream = built.nodes[str(spec["from"])].obj
    stream.print(label=spec.get("label"), mapper=mapper, file=built.printed, name=spec.get("name"))


def _to(node: Node, topic: Any, spec: dict[str, Any]) -> None:
    objects = bool(spec.get("objects"))
    chosen = extras.partitioner(spec["partitioner"]) if "partitioner" in spec else None
    stream = node.obj
    if node.windowed:

        def flat(w: Windowed, v: Any) -> tuple[str, Any]:
            return f"{w.key}@{w.start}/{w.end}", v

        stream = stream.map(flat, key_serde=STR)
    if objects:
        produced = Produced.with_(STR, JSON)
        if chosen is not None:
            produced = produced.with_stream_partitioner(chosen)
        stream.to(topic, produced)
    else:
        stream.to(topic, key_serde=STR, value_serde=JSON, partitioner=chosen)


def _stream_op(built: Built, op: str, spec: dict[str, Any], s: Any) -> Node:
    if spec.get("objects") and op in _OBJECT_OPS:
        return Node(_OBJECT_OPS[op](built, spec, s), "stream" if op != "groupBy" else "grouped")
    simple: dict[str, Callable[[], Any]] = {
        "filter": lambda: s.filter(fn.predicate(spec["fn"])),
        "filterNot": lambda: s.filter_not(fn.predicate(spec["fn"])),
        "mapValues": lambda: s.map_values(_value_mapper(spec)),
        "map": lambda: s.map(fn.mapper(spec["fn"])),
        "selectKey": lambda: s.select_key(fn.key_selector(spec["fn"])),
        "flatMapValues": lambda: s.flat_map_values(
            extras.flat_values_with_key(spec["fn"])
            if spec.get("with_key")
            else fn.flat_values(spec["fn"])
        ),
        "flatMap": lambda: s.flat_map(fn.flat_mapper(spec["fn"])),
        "merge": lambda: s.merge(built.nodes[spec["other"]].obj),
        "repartition": lambda: _repartition(spec, s),
        "peek": lambda: s.peek(lambda _k, _v: None),
    }
    if op in simple:
        return Node(simple[op](), "stream")
    if op == "split":
        split = s.split(name="split-")
        for i, p in enumerate(spec["predicates"]):
            split = split.branch(fn.predicate(p), _branched(spec, str(i)))
        if spec.get("default", False):
            branches = split.default_branch(_branched(spec, "default"))
        else:
            branches = split.no_default_branch()
        return Node({k.removeprefix("split-"): v for k, v in branches.items()}, "split")
    if op == "toTable":
        return Node(s.to_table(), "table")
    if op == "process":
        store, kind = spec["store"], built.store_types[spec["store"]]
        return Node(s.process(lambda: stores.Put(store, kind), store), "stream")
    if op == "processValues":
        mapper = fn.value_mapper(spec["fn"])
        return Node(s.process_values(lambda: _MapValuesProcessor(mapper)), "stream")
    if op == "groupByKey":
        return Node(s.group_by_key(), "grouped")
    if op == "groupBy":
        return Node(s.group_by(fn.key_selector(spec["fn"]), key_serde=STR), "grouped")
    return Node(_stream_join(built, op, spec, s), "stream")


def _branched(spec: dict[str, Any], name: str) -> Branched:
    """A branch ``name``; with ``functions: {name: value mapper}`` mapped inside the branch."""
    function = spec.get("functions", {}).get(name)
    if function is None:
        return Branched.as_(name)
    mapper = fn.value_mapper(function)
    return Branched.with_function(lambda ks: ks.map_values(mapper), name)


def _value_mapper(spec: dict[str, Any]) -> Any:
    """A value mapper, or with ``with_key`` a ``ValueMapperWithKey`` built-in."""
    if spec.get("with_key"):
        return extras.value_mapper_with_key(spec["fn"])
    return fn.value_mapper(spec["fn"])


def _repartition(spec: dict[str, Any], s: Any) -> Any:
    chosen = extras.partitioner(spec["partitioner"]) if "partitioner" in spec else None
    if spec.get("objects"):
        r = Repartitioned.with_(STR, JSON)
        if chosen is not None:
            r = r.with_stream_partitioner(chosen)
        if "name" in spec:
            r = r.with_name(spec["name"])
        if "partitions" in spec:
            r = r.with_number_of_partitions(spec["partitions"])
        return s.repartition(r)
    return s.repartition(
        name=spec.get("name"), partitions=spec.get("partitions"), partitioner=chosen
    )


def _filter_named(built: Built, spec: dict[str, Any], s: Any) -> Any:
    return s.filter(fn.predicate(spec["fn"]), name=f"filter-{spec['id']}")


def _group_by_grouped(built: Built, spec: dict[str, Any], s: Any) -> Any:
    grouped = Grouped.with_(STR, JSON).with_name(f"group-{spec['id']}")
    return s.group_by(fn.key_selector(spec["fn"]), grouped)


def _join_stream_joined(built: Built, spec: dict[str, Any], s: Any) -> Any:
    other = built.nodes[spec["other"]].obj
    method = {"join": s.join, "leftJoin": s.left_join, "outerJoin": s.outer_join}[spec["op"]]
    if built.nodes[spec["other"]].kind == "table":  # a stream-table join: Joined
        joined = Joined.with_(STR, JSON, JSON).with_name(spec.get("name", f"join-{spec['id']}"))
        if "grace_ms" in spec:
            joined = joined.with_grace_period(spec["grace_ms"])
        return method(other, fn.joiner(spec["joiner"]), joined=joined)
    joined = StreamJoined.as_(f"join-{spec['id']}").with_in_memory()
    windows = _join_windows(spec["window"])
    return method(other, fn.joiner(spec["joiner"]), windows=windows, stream_joined=joined)


_OBJECT_OPS: dict[str, Callable[[Built, dict[str, Any], Any], Any]] = {
    "filter": _filter_named,
    "groupBy": _group_by_grouped,
    "join": _join_stream_joined,
    "leftJoin": _join_stream_joined,
    "outerJoin": _join_stream_joined,
}


class _MapValuesProcessor(Processor):
    """processValues' built-in, as the runner's: a value mapper as a key-keeping processor."""

    def __init__(self, mapper: Callable[[Any], Any]) -> None:
        self.mapper = mapper

    def process(self, key: Any, value: Any) -> None:
        self.context.forward(key, self.mapper(value))


def _stream_join(built: Built, op: str, spec: dict[str, Any], s: Any) -> Any:
    other = built.nodes[spec["other"]]
    joiner = fn.joiner(spec["joiner"])
    method = {"join": s.join, "leftJoin": s.left_join, "outerJoin": s.outer_join}[op]
    if other.kind == "stream":
        return method(other.obj, joiner, windows=_join_windows(spec["window"]))
    if other.kind == "global":
        return method(other.obj, joiner, key_mapper=fn.global_key(spec["key_mapper"]))
    return method(other.obj, joiner, grace=spec.get("grace_ms"), name=spec.get("name"))


def _join_windows(w: dict[str, Any]) -> JoinWindows:
    if "grace_ms" in w:
        windows = JoinWindows.of_time_difference_and_grace(w["diff_ms"], w["grace_ms"])
    else:
        windows = JoinWindows.of_time_difference_with_no_grace(w["diff_ms"])
    if "before_ms" in w:
        windows = windows.before(w["before_ms"])
    if "after_ms" in w:
        windows = windows.after(w["after_ms"])
    return windows


def _table_op(built: Built, op: str, spec: dict[str, Any], t: Any) -> Node:
    simple: dict[str, Callable[[], Node]] = {
        "filter": lambda: Node(t.filter(fn.predicate(spec["fn"])), "table"),
        "filterNot": lambda: Node(t.filter_not(fn.predicate(spec["fn"])), "table"),
        "mapValues": lambda: Node(t.map_values(_value_mapper(spec)), "table"),
        "transformValues": lambda: Node(_transform_values(built, spec, t), "table"),
        "toStream": lambda: Node(_to_stream(spec, t), "stream"),
        "groupBy": lambda: Node(t.group_by(fn.mapper(spec["fn"]), key_serde=STR), "gtable"),
        "suppress": lambda: Node(t.suppress(_suppressed(spec)), "table"),
    }
    if op in simple:
        return simple[op]()
    other = built.nodes[spec["other"]].obj
    joiner = fn.joiner(spec["joiner"])
    method = {"join": t.join, "leftJoin": t.left_join, "outerJoin": t.outer_join}[op]
    if "foreign_key" in spec:
        fk = fn.foreign_key(spec["foreign_key"])
        if "partitioners" in spec:  # TableJoined.with(this table's, the other table's)
            mine, others = (extras.partitioner(p) for p in spec["partitioners"])
            tj = TableJoined.with_(mine, others)
            return Node(method(other, joiner, foreign_key=fk, table_joined=tj), "table")
        return Node(method(other, joiner, foreign_key=fk), "table")
    return Node(method(other, joiner), "table")


def _transform_values(built: Built, spec: dict[str, Any], t: Any) -> Any:
    supplier = extras.transformer(spec["fn"])
    if "store" in spec:
        built.store_types[spec["store"]] = "timestampedKeyValue"
    return t.transform_values(supplier, store=spec.get("store"))


def _to_stream(spec: dict[str, Any], t: Any) -> Any:
    if "fn" in spec:
        return t.to_stream(fn.key_selector(spec["fn"]), key_serde=STR)
    return t.to_stream()


def _suppressed(spec: dict[str, Any]) -> Suppressed:
    buffer = (
        BufferConfig.max_records_of(spec["max_records"])
        if "max_records" in spec
        else BufferConfig.unbounded()
    )
    if spec["until"] == "window_close":
        return Suppressed.until_window_closes(buffer)
    return Suppressed.until_time_limit(spec["ms"], buffer)


def _store(spec: dict[str, Any]) -> str:
    return f"node-{spec['id']}-store"


def _grouped_op(built: Built, op: str, spec: dict[str, Any], g: Any) -> Node:
    store = _store(spec)
    if op == "count":
        return Node(g.count(store=store), "table")
    if op == "reduce":
        return Node(g.reduce(fn.reducer(spec["fn"]), store=store), "table")
    if op == "aggregate":
        init, agg = fn.initializer(spec["init"]), fn.aggregator(spec["fn"])
        return Node(g.aggregate(init, agg, store=store, value_serde=JSON), "table")
    if op == "windowedBy":
        return Node(g.windowed_by(_windows(spec["window"])), "windowed", windowed=True)
    if op == "cogroup":
        others = [(built.nodes[o["from"]].obj, fn.aggregator(o["fn"])) for o in spec["with"]]
        cogrouped = g.cogroup(fn.aggregator(spec["fn"]))
        for grouped, aggregator in others:
            cogrouped = cogrouped.cogroup(grouped, aggregator)
        init = fn.initializer(spec["init"])
        if "window" not in spec:
            return Node(cogrouped.aggregate(init, value_serde=JSON), "table")
        windowed = cogrouped.windowed_by(_windows(spec["window"]))
        if isinstance(windowed, SessionWindowedCogroupedKStream):
            merger = fn.merger(spec["merger"])
            table = windowed.aggregate(init, merger, store=store, value_serde=JSON)
        else:
            table = windowed.aggregate(init, store=store, value_serde=JSON)
        return Node(table, "table", windowed=True)
    raise ValueError(f"unknown grouped-stream op {op}")


def _windows(w: dict[str, Any]) -> TimeWindows | SlidingWindows | SessionWindows:
    grace = w.get("grace_ms")
    kind = w["type"]
    if kind in ("tumbling", "hopping"):
        size = w["size_ms"]
        tw = (
            TimeWindows.of_size_with_no_grace(size)
            if grace is None
            else TimeWindows.of_size_and_grace(size, grace)
        )
        return tw.advance_by(w["advance_ms"]) if kind == "hopping" else tw
    if kind == "sliding":
        d = w["diff_ms"]
        if grace is None:
            return SlidingWindows.of_time_difference_with_no_grace(d)
        return SlidingWindows.of_time_difference_and_grace(d, grace)
    gap = w["gap_ms"]
    if grace is None:
        return SessionWindows.of_inactivity_gap_with_no_grace(gap)
    return SessionWindows.of_inactivity_gap_and_grace(gap, grace)


def _windowed_op(built: Built, op: str, spec: dict[str, Any], w: Any) -> Node:
    del built
    store = _store(spec)
    emit = spec.get("emit", "on_window_update")
    if op == "count":
        return Node(w.count(store=store, emit_strategy=emit), "table")
    if op == "reduce":
        return Node(w.reduce(fn.reducer(spec["fn"]), store=store, emit_strategy=emit), "table")
    init, agg = fn.initializer(spec["init"]), fn.aggregator(spec["fn"])
    if isinstance(w, SessionWindowedKStream):
        merger = fn.merger(spec["merger"])
        table = w.aggregate(init, agg, merger, store=store, value_serde=JSON, emit_strategy=emit)
    else:
        assert isinstance(w, TimeWindowedKStream)
        table = w.aggregate(init, agg, store=store, value_serde=JSON, emit_strategy=emit)
    return Node(table, "table")


def _grouped_table_op(built: Built, op: str, spec: dict[str, Any], g: Any) -> Node:
    del built
    store = _store(spec)
    if op == "count":
        return Node(g.count(store=store), "table")
    if op == "reduce":
        adder, sub = fn.reducer(spec["adder"]), fn.reducer(spec["subtractor"])
        return Node(g.reduce(adder, sub, store=store), "table")
    init = fn.initializer(spec["init"])
    adder3, sub3 = fn.aggregator(spec["adder"]), fn.aggregator(spec["subtractor"])
    return Node(g.aggregate(init, adder3, sub3, store=store, value_serde=JSON), "table")


_HANDLERS: dict[str, Callable[[Built, str, dict[str, Any], Any], Node]] = {
    "stream": _stream_op,
    "table": _table_op,
    "grouped": _grouped_op,
    "windowed": _windowed_op,
    "gtable": _grouped_table_op,
}
