package streamrt.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.MemberToRemove;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The counting app of bench/rebalance_cooperative.py (issue 26), the Kafka Streams side: count
 * per key (RocksDB store {@code rb-store}, changelogged) from {@code REBAL_INPUT} to {@code
 * REBAL_OUTPUT} (8-byte counts). Configured by the harness's CONTENDER_* environment: {@code
 * CONTENDER_CONFIG} is a JSON object of Kafka Streams configs (Kafka's names) applied as they
 * are; {@code CONTENDER_INSTANCE_ID} becomes the main consumers' group.instance.id (Kafka
 * Streams appends {@code -<thread index>}).
 *
 * <p>The harness changes the group at run time through stdin, one command a line, one answer
 * line on stdout ({@code ok ...} or {@code error ...}):
 *
 * <ul>
 *   <li>{@code add-thread}: {@link KafkaStreams#addStreamThread()};
 *   <li>{@code remove-members ID[,ID...]}: the Admin API's removeMembersFromConsumerGroup for
 *       those group.instance.ids, what {@code streamrt instances remove} does for a stopped
 *       instance's static members (a batch LeaveGroup by instance id).
 * </ul>
 */
final class RebalanceApp {
    static final String STORE = "rb-store";

    private RebalanceApp() {}

    static Topology topology(String source, String sink) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(source, Consumed.with(Serdes.String(), Serdes.ByteArray()))
                .groupByKey(Grouped.with(Serdes.String(), Serdes.ByteArray()))
                .count(
                        Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as(STORE)
                                .withKeySerde(Serdes.String())
                                .withValueSerde(Serdes.Long()))
                .toStream()
                .to(sink, Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    static int run() throws InterruptedException {
        String instance = System.getenv("CONTENDER_INSTANCE_ID");
        String bootstrap = PeerApp.env("CONTENDER_BOOTSTRAP", "127.0.0.1:9092");
        String source = PeerApp.env("REBAL_INPUT", "rb-events");
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.STATE_DIR_CONFIG, PeerApp.env("CONTENDER_STATE_DIR", "state"));
        PeerApp.putJsonObject(props, PeerApp.env("CONTENDER_CONFIG", "{}"));
        if (instance != null && !instance.isEmpty()) {
            props.put(StreamsConfig.consumerPrefix(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG), instance);
        }
        String appId = props.getProperty(StreamsConfig.APPLICATION_ID_CONFIG, "rebal");
        int threads =
                Integer.parseInt(props.getProperty(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1"));
        Lifecycle life = new Lifecycle(bootstrap, appId, instance, threads);
        life.watchAssignments(source);
        KafkaStreams streams =
                new KafkaStreams(
                        topology(source, PeerApp.env("REBAL_OUTPUT", "rb-counts")),
                        props,
                        new WatchingSupplier(life));
        streams.setStateListener(life::clientState);
        streams.setGlobalStateRestoreListener(life);
        Thread control = new Thread(() -> control(streams, appId, bootstrap), "control");
        control.setDaemon(true);
        control.start();
        return PeerApp.runUntilSignal(streams, life);
    }

    /** Answers stdin's commands until stdin closes. */
    static void control(KafkaStreams streams, String appId, String bootstrap) {
        Properties config = new Properties();
        config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (Admin admin = Admin.create(config)) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                System.out.println(answer(streams, admin, appId, line.trim()));
                System.out.flush();
            }
        } catch (IOException e) {
            System.err.println("control: stdin failed: " + e);
        }
    }

    static String answer(KafkaStreams streams, Admin admin, String appId, String line) {
        try {
            if (line.equals("add-thread")) {
                return streams.addStreamThread().map(n -> "ok " + n).orElse("error not added");
            }
            if (line.startsWith("remove-members ")) {
                List<MemberToRemove> members =
                        Arrays.stream(line.substring("remove-members ".length()).split(","))
                                .map(MemberToRemove::new)
                                .toList();
                admin.removeMembersFromConsumerGroup(
                                appId, new RemoveMembersFromConsumerGroupOptions(members))
                        .all()
                        .get(30, TimeUnit.SECONDS);
                return "ok removed " + members.size();
            }
            return "error unknown command: " + line;
        } catch (Exception e) {
            return "error " + e;
        }
    }
}
