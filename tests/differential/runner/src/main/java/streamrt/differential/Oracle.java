package streamrt.differential;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Stream;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;

/** The Kafka Streams 4.3.1 side of the differential suite (issue 23). Reads scenarios, one JSON
 *  document a line, on stdin (so one JVM serves a whole pytest session, property runs
 *  included), runs each through TopologyTestDriver with the record cache off and the internal
 *  emit throttles at 0, and writes every output record as a JSON line: the scenario, the input
 *  step after which it came out, topic, key, value and timestamp; then a "done" line. */
public final class Oracle {
    private Oracle() {}

    public static void main(String[] args) throws IOException {
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode scenario = JsonSerde.MAPPER.readTree(line);
            String name = scenario.path("name").asText("?");
            try {
                run(scenario, name);
            } catch (Exception e) {
                emit(name, -1).put("error", "build: " + describe(e));
            } catch (StackOverflowError | OutOfMemoryError e) {
                // one scenario's failure, not the JVM's: report it and serve the next scenario
                PENDING.clear();
                emit(name, -1).put("error", "jvm: " + describe(e));
            }
            emit(name, -1).put("done", true);
            flush(out);
        }
    }

    /** A scenario's lines, written together once it is done. */
    private static final java.util.List<ObjectNode> PENDING = new java.util.ArrayList<>();

    private static ObjectNode emit(String name, int step) {
        ObjectNode o = JsonSerde.MAPPER.createObjectNode();
        o.put("scenario", name);
        o.put("step", step);
        PENDING.add(o);
        return o;
    }

    private static void flush(PrintStream out) {
        for (ObjectNode o : PENDING) {
            out.println(o.toString());
        }
        PENDING.clear();
        out.flush();
    }

    private static String describe(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return e.getClass().getSimpleName() + ": " + e.getMessage()
            + (root == e ? "" : " (" + root.getClass().getSimpleName() + ": " + root.getMessage() + ")");
    }

    static Properties config(String name, Path stateDir) {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, "diff-" + name.replaceAll("[^A-Za-z0-9_-]", "_"));
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, org.apache.kafka.common.serialization.Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, JsonSerde.class);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        // Kafka Streams throttles these emissions by wall-clock time (1000 ms by default); at 0
        // every record that closes a window or join window emits at once, as in streamrt.
        p.put(StreamsConfig.InternalConfig.EMIT_INTERVAL_MS_KSTREAMS_OUTER_JOIN_SPURIOUS_RESULTS_FIX, 0L);
        p.put(StreamsConfig.InternalConfig.EMIT_INTERVAL_MS_KSTREAMS_WINDOWED_AGGREGATION, 0L);
        return p;
    }

    private static Object scalar(JsonNode v) {
        if (v == null || v.isNull()) {
            return null;
        }
        if (v.isIntegralNumber()) {
            return v.asLong();
        }
        return v.asText();
    }

    private static void run(JsonNode scenario, String name) throws IOException {
        Dsl dsl = new Dsl();
        var builder = dsl.build(scenario.get("topology"));
        Path stateDir = Files.createTempDirectory("diff-oracle-");
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), config(name, stateDir),
                Instant.ofEpochMilli(0))) {
            Map<String, TestInputTopic<String, Object>> inputs = new HashMap<>();
            for (String t : dsl.inputs) {
                inputs.put(t, driver.createInputTopic(t, new StringSerializer(), new JsonSerde().serializer()));
            }
            Map<String, TestOutputTopic<byte[], byte[]>> outputs = new java.util.TreeMap<>();
            for (String t : dsl.outputs) {
                outputs.put(t, driver.createOutputTopic(t, new ByteArrayDeserializer(), new ByteArrayDeserializer()));
            }
            int step = 0;
            for (JsonNode s : scenario.get("steps")) {
                try {
                    if (s.has("read")) {  // a processor-API store read through the driver
                        String store = s.get("read").asText();
                        JsonNode result = StoreOps.read(driver, s, dsl.storeTypes.get(store));
                        drain(outputs, name, step);
                        ObjectNode o = emit(name, step);
                        o.put("topic", "store:" + store);
                        o.put("key", s.get("method").asText());
                        o.set("value", result);
                        o.put("ts", 0L);
                        step++;
                        continue;
                    }
                    apply(s, driver, inputs);
                } catch (RuntimeException e) {
                    emit(name, step).put("error", describe(e));
                    return;
                }
                drain(outputs, name, step);
                if (dsl.printing) {
                    drainPrinted(name, step);
                }
                step++;
            }
        } finally {
            Extras.restoreOut();
            try (Stream<Path> walk = Files.walk(stateDir)) {
                walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    private static void apply(JsonNode s, TopologyTestDriver driver, Map<String, TestInputTopic<String, Object>> inputs) {
        if (s.has("advance_ms")) {
            driver.advanceWallClockTime(Duration.ofMillis(s.get("advance_ms").asLong()));
            return;
        }
        TestInputTopic<String, Object> topic = inputs.get(s.get("pipe").asText());
        if (topic == null) {
            throw new IllegalArgumentException("no source reads " + s.get("pipe").asText());
        }
        String key = s.hasNonNull("key") ? s.get("key").asText() : null;
        topic.pipeInput(key, scalar(s.get("value")), s.get("ts").asLong());
    }

    /** The lines print nodes wrote during a step, as records of topic "stdout". */
    private static void drainPrinted(String name, int step) {
        for (String line : Extras.printedLines()) {
            ObjectNode o = emit(name, step);
            o.put("topic", "stdout");
            o.putNull("key");
            o.put("value", line);
            o.put("ts", 0L);
        }
    }

    /** A record key as compared: UTF-8 text, or hex of the raw bytes on a windowed-key topic. */
    private static String key(String topic, byte[] key) {
        if (key == null) {
            return null;
        }
        if (topic.endsWith(Dsl.WIRE_SUFFIX)) {
            return java.util.HexFormat.of().formatHex(key);
        }
        return new String(key, java.nio.charset.StandardCharsets.UTF_8);
    }

    private static void drain(Map<String, TestOutputTopic<byte[], byte[]>> outputs, String name, int step)
            throws IOException {
        for (Map.Entry<String, TestOutputTopic<byte[], byte[]>> e : outputs.entrySet()) {
            while (!e.getValue().isEmpty()) {
                TestRecord<byte[], byte[]> r = e.getValue().readRecord();
                ObjectNode o = emit(name, step);
                o.put("topic", e.getKey());
                o.put("key", key(e.getKey(), r.key()));
                o.set("value", r.value() == null ? JsonSerde.MAPPER.nullNode() : JsonSerde.MAPPER.readTree(r.value()));
                o.put("ts", r.timestamp());
            }
        }
    }
}
