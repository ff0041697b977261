package streamrt.differential;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.streams.kstream.KeyValueMapper;
import org.apache.kafka.streams.kstream.Printed;
import org.apache.kafka.streams.kstream.ValueMapperWithKey;
import org.apache.kafka.streams.kstream.ValueTransformerWithKey;
import org.apache.kafka.streams.kstream.ValueTransformerWithKeySupplier;
import org.apache.kafka.streams.processor.ProcessorContext;
import org.apache.kafka.streams.processor.StreamPartitioner;

/** The built-ins of issue 38's last operators (stream partitioners, KTable.transformValues,
 *  key-aware value mappers, print): the same names and rules as tests/differential/extras.py. */
final class Extras {
    private Extras() {}

    /** Partitioners: "default" (empty optional), "drop" (empty set), "partitions:0,1" (that
     *  set), "dropKey:X" / "dupKey:X" (drop / send to {0, 1} the key X, default otherwise). */
    static StreamPartitioner<Object, Object> partitioner(String name) {
        String a = Fns.arg(name);
        switch (Fns.base(name)) {
            case "default": return (t, k, v, n) -> Optional.empty();
            case "drop": return (t, k, v, n) -> Optional.of(Set.of());
            case "partitions": {
                Set<Integer> chosen = new TreeSet<>();
                for (String p : a.split(",")) {
                    chosen.add(Integer.parseInt(p));
                }
                return (t, k, v, n) -> Optional.of(chosen);
            }
            case "dropKey": return (t, k, v, n) -> a.equals(k) ? Optional.of(Set.of()) : Optional.empty();
            case "dupKey": return (t, k, v, n) -> a.equals(k) ? Optional.of(Set.of(0, 1)) : Optional.empty();
            default: throw new IllegalArgumentException("unknown partitioner " + name);
        }
    }

    /** Key-aware value mappers: "keyConcat" gives "<key>:<value>" (null stays null). */
    static ValueMapperWithKey<Object, Object, Object> valueMapperWithKey(String name) {
        if (!name.equals("keyConcat")) {
            throw new IllegalArgumentException("unknown key-aware value mapper " + name);
        }
        return (k, v) -> v == null ? null : Fns.fmt(k) + ":" + Fns.fmt(v);
    }

    /** Key-aware flat value mappers: "keyAndValue" gives [key, value]. */
    static ValueMapperWithKey<Object, Object, Iterable<Object>> flatValuesWithKey(String name) {
        if (!name.equals("keyAndValue")) {
            throw new IllegalArgumentException("unknown key-aware flat value mapper " + name);
        }
        return (k, v) -> new ArrayList<>(Arrays.asList(k, v));
    }

    /** Value transformers: "keyConcat" as the mapper; "countCalls" numbers its calls per
     *  instance ("<value>#<n>", null values too), so every call Kafka makes shows. */
    static ValueTransformerWithKeySupplier<Object, Object, Object> transformer(String name) {
        switch (name) {
            case "keyConcat": return () -> new Transformer(false);
            case "countCalls": return () -> new Transformer(true);
            default: throw new IllegalArgumentException("unknown value transformer " + name);
        }
    }

    private static final class Transformer implements ValueTransformerWithKey<Object, Object, Object> {
        private final boolean counting;
        private long calls;

        Transformer(boolean counting) {
            this.counting = counting;
        }

        @Override
        public void init(ProcessorContext context) {
        }

        @Override
        public Object transform(Object key, Object value) {
            if (counting) {
                calls++;
                return Fns.fmt(value) + "#" + calls;
            }
            return value == null ? null : Fns.fmt(key) + ":" + Fns.fmt(value);
        }

        @Override
        public void close() {
        }
    }

    /** print's mappers: "arrow" gives "<key> -> <value>". */
    static KeyValueMapper<Object, Object, String> printMapper(String name) {
        if (!name.equals("arrow")) {
            throw new IllegalArgumentException("unknown print mapper " + name);
        }
        return (k, v) -> Fns.fmt(k) + " -> " + Fns.fmt(v);
    }

    /** What print nodes write: System.out is this capture while a scenario runs (Printed
     *  flushes each line only to System.out), restored by {@link #restoreOut}. */
    private static final ByteArrayOutputStream CAPTURED = new ByteArrayOutputStream();
    private static PrintStream original;

    static Printed<Object, Object> toCapturedOut() {
        if (original == null) {
            original = System.out;
            CAPTURED.reset();
            System.setOut(new PrintStream(CAPTURED, true, StandardCharsets.UTF_8));
        }
        return Printed.toSysOut();
    }

    /** The lines printed since the last call. */
    static List<String> printedLines() {
        String text = CAPTURED.toString(StandardCharsets.UTF_8);
        CAPTURED.reset();
        List<String> lines = new ArrayList<>();
        for (String line : text.split("\n")) {
            if (!line.isEmpty()) {
                lines.add(line);
            }
        }
        return lines;
    }

    static void restoreOut() {
        if (original != null) {
            System.out.flush();
            System.setOut(original);
            original = null;
        }
    }
}
