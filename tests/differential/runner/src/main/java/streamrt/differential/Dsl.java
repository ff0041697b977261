package streamrt.differential;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.Function;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.BranchedKStream;
import org.apache.kafka.streams.kstream.CogroupedKStream;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KGroupedTable;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.SessionWindowedKStream;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindowedKStream;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.state.Stores;

/** Builds a scenario's topology with Kafka Streams' DSL, node by node: each node names its
 *  operator, its input ("from", default the previous node) and its parameters; the operator
 *  vocabulary is the one tests/differential/topology.py builds with streamrt's DSL. */
@SuppressWarnings({"unchecked", "rawtypes"})
final class Dsl {
    /** processValues' built-in: a value mapper as a FixedKeyProcessor (no user code). */
    static final class MapValuesProcessor implements FixedKeyProcessor<String, Object, Object> {
        private final org.apache.kafka.streams.kstream.ValueMapper<Object, Object> fn;
        private FixedKeyProcessorContext<String, Object> context;

        MapValuesProcessor(org.apache.kafka.streams.kstream.ValueMapper<Object, Object> fn) {
            this.fn = fn;
        }

        @Override
        public void init(FixedKeyProcessorContext<String, Object> context) {
            this.context = context;
        }

        @Override
        public void process(FixedKeyRecord<String, Object> record) {
            context.forward(record.withValue(fn.apply(record.value())));
        }
    }

    private final StreamsBuilder builder = new StreamsBuilder();
    private final Map<String, Object> nodes = new HashMap<>();
    private final java.util.Set<String> windowed = new java.util.HashSet<>();
    final TreeSet<String> inputs = new TreeSet<>();
    final TreeSet<String> outputs = new TreeSet<>();
    /** Processor-API stores by name: their type ("keyValue", "window", ...). */
    final Map<String, String> storeTypes = new HashMap<>();
    private final JsonSerde json = new JsonSerde();
    private static final java.util.Set<String> SOURCES = java.util.Set.of("stream", "table", "globalTable");

    StreamsBuilder build(JsonNode topology) {
        String previous = null;
        int index = 0;
        for (JsonNode node : topology) {
            String id = node.has("id") ? node.get("id").asText() : String.valueOf(index);
            String from = node.has("from") ? node.get("from").asText() : previous;
            if (node.get("op").asText().equals("addStateStore")) {  // a store, not a node
                JsonNode store = node.get("store");
                storeTypes.put(store.get("name").asText(), store.get("type").asText());
                builder.addStateStore(StoreOps.builder(store));
                index++;
                continue;
            }
            Object result = apply(node, from);
            if (result != null) {
                nodes.put(id, result);
                boolean source = SOURCES.contains(node.get("op").asText());
                // a re-grouped table's keys are what its mapper makes: no longer windowed
                boolean regrouped = node.get("op").asText().equals("groupBy") && nodes.get(from) instanceof KTable;
                if (!source && !regrouped && from != null && windowed.contains(from)) {
                    windowed.add(id);
                }
                if (node.get("op").asText().equals("windowedBy")
                        || (node.get("op").asText().equals("cogroup") && node.has("window"))) {
                    windowed.add(id);
                }
                if (result instanceof Map) {
                    for (Map.Entry<String, Object> e : ((Map<String, Object>) result).entrySet()) {
                        nodes.put(id + "." + e.getKey(), e.getValue());
                    }
                }
            }
            previous = id;
            index++;
        }
        return builder;
    }

    private Object node(String id) {
        Object n = nodes.get(id);
        if (n == null) {
            throw new IllegalArgumentException("no node " + id);
        }
        return n;
    }

    private static String text(JsonNode n, String field) {
        JsonNode f = n.get(field);
        if (f == null) {
            throw new IllegalArgumentException(n.get("op").asText() + " needs " + field);
        }
        return f.asText();
    }

    private static Duration ms(JsonNode n, String field) {
        return Duration.ofMillis(n.get(field).asLong());
    }

