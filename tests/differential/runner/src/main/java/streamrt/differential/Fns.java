package streamrt.differential;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Aggregator;
import org.apache.kafka.streams.kstream.Initializer;
import org.apache.kafka.streams.kstream.KeyValueMapper;
import org.apache.kafka.streams.kstream.Merger;
import org.apache.kafka.streams.kstream.Predicate;
import org.apache.kafka.streams.kstream.Reducer;
import org.apache.kafka.streams.kstream.ValueJoiner;
import org.apache.kafka.streams.kstream.ValueJoinerWithKey;
import org.apache.kafka.streams.kstream.ValueMapper;
import org.apache.kafka.streams.processor.TopicNameExtractor;

/** The named built-ins a scenario may use (no user code): the same names and rules as
 *  tests/differential/builtins.py. A null value reaches a built-in only where Kafka passes it. */
final class Fns {
    private Fns() {}

    static String fmt(Object v) {
        return String.valueOf(v);
    }

    static long num(Object v) {
        return ((Number) v).longValue();
    }

    static String arg(String name) {
        int i = name.indexOf(':');
        return i < 0 ? "" : name.substring(i + 1);
    }

    static String base(String name) {
        int i = name.indexOf(':');
        return i < 0 ? name : name.substring(0, i);
    }

    static Predicate<String, Object> predicate(String name) {
        if (name.startsWith("len>")) {
            int n = Integer.parseInt(name.substring(4));
            return (k, v) -> v instanceof String && ((String) v).length() > n;
        }
        String a = arg(name);
        switch (base(name)) {
            case "even": return (k, v) -> v instanceof Number && num(v) % 2 == 0;
            case "startsWith": return (k, v) -> v instanceof String && ((String) v).startsWith(a);
            case "keyIs": return (k, v) -> a.equals(k);
            case "notNull": return (k, v) -> v != null;
            default: throw new IllegalArgumentException("unknown predicate " + name);
        }
    }

    static ValueMapper<Object, Object> valueMapper(String name) {
        String a = arg(name);
        switch (base(name)) {
            case "upper": return v -> v == null ? null : ((String) v).toUpperCase();
            case "len": return v -> v == null ? null : (Object) (long) ((String) v).length();
            case "double": return v -> v == null ? null : (Object) (num(v) * 2);
            case "suffix": return v -> v == null ? null : fmt(v) + a;
            case "identity": return v -> v;
            default: throw new IllegalArgumentException("unknown value mapper " + name);
        }
    }

    static KeyValueMapper<String, Object, String> keySelector(String name) {
        switch (name) {
            case "value": return (k, v) -> v == null ? null : fmt(v);
            case "firstChar": return (k, v) -> v == null || fmt(v).isEmpty() ? null : fmt(v).substring(0, 1);
            case "keyFirstChar": return (k, v) -> k == null || k.isEmpty() ? null : k.substring(0, 1);
            case "key": return (k, v) -> k;
            default: throw new IllegalArgumentException("unknown key selector " + name);
        }
    }

    static KeyValueMapper<String, Object, KeyValue<String, Object>> mapper(String name) {
        switch (name) {
            case "swap": return (k, v) -> KeyValue.pair(v == null ? null : fmt(v), k);
            case "keyUpper": return (k, v) -> KeyValue.pair(k == null ? null : k.toUpperCase(), v);
            case "valueFirstChar": {
                KeyValueMapper<String, Object, String> s = keySelector("firstChar");
                return (k, v) -> KeyValue.pair(s.apply(k, v), v);
            }
            case "keyFirstChar": {
                KeyValueMapper<String, Object, String> s = keySelector("keyFirstChar");
                return (k, v) -> KeyValue.pair(s.apply(k, v), v);
            }
            default: throw new IllegalArgumentException("unknown mapper " + name);
        }
    }

