package streamrt.differential;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.VersionedRecord;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.WindowStoreIterator;

/** Processor-API stores for the differential suite (issue 38): a store declared with Kafka's
 *  Stores builders, the built-in processor that writes each record into it, and the reads a
 *  scenario step makes through the test driver's store access. tests/differential/stores.py
 *  is the streamrt side; both print a read as the same JSON. */
@SuppressWarnings({"unchecked", "rawtypes"})
final class StoreOps {
    private StoreOps() {}

    private static final JsonSerde JSON = new JsonSerde();

    /** The store a scenario's {"op": "addStateStore", "store": {...}} declares. */
    static StoreBuilder<?> builder(JsonNode s) {
        String name = s.get("name").asText();
        String type = s.get("type").asText();
        boolean persistent = s.path("persistent").asBoolean(true);
        StoreBuilder<?> b;
        switch (type) {
            case "keyValue":
                b = Stores.keyValueStoreBuilder(persistent ? Stores.persistentKeyValueStore(name)
                    : Stores.inMemoryKeyValueStore(name), Serdes.String(), JSON);
                break;
            case "timestampedKeyValue":
                b = Stores.timestampedKeyValueStoreBuilder(persistent
                    ? Stores.persistentTimestampedKeyValueStore(name) : Stores.inMemoryKeyValueStore(name),
                    Serdes.String(), JSON);
                break;
            case "window": {
                Duration retention = Duration.ofMillis(s.get("retention_ms").asLong());
                Duration size = Duration.ofMillis(s.get("size_ms").asLong());
                b = Stores.timestampedWindowStoreBuilder(persistent
                    ? Stores.persistentTimestampedWindowStore(name, retention, size, false)
                    : Stores.inMemoryWindowStore(name, retention, size, false), Serdes.String(), JSON);
                break;
            }
            case "session": {
                Duration retention = Duration.ofMillis(s.get("retention_ms").asLong());
                b = Stores.sessionStoreBuilder(persistent ? Stores.persistentSessionStore(name, retention)
                    : Stores.inMemorySessionStore(name, retention), Serdes.String(), JSON);
                break;
            }
            case "versioned":
                b = Stores.versionedKeyValueStoreBuilder(Stores.persistentVersionedKeyValueStore(name,
                    Duration.ofMillis(s.get("history_ms").asLong())), Serdes.String(), JSON);
                break;
            default: throw new IllegalArgumentException("unknown store type " + type);
        }
        if (s.path("caching").asBoolean(false)) {
            b = b.withCachingEnabled();
        }
        return b;
    }

    /** Writes each record into its store, as a processor ported from Java would: key-value
     *  put (null deletes), timestamped put with the record's time, versioned put at the record's
     *  time, window put at window start = record time, session put of [ts, ts]. */
    static final class Put implements Processor<String, Object, String, Object> {
        private final String store;
        private final String type;
        private Object s;

        Put(String store, String type) {
            this.store = store;
            this.type = type;
        }

        @Override
        public void init(ProcessorContext<String, Object> context) {
            s = context.getStateStore(store);
        }

        @Override
        public void process(Record<String, Object> r) {
            String k = r.key();
            Object v = r.value();
            long ts = r.timestamp();
            switch (type) {
                case "keyValue": ((KeyValueStore) s).put(k, v); break;
                case "timestampedKeyValue":
                    ((KeyValueStore) s).put(k, v == null ? null : ValueAndTimestamp.make(v, ts));
                    break;
                case "versioned": ((VersionedKeyValueStore) s).put(k, v, ts); break;
                case "window":
                    ((WindowStore) s).put(k, v == null ? null : ValueAndTimestamp.make(v, ts), ts);
                    break;
                case "session": ((SessionStore) s).put(new Windowed<>(k, new SessionWindow(ts, ts)), v); break;
                default: throw new IllegalArgumentException("unknown store type " + type);
            }
        }
    }

    private static String str(JsonNode step, String field) {
        JsonNode f = step.get(field);
        return f == null || f.isNull() ? null : f.asText();
    }

    private static ArrayNode row(Object... items) {
        return JsonSerde.MAPPER.valueToTree(java.util.Arrays.asList(items));
    }

    private static Object plain(Object v) {
        return v instanceof ValueAndTimestamp ? row(((ValueAndTimestamp) v).value(), ((ValueAndTimestamp) v).timestamp()) : v;
    }