    private Object apply(JsonNode n, String from) {
        String op = n.get("op").asText();
        switch (op) {
            case "stream":
                inputs.add(text(n, "topic"));
                return builder.stream(text(n, "topic"));
            case "table":
                inputs.add(text(n, "topic"));
                return table(n);
            case "globalTable":
                inputs.add(text(n, "topic"));
                return builder.globalTable(text(n, "topic"));
            case "to":
                if (!n.has("extractor")) {
                    outputs.add(text(n, "topic"));
                }
                to(n, from);
                return null;
            default:
                break;
        }
        Object in = node(from);
        if (in instanceof KStream) {
            return streamOp(op, n, (KStream<String, Object>) in);
        }
        if (in instanceof KTable) {
            return tableOp(op, n, (KTable<Object, Object>) in);
        }
        if (in instanceof KGroupedStream) {
            return groupedOp(op, n, (KGroupedStream<String, Object>) in);
        }
        if (in instanceof KGroupedTable) {
            return groupedTableOp(op, n, (KGroupedTable<String, Object>) in);
        }
        if (in instanceof TimeWindowedKStream || in instanceof SessionWindowedKStream) {
            return windowedOp(op, n, in);
        }
        throw new IllegalArgumentException(op + " cannot follow " + in.getClass().getSimpleName());
    }

    private Object table(JsonNode n) {
        String topic = text(n, "topic");
        if (n.has("versioned_history_ms")) {
            return builder.table(topic, Materialized.as(Stores.persistentVersionedKeyValueStore(
                topic + "-versioned", ms(n, "versioned_history_ms"))));
        }
        return builder.table(topic);
    }

    /** Suffix of the extra topic a windowed stream's `to` also writes with the stream's own
     *  windowed key serde (Kafka's bytes), read back with raw keys (compared as hex). */
    static final String WIRE_SUFFIX = ".windowed-key-bytes";

    private void to(JsonNode n, String from) {
        KStream<Object, Object> s = (KStream<Object, Object>) node(from);
        KStream<Object, Object> windowedKeys = windowed.contains(from) && !n.has("extractor") ? s : null;
        if (windowed.contains(from)) {
            s = s.map((k, v) -> {
                Windowed<String> w = (Windowed<String>) k;
                return KeyValue.pair(w.key() + "@" + w.window().start() + "/" + w.window().end(), v);
            });
        }
        Produced produced = Produced.with((org.apache.kafka.common.serialization.Serde) Serdes.String(), json);
        if (n.has("partitioner")) {
            produced = produced.withStreamPartitioner(Extras.partitioner(text(n, "partitioner")));
        }
        if (n.has("extractor")) {  // the topics it may name are listed, so they are read
            for (JsonNode t : n.get("topics")) {
                outputs.add(t.asText());
            }
            s.to(Fns.topicExtractor(text(n, "extractor")), produced);
            return;
        }
        s.to(text(n, "topic"), produced);
        if (windowedKeys != null) {  // no key serde given: the aggregation's windowed serde
            String wire = text(n, "topic") + WIRE_SUFFIX;
            outputs.add(wire);
            windowedKeys.to(wire, Produced.valueSerde((org.apache.kafka.common.serialization.Serde) json));
        }
    }

