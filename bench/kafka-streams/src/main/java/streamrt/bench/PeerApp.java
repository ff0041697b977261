package streamrt.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.Iterator;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * Kafka Streams as a benchmark peer of streamrt (issue 18).
 *
 * <ul>
 *   <li>{@code peers}: one workload of bench/peers_throughput.py (stateless, wordcount,
 *       sessions), configured by the harness's PEERS_* environment like every contender;
 *   <li>{@code sessions [--threads N]}: the sessions app of the rolling-deploy benchmark
 *       (bench/rolling_deploy.py), configured by the deploy driver's CONTENDER_* environment;
 *       it publishes the lifecycle events the deploy report reads (see {@link Lifecycle});
 *   <li>{@code rebalance}: the counting app of the cooperative-rebalance benchmark
 *       (bench/rebalance_cooperative.py), see {@link RebalanceApp}.
 * </ul>
 *
 * <p>The sessions fold keeps its profiles in a persistent RocksDB store with a changelog
 * (Kafka Streams' defaults); the record cache is off so that every update is emitted, as the
 * other contenders do and as the harness's verification expects.
 */
public final class PeerApp {
    private PeerApp() {}

    static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isEmpty() ? fallback : value;
    }

    /** The sessions fold: clicks keyed by user into one JSON profile per user. */
    static void sessions(StreamsBuilder builder, String source, String sink) {
        builder.stream(source, Consumed.with(Serdes.String(), Serdes.ByteArray()))
                .groupByKey(Grouped.with(Serdes.String(), Serdes.ByteArray()))
                .aggregate(
                        () -> Fold.write(Fold.newProfile()),
                        (user, click, profile) ->
                                Fold.write(
                                        Fold.addClick(
                                                Fold.parse(click),
                                                (ObjectNode) Fold.parse(profile))),
                        Materialized.<String, byte[]>as(
                                        Stores.persistentKeyValueStore("profiles"))
                                .withKeySerde(Serdes.String())
                                .withValueSerde(Serdes.ByteArray()))
                .toStream()
                .to(sink, Produced.with(Serdes.String(), Serdes.ByteArray()));
    }

    static Topology peersTopology(String workload, String source, String sink) {
        StreamsBuilder builder = new StreamsBuilder();
        switch (workload) {
            case "stateless" ->
                    builder.stream(source, Consumed.with(Serdes.String(), Serdes.ByteArray()))
                            .mapValues(Fold::parse)
                            .filter((k, v) -> Fold.statelessKeep(v))
                            .mapValues(v -> Fold.write(Fold.statelessMap(v)))
                            .to(sink, Produced.with(Serdes.String(), Serdes.ByteArray()));
            case "wordcount" ->
                    builder.stream(source, Consumed.with(Serdes.String(), Serdes.String()))
                            .flatMap(
                                    (k, line) ->
                                            Fold.words(line).stream()
                                                    .map(w -> KeyValue.pair(w, w))
                                                    .toList())
                            .groupByKey(Grouped.with("words", Serdes.String(), Serdes.String()))
                            .count(
                                    Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as(
                                                    "counts")
                                            .withKeySerde(Serdes.String())
                                            .withValueSerde(Serdes.Long()))
                            .toStream()
                            .mapValues(String::valueOf) // a JSON number, as streamrt's json serde
                            .to(sink, Produced.with(Serdes.String(), Serdes.String()));
            case "sessions" -> sessions(builder, source, sink);
            default -> throw new IllegalArgumentException("unknown workload " + workload);
        }
        return builder.build();
    }

    static void putJsonObject(Properties props, String json) {
        JsonNode extra = Fold.parse(json.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        for (Iterator<Map.Entry<String, JsonNode>> it = extra.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            props.put(e.getKey(), e.getValue().asText());
        }
    }

    static Properties common(String appId, String bootstrap, int threads, String stateDir) {
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, threads);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        return props;
    }

    static int runPeers() throws InterruptedException {
        String workload = env("PEERS_WORKLOAD", "stateless");
        Properties props =
                common(
                        env("PEERS_APP_ID", "peers"),
                        env("PEERS_BOOTSTRAP", "127.0.0.1:9092"),
                        Integer.parseInt(env("PEERS_THREADS", "1")),
                        env("PEERS_STATE_DIR", "state"));
        putJsonObject(props, env("PEERS_CONFIG", "{}"));
        Topology topology = peersTopology(workload, env("PEERS_IN", "in"), env("PEERS_OUT", "out"));
        return runUntilSignal(new KafkaStreams(topology, props), null);
    }

    static int runSessions(int threads) throws InterruptedException {
        String instance = System.getenv("CONTENDER_INSTANCE_ID");
        JsonNode config =
                Fold.parse(
                        env("CONTENDER_CONFIG", "{}")
                                .getBytes(java.nio.charset.StandardCharsets.UTF_8));
        String appId = config.path("application.id").asText("sessions");
        String bootstrap = env("CONTENDER_BOOTSTRAP", "127.0.0.1:9092");
        Properties props = common(appId, bootstrap, threads, env("CONTENDER_STATE_DIR", "state"));
        for (String key :
                new String[] {"session.timeout.ms", "heartbeat.interval.ms", "commit.interval.ms"}) {
            if (config.has(key)) {
                props.put(StreamsConfig.consumerPrefix(key), config.get(key).asText());
            }
        }
        if (config.has("commit.interval.ms")) {
            props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, config.get("commit.interval.ms").asText());
        }
        if (instance != null && !instance.isEmpty()) {
            // Kafka Streams gives each thread's consumer "<group.instance.id>-<thread index>".
            props.put(StreamsConfig.consumerPrefix("group.instance.id"), instance);
        }
        StreamsBuilder builder = new StreamsBuilder();
        sessions(builder, "clicks", "session-profiles");
        Lifecycle life = new Lifecycle(bootstrap, appId, instance, threads);
        KafkaStreams streams = new KafkaStreams(builder.build(), props, new WatchingSupplier(life));
        streams.setStateListener(life::clientState);
        streams.setGlobalStateRestoreListener(life);
        return runUntilSignal(streams, life);
    }

    static int runUntilSignal(KafkaStreams streams, Lifecycle life) throws InterruptedException {
        CountDownLatch done = new CountDownLatch(1);
        Thread hook =
                new Thread(
                        () -> {
                            streams.close(Duration.ofSeconds(60));
                            if (life != null) {
                                life.close();
                            }
                            done.countDown();
                        },
                        "shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        streams.setUncaughtExceptionHandler(
                e -> {
                    e.printStackTrace();
                    return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler
                            .StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
                });
        streams.start();
        // A client that failed (state ERROR) exits non-zero, so the harness sees it at once.
        while (!done.await(1, java.util.concurrent.TimeUnit.SECONDS)) {
            if (streams.state() == KafkaStreams.State.ERROR) {
                System.err.println("Kafka Streams client in state ERROR; exiting");
                return 1;
            }
        }
        return 0;
    }

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "peers";
        int threads = 1;
        for (int i = 1; i + 1 < args.length; i++) {
            if (args[i].equals("--threads")) {
                threads = Integer.parseInt(args[i + 1]);
            }
        }
        switch (mode) {
            case "peers" -> System.exit(runPeers());
            case "sessions" -> System.exit(runSessions(threads));
            case "rebalance" -> System.exit(RebalanceApp.run());
            default -> {
                System.err.println("usage: PeerApp peers | sessions [--threads N] | rebalance");
                System.exit(2);
            }
        }
    }
}