    private static ArrayNode kvs(KeyValueIterator<?, ?> it) {
        List<Object> out = new ArrayList<>();
        try (it) {
            while (it.hasNext()) {
                KeyValue<?, ?> kv = it.next();
                Object key = kv.key;
                if (key instanceof Windowed) {
                    Windowed<?> w = (Windowed<?>) key;
                    out.add(row(w.key(), w.window().start(), w.window().end(), plain(kv.value)));
                } else {
                    out.add(row(key, plain(kv.value)));
                }
            }
        }
        return JsonSerde.MAPPER.valueToTree(out);
    }

    private static ArrayNode windows(WindowStoreIterator<?> it) {
        List<Object> out = new ArrayList<>();
        try (it) {
            while (it.hasNext()) {
                KeyValue<Long, ?> kv = it.next();
                out.add(row(kv.key, plain(kv.value)));
            }
        }
        return JsonSerde.MAPPER.valueToTree(out);
    }

    /** A {"read": store, "method": ..., ...} step through the driver's store access. */
    static JsonNode read(TopologyTestDriver driver, JsonNode step, String type) {
        String name = step.get("read").asText();
        String method = step.get("method").asText();
        switch (type) {
            case "keyValue":
            case "timestampedKeyValue": {
                KeyValueStore<String, Object> s = type.equals("keyValue") ? driver.getKeyValueStore(name)
                    : (KeyValueStore) driver.getTimestampedKeyValueStore(name);
                switch (method) {
                    case "get": return JsonSerde.MAPPER.valueToTree(plain(s.get(str(step, "key"))));
                    case "range": return kvs(s.range(str(step, "from"), str(step, "to")));
                    case "reverseRange": return kvs(s.reverseRange(str(step, "from"), str(step, "to")));
                    case "all": return kvs(s.all());
                    case "reverseAll": return kvs(s.reverseAll());
                    case "prefixScan": return kvs(s.prefixScan(str(step, "prefix"), new StringSerializer()));
                    default: break;
                }
                break;
            }
            case "window": {
                WindowStore<String, Object> s = (WindowStore) driver.getTimestampedWindowStore(name);
                Instant from = Instant.ofEpochMilli(step.path("from_ms").asLong());
                Instant to = Instant.ofEpochMilli(step.path("to_ms").asLong());
                switch (method) {
                    case "fetch": return windows(s.fetch(str(step, "key"), from, to));
                    case "backwardFetch": return windows(s.backwardFetch(str(step, "key"), from, to));
                    case "fetchRange": return kvs(s.fetch(str(step, "key_from"), str(step, "key_to"), from, to));
                    case "backwardFetchRange":
                        return kvs(s.backwardFetch(str(step, "key_from"), str(step, "key_to"), from, to));
                    case "fetchAll": return kvs(s.fetchAll(from, to));
                    case "backwardFetchAll": return kvs(s.backwardFetchAll(from, to));
                    case "all": return kvs(s.all());
                    case "backwardAll": return kvs(s.backwardAll());
                    default: break;
                }
                break;
            }
            case "session": {
                SessionStore<String, Object> s = driver.getSessionStore(name);
                long earliestEnd = step.path("earliest_end").asLong();
                long latestStart = step.path("latest_start").asLong();
                switch (method) {
                    case "findSessions": return kvs(s.findSessions(str(step, "key"), earliestEnd, latestStart));
                    case "backwardFindSessions":
                        return kvs(s.backwardFindSessions(str(step, "key"), earliestEnd, latestStart));
                    case "fetchSession":
                        return JsonSerde.MAPPER.valueToTree(s.fetchSession(str(step, "key"),
                            step.get("start").asLong(), step.get("end").asLong()));
                    default: break;
                }
                break;
            }
            case "versioned": {
                VersionedKeyValueStore<String, Object> s = driver.getVersionedKeyValueStore(name);
                VersionedRecord<Object> r = method.equals("getAsOf")
                    ? s.get(str(step, "key"), step.get("as_of").asLong()) : s.get(str(step, "key"));
                return r == null ? JsonSerde.MAPPER.nullNode() : row(r.value(), r.timestamp());
            }
            default: break;
        }
        throw new IllegalArgumentException("unknown read " + type + "." + method);
    }
}