    private Object streamOp(String op, JsonNode n, KStream<String, Object> s) {
        switch (op) {
            case "filter": return s.filter(Fns.predicate(text(n, "fn")));
            case "filterNot": return s.filterNot(Fns.predicate(text(n, "fn")));
            case "mapValues":
                return n.has("with_key") ? s.mapValues((org.apache.kafka.streams.kstream.ValueMapperWithKey) Extras.valueMapperWithKey(text(n, "fn")))
                    : s.mapValues(Fns.valueMapper(text(n, "fn")));
            case "print": print(n, s); return null;
            case "map": return s.map(Fns.mapper(text(n, "fn")));
            case "selectKey": return s.selectKey(Fns.keySelector(text(n, "fn")));
            case "flatMapValues":
                return n.has("with_key") ? s.flatMapValues((org.apache.kafka.streams.kstream.ValueMapperWithKey) Extras.flatValuesWithKey(text(n, "fn")))
                    : s.flatMapValues(Fns.flatValues(text(n, "fn")));
            case "flatMap": return s.flatMap(Fns.flatMapper(text(n, "fn")));
            case "merge": return s.merge((KStream<String, Object>) node(text(n, "other")));
            case "peek": return s.peek((k, v) -> { });
            case "repartition":
                if (n.has("name") || n.has("partitions") || n.has("partitioner")) {
                    Repartitioned<String, Object> r = Repartitioned.with(Serdes.String(), json);
                    if (n.has("partitioner")) {
                        r = r.withStreamPartitioner((org.apache.kafka.streams.processor.StreamPartitioner) Extras.partitioner(text(n, "partitioner")));
                    }
                    if (n.has("name")) {
                        r = r.withName(text(n, "name"));
                    }
                    if (n.has("partitions")) {
                        r = r.withNumberOfPartitions(n.get("partitions").asInt());
                    }
                    return s.repartition(r);
                }
                return s.repartition();
            case "split": return split(n, s);
            case "toTable": return s.toTable();
            case "processValues": return s.processValues(() -> new MapValuesProcessor(Fns.valueMapper(text(n, "fn"))));
            case "process": {
                String store = text(n, "store");
                String type = storeTypes.get(store);
                return s.process(() -> new StoreOps.Put(store, type), store);
            }
            case "groupByKey": return s.groupByKey();
            case "groupBy": return s.groupBy(Fns.keySelector(text(n, "fn")), Grouped.with(Serdes.String(), json));
            case "join":
            case "leftJoin":
            case "outerJoin":
                return streamJoin(op, n, s);
            default: throw new IllegalArgumentException("unknown stream op " + op);
        }
    }

    private Map<String, KStream<String, Object>> split(JsonNode n, KStream<String, Object> s) {
        BranchedKStream<String, Object> b = s.split(Named.as("split-"));
        int i = 0;
        for (Iterator<JsonNode> it = n.get("predicates").elements(); it.hasNext(); i++) {
            b = b.branch(Fns.predicate(it.next().asText()), branched(n, String.valueOf(i)));
        }
        Map<String, KStream<String, Object>> out = n.path("default").asBoolean(false)
            ? b.defaultBranch(branched(n, "default")) : b.noDefaultBranch();
        Map<String, KStream<String, Object>> named = new HashMap<>();
        out.forEach((k, v) -> named.put(k.substring("split-".length()), v));
        return named;
    }

    /** A branch named ``name``; with "functions": {name: value mapper} its stream is mapped
     *  inside the branch (Branched.withFunction). */
    private static Branched<String, Object> branched(JsonNode n, String name) {
        JsonNode fns = n.path("functions");
        if (fns.has(name)) {
            var mapper = Fns.valueMapper(fns.get(name).asText());
            return Branched.withFunction(ks -> ks.mapValues(mapper), name);
        }
        return Branched.as(name);
    }

    private Object streamJoin(String op, JsonNode n, KStream<String, Object> s) {
        if (text(n, "joiner").startsWith("key")) {
            return streamJoinWithKey(op, n, s);
        }
        Object other = node(text(n, "other"));
        var joiner = Fns.joiner(text(n, "joiner"));
        if (other instanceof KStream) {
            KStream<String, Object> o = (KStream<String, Object>) other;
            JoinWindows w = joinWindows(n.get("window"));
            switch (op) {
                case "join": return s.join(o, joiner, w);
                case "leftJoin": return s.leftJoin(o, joiner, w);
                default: return s.outerJoin(o, joiner, w);
            }
        }
        if (other instanceof GlobalKTable) {
            GlobalKTable<String, Object> g = (GlobalKTable<String, Object>) other;
            var mapper = Fns.globalKey(text(n, "key_mapper"));
            return op.equals("join") ? s.join(g, mapper, joiner) : s.leftJoin(g, mapper, joiner);
        }
        KTable<String, Object> t = (KTable<String, Object>) other;
        Joined<String, Object, Object> joined = Joined.with(Serdes.String(), json, json);
        if (n.has("name")) {
            joined = joined.withName(text(n, "name"));
        }
        if (n.has("grace_ms")) {
            joined = joined.withGracePeriod(ms(n, "grace_ms"));
        }
        return op.equals("join") ? s.join(t, joiner, joined) : s.leftJoin(t, joiner, joined);
    }