    static ValueMapper<Object, Iterable<Object>> flatValues(String name) {
        switch (name) {
            case "words": return v -> v == null ? List.of() : new ArrayList<>(Arrays.asList(fmt(v).split(" ")));
            case "dup": return v -> Arrays.asList(v, v);
            default: throw new IllegalArgumentException("unknown flat value mapper " + name);
        }
    }

    static KeyValueMapper<String, Object, Iterable<KeyValue<String, Object>>> flatMapper(String name) {
        if (!name.equals("words")) {
            throw new IllegalArgumentException("unknown flat mapper " + name);
        }
        return (k, v) -> {
            List<KeyValue<String, Object>> out = new ArrayList<>();
            if (v != null) {
                for (String w : fmt(v).split(" ")) {
                    out.add(KeyValue.pair(w, w));
                }
            }
            return out;
        };
    }

    static Initializer<Object> initializer(String name) {
        switch (name) {
            case "empty": return () -> "";
            case "zero": return () -> 0L;
            default: throw new IllegalArgumentException("unknown initializer " + name);
        }
    }

    static Object combine(String name, Object agg, Object v) {
        switch (name) {
            case "concat": return fmt(agg) + fmt(v);
            case "sum": return num(agg) + num(v);
            case "max": return Math.max(num(agg), num(v));
            case "sub": return num(agg) - num(v);
            case "remove": {
                String s = fmt(agg);
                String r = fmt(v);
                int i = s.indexOf(r);
                return i < 0 ? s : s.substring(0, i) + s.substring(i + r.length());
            }
            default: throw new IllegalArgumentException("unknown combiner " + name);
        }
    }

    private static final java.util.Set<String> COMBINERS = java.util.Set.of("concat", "sum", "max", "sub", "remove");

    static Aggregator<String, Object, Object> aggregator(String name) {
        if (!COMBINERS.contains(name)) {
            throw new IllegalArgumentException("unknown combiner " + name);
        }
        return (k, v, agg) -> combine(name, agg, v);
    }

    static Reducer<Object> reducer(String name) {
        aggregator(name);
        return (agg, v) -> combine(name, agg, v);
    }

    static Merger<String, Object> merger(String name) {
        aggregator(name);
        return (k, a, b) -> combine(name, a, b);
    }

    static ValueJoiner<Object, Object, Object> joiner(String name) {
        if (!name.equals("concat")) {
            throw new IllegalArgumentException("unknown joiner " + name);
        }
        return (l, r) -> fmt(l) + "+" + fmt(r);
    }

    /** A key-aware joiner: {@code keyConcat} gives "<key>:<left>+<right>". */
    static ValueJoinerWithKey<String, Object, Object, Object> joinerWithKey(String name) {
        if (!name.equals("keyConcat")) {
            throw new IllegalArgumentException("unknown key-aware joiner " + name);
        }
        return (k, l, r) -> fmt(k) + ":" + fmt(l) + "+" + fmt(r);
    }

    static Function<Object, Object> foreignKey(String name) {
        switch (name) {
            case "value": return v -> v == null ? null : fmt(v);
            case "prefix": return v -> v == null ? null : fmt(v).split(":", 2)[0];
            default: throw new IllegalArgumentException("unknown foreign key extractor " + name);
        }
    }

    static KeyValueMapper<String, Object, String> globalKey(String name) {
        switch (name) {
            case "key": return (k, v) -> k;
            case "value": return (k, v) -> v == null ? null : fmt(v);
            case "prefix": return (k, v) -> v == null ? null : fmt(v).split(":", 2)[0];
            default: throw new IllegalArgumentException("unknown key mapper " + name);
        }
    }

    /** Topic-name extractors: "out-" + the key's first character, or + the source topic. */
    static TopicNameExtractor<Object, Object> topicExtractor(String name) {
        switch (name) {
            case "keyFirstChar": return (k, v, ctx) -> "out-" + ((String) k).substring(0, 1);
            case "sourceTopic": return (k, v, ctx) -> "out-" + ctx.topic();
            default: throw new IllegalArgumentException("unknown topic extractor " + name);
        }
    }
}