    /** The same joins with a key-aware joiner (ValueJoinerWithKey overloads). */
    private Object streamJoinWithKey(String op, JsonNode n, KStream<String, Object> s) {
        Object other = node(text(n, "other"));
        var joiner = Fns.joinerWithKey(text(n, "joiner"));
        if (other instanceof KStream) {
            KStream<String, Object> o = (KStream<String, Object>) other;
            JoinWindows w = joinWindows(n.get("window"));
            switch (op) {
                case "join": return s.join(o, joiner, w);
                case "leftJoin": return s.leftJoin(o, joiner, w);
                default: return s.outerJoin(o, joiner, w);
            }
        }
        if (other instanceof GlobalKTable) {
            GlobalKTable<String, Object> g = (GlobalKTable<String, Object>) other;
            var mapper = Fns.globalKey(text(n, "key_mapper"));
            return op.equals("join") ? s.join(g, mapper, joiner) : s.leftJoin(g, mapper, joiner);
        }
        KTable<String, Object> t = (KTable<String, Object>) other;
        Joined<String, Object, Object> joined = Joined.with(Serdes.String(), json, json);
        return op.equals("join") ? s.join(t, joiner, joined) : s.leftJoin(t, joiner, joined);
    }

    private static JoinWindows joinWindows(JsonNode w) {
        Duration d = ms(w, "diff_ms");
        JoinWindows j = w.has("grace_ms") ? JoinWindows.ofTimeDifferenceAndGrace(d, ms(w, "grace_ms"))
            : JoinWindows.ofTimeDifferenceWithNoGrace(d);
        if (w.has("before_ms")) {
            j = j.before(ms(w, "before_ms"));
        }
        if (w.has("after_ms")) {
            j = j.after(ms(w, "after_ms"));
        }
        return j;
    }

    /** print: to the captured System.out (read after each step); label, mapper, name. */
    private void print(JsonNode n, KStream<String, Object> s) {
        var printed = Extras.toCapturedOut();
        if (n.has("label")) {
            printed = printed.withLabel(text(n, "label"));
        }
        if (n.has("mapper")) {
            printed = printed.withKeyValueMapper(Extras.printMapper(text(n, "mapper")));
        }
        if (n.has("name")) {
            printed = printed.withName(text(n, "name"));
        }
        ((KStream<Object, Object>) (KStream) s).print(printed);
        printing = true;
    }

    /** Whether a print node writes to the captured System.out (see Oracle.run). */
    boolean printing;

    private Object tableOp(String op, JsonNode n, KTable<Object, Object> t) {
        KTable<String, Object> st = (KTable<String, Object>) (KTable) t;
        switch (op) {
            case "filter": return st.filter(Fns.predicate(text(n, "fn")));
            case "filterNot": return st.filterNot(Fns.predicate(text(n, "fn")));
            case "mapValues":
                return n.has("with_key") ? st.mapValues((org.apache.kafka.streams.kstream.ValueMapperWithKey) Extras.valueMapperWithKey(text(n, "fn")))
                    : st.mapValues(Fns.valueMapper(text(n, "fn")));
            case "transformValues": {
                var supplier = (org.apache.kafka.streams.kstream.ValueTransformerWithKeySupplier) Extras.transformer(text(n, "fn"));
                if (n.has("store")) {
                    storeTypes.put(text(n, "store"), "timestampedKeyValue");
                    return st.transformValues(supplier, Materialized.as(text(n, "store")));
                }
                return st.transformValues(supplier);
            }
            case "toStream":
                return n.has("fn") ? st.toStream(Fns.keySelector(text(n, "fn"))) : t.toStream();
            case "groupBy":
                if (text(n, "fn").equals("windowKey")) {  // a windowed table by its record key
                    return t.groupBy((k, v) -> KeyValue.pair(((Windowed<String>) k).key(), v),
                        Grouped.with(Serdes.String(), json));
                }
                return st.groupBy(Fns.mapper(text(n, "fn")), Grouped.with(Serdes.String(), json));
            case "suppress": return t.suppress((Suppressed) suppressed(n));
            case "join":
            case "leftJoin":
            case "outerJoin":
                return tableJoin(op, n, st);
            default: throw new IllegalArgumentException("unknown table op " + op);
        }
    }

    private static Suppressed<?> suppressed(JsonNode n) {
        Suppressed.BufferConfig<?> buffer = n.has("max_records")
            ? Suppressed.BufferConfig.maxRecords(n.get("max_records").asLong())
            : Suppressed.BufferConfig.unbounded();
        if (text(n, "until").equals("window_close")) {
            return Suppressed.untilWindowCloses((Suppressed.StrictBufferConfig) buffer);
        }
        return Suppressed.untilTimeLimit(ms(n, "ms"), buffer);
    }

    private Object tableJoin(String op, JsonNode n, KTable<String, Object> t) {
        KTable<Object, Object> o = (KTable<Object, Object>) node(text(n, "other"));
        var joiner = Fns.joiner(text(n, "joiner"));
        if (n.has("foreign_key")) {
            Function<Object, Object> fk = Fns.foreignKey(text(n, "foreign_key"));
            if (n.has("partitioners")) {  // TableJoined.with(this table's, the other table's)
                var tj = org.apache.kafka.streams.kstream.TableJoined.with(
                    (org.apache.kafka.streams.processor.StreamPartitioner) Extras.partitioner(n.get("partitioners").get(0).asText()),
                    (org.apache.kafka.streams.processor.StreamPartitioner) Extras.partitioner(n.get("partitioners").get(1).asText()));
                return op.equals("join") ? t.join(o, fk, joiner, tj) : t.leftJoin(o, fk, joiner, tj);
            }
            return op.equals("join") ? t.join(o, fk, joiner) : t.leftJoin(o, fk, joiner);
        }
        KTable<String, Object> so = (KTable<String, Object>) (KTable) o;
        switch (op) {
            case "join": return t.join(so, joiner);
            case "leftJoin": return t.leftJoin(so, joiner);
            default: return t.outerJoin(so, joiner);
        }
    }

    private Object groupedOp(String op, JsonNode n, KGroupedStream<String, Object> g) {
        switch (op) {
            case "count": return g.count(Materialized.with(Serdes.String(), Serdes.Long()));
            case "reduce": return g.reduce(Fns.reducer(text(n, "fn")), Materialized.with(Serdes.String(), json));
            case "aggregate":
                return g.aggregate(Fns.initializer(text(n, "init")), Fns.aggregator(text(n, "fn")),
                    Materialized.with(Serdes.String(), json));
            case "windowedBy": return windowedBy(n.get("window"), g);
            case "cogroup": return cogroup(n, g);
            default: throw new IllegalArgumentException("unknown grouped-stream op " + op);
        }
    }

    private Object cogroup(JsonNode n, KGroupedStream<String, Object> g) {
        CogroupedKStream<String, Object> c = g.cogroup(Fns.aggregator(text(n, "fn")));
        for (JsonNode other : n.get("with")) {
            c = c.cogroup((KGroupedStream<String, Object>) node(text(other, "from")),
                Fns.aggregator(text(other, "fn")));
        }
        if (!n.has("window")) {
            return c.aggregate(Fns.initializer(text(n, "init")), Materialized.with(Serdes.String(), json));
        }
        Object w = windows(n.get("window"));
        if (w instanceof SessionWindows) {
            return c.windowedBy((SessionWindows) w).aggregate(Fns.initializer(text(n, "init")),
                Fns.merger(text(n, "merger")), Materialized.with(Serdes.String(), json));
        }
        if (w instanceof SlidingWindows) {
            return c.windowedBy((SlidingWindows) w).aggregate(Fns.initializer(text(n, "init")),
                Materialized.with(Serdes.String(), json));
        }
        return c.windowedBy((TimeWindows) w).aggregate(Fns.initializer(text(n, "init")),
            Materialized.with(Serdes.String(), json));
    }

    /** A window spec as Kafka's windows object (TimeWindows, SlidingWindows or SessionWindows). */
    private static Object windows(JsonNode w) {
        String type = text(w, "type");
        boolean grace = w.has("grace_ms");
        switch (type) {
            case "tumbling":
            case "hopping": {
                Duration size = ms(w, "size_ms");
                TimeWindows t = grace ? TimeWindows.ofSizeAndGrace(size, ms(w, "grace_ms"))
                    : TimeWindows.ofSizeWithNoGrace(size);
                return type.equals("hopping") ? t.advanceBy(ms(w, "advance_ms")) : t;
            }
            case "sliding": {
                Duration d = ms(w, "diff_ms");
                return grace ? SlidingWindows.ofTimeDifferenceAndGrace(d, ms(w, "grace_ms"))
                    : SlidingWindows.ofTimeDifferenceWithNoGrace(d);
            }
            case "session": {
                Duration gap = ms(w, "gap_ms");
                return grace ? SessionWindows.ofInactivityGapAndGrace(gap, ms(w, "grace_ms"))
                    : SessionWindows.ofInactivityGapWithNoGrace(gap);
            }
            default: throw new IllegalArgumentException("unknown window type " + type);
        }
    }

    private static Object windowedBy(JsonNode w, KGroupedStream<String, Object> g) {
        String type = text(w, "type");
        boolean grace = w.has("grace_ms");
        switch (type) {
            case "tumbling":
            case "hopping": {
                Duration size = ms(w, "size_ms");
                TimeWindows t = grace ? TimeWindows.ofSizeAndGrace(size, ms(w, "grace_ms"))
                    : TimeWindows.ofSizeWithNoGrace(size);
                return g.windowedBy(type.equals("hopping") ? t.advanceBy(ms(w, "advance_ms")) : t);
            }
            case "sliding": {
                Duration d = ms(w, "diff_ms");
                return g.windowedBy(grace ? SlidingWindows.ofTimeDifferenceAndGrace(d, ms(w, "grace_ms"))
                    : SlidingWindows.ofTimeDifferenceWithNoGrace(d));
            }
            case "session": {
                Duration gap = ms(w, "gap_ms");
                return g.windowedBy(grace ? SessionWindows.ofInactivityGapAndGrace(gap, ms(w, "grace_ms"))
                    : SessionWindows.ofInactivityGapWithNoGrace(gap));
            }
            default: throw new IllegalArgumentException("unknown window type " + type);
        }
    }

    private Object windowedOp(String op, JsonNode n, Object in) {
        boolean close = n.path("emit").asText("on_window_update").equals("on_window_close");
        if (in instanceof TimeWindowedKStream) {
            TimeWindowedKStream<String, Object> w = (TimeWindowedKStream<String, Object>) in;
            if (close) {
                w = w.emitStrategy(EmitStrategy.onWindowClose());
            }
            switch (op) {
                case "count": return w.count(Materialized.with(Serdes.String(), Serdes.Long()));
                case "reduce": return w.reduce(Fns.reducer(text(n, "fn")), Materialized.with(Serdes.String(), json));
                case "aggregate":
                    return w.aggregate(Fns.initializer(text(n, "init")), Fns.aggregator(text(n, "fn")),
                        Materialized.with(Serdes.String(), json));
                default: throw new IllegalArgumentException("unknown windowed op " + op);
            }
        }
        SessionWindowedKStream<String, Object> w = (SessionWindowedKStream<String, Object>) in;
        if (close) {
            w = w.emitStrategy(EmitStrategy.onWindowClose());
        }
        switch (op) {
            case "count": return w.count(Materialized.with(Serdes.String(), Serdes.Long()));
            case "reduce": return w.reduce(Fns.reducer(text(n, "fn")), Materialized.with(Serdes.String(), json));
            case "aggregate":
                return w.aggregate(Fns.initializer(text(n, "init")), Fns.aggregator(text(n, "fn")),
                    Fns.merger(text(n, "merger")), Materialized.with(Serdes.String(), json));
            default: throw new IllegalArgumentException("unknown session op " + op);
        }
    }

    private Object groupedTableOp(String op, JsonNode n, KGroupedTable<String, Object> g) {
        switch (op) {
            case "count": return g.count(Materialized.with(Serdes.String(), Serdes.Long()));
            case "reduce":
                return g.reduce(Fns.reducer(text(n, "adder")), Fns.reducer(text(n, "subtractor")),
                    Materialized.with(Serdes.String(), json));
            case "aggregate":
                return g.aggregate(Fns.initializer(text(n, "init")), Fns.aggregator(text(n, "adder")),
                    Fns.aggregator(text(n, "subtractor")), Materialized.with(Serdes.String(), json));
            default: throw new IllegalArgumentException("unknown grouped-table op " + op);
        }
    }
}
