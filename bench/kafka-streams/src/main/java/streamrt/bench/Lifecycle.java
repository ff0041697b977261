package streamrt.bench;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.Comparator;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.processor.StateRestoreListener;

/**
 * Publishes the few lifecycle events the deploy report reads to {@code <app>-events}, in
 * streamrt's schema (docs/events.md), so one deploy driver and one report measure every
 * contender alike: {@code thread_state} from the client's state listener (RUNNING for every
 * thread when Kafka Streams says RUNNING), {@code rebalance_complete} with each new group
 * generation a stream thread's consumer sees, and {@code restore_complete} per changelog
 * partition from Kafka Streams' StateRestoreListener (records) and the restore consumer
 * (bytes: key + value of every changelog record it returned). With {@link #watchAssignments}
 * (the rebalance benchmark) it also publishes each stream thread's {@code assignment} after
 * every generation, as streamrt does, so bench/rebalance_cooperative.py can tell which
 * partitions moved and when the group was balanced.
 */
final class Lifecycle implements StateRestoreListener {
    private static final Pattern THREAD = Pattern.compile("StreamThread-(\\d+)");
    private final KafkaProducer<byte[], byte[]> producer;
    private final String topic;
    private final String appId;
    private final String instance;
    private final boolean isStatic;
    private final int threads;
    private final long pid = ProcessHandle.current().pid();
    private final String host;
    private final Map<TopicPartition, AtomicLong> bytes = new ConcurrentHashMap<>();
    private String state = "CREATED";
    private boolean closed;
    private volatile String assignmentTopic;

    Lifecycle(String bootstrap, String appId, String instance, int threads) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "1");
        p.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "lifecycle-events");
        this.producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        this.topic = appId + "-events";
        this.appId = appId;
        this.isStatic = instance != null && !instance.isEmpty();
        this.instance = isStatic ? instance : "kafka-streams-" + pid;
        this.threads = threads;
        String h;
        try {
            h = InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            h = "localhost";
        }
        this.host = h;
    }

    static int threadIndex() {
        Matcher m = THREAD.matcher(Thread.currentThread().getName());
        return m.find() ? Integer.parseInt(m.group(1)) : 1;
    }

    synchronized void event(String type, int thread, ObjectNode fields) {
        if (closed) {
            return; // Kafka Streams' CloseThread may report NOT_RUNNING after our producer closed
        }
        ObjectNode e = JsonNodeFactory.instance.objectNode();
        e.put("v", 1);
        e.put("ts", System.currentTimeMillis() / 1000.0);
        e.put("application_id", appId);
        e.put("instance_id", instance);
        e.put("thread", thread);
        e.put("thread_id", isStatic ? instance + "-" + thread : instance + "-thread-" + thread);
        e.put("static", isStatic);
        e.put("pid", pid);
        e.put("host", host);
        e.put("type", type);
        e.set("fields", fields);
        producer.send(
                new ProducerRecord<>(
                        topic, 0, instance.getBytes(StandardCharsets.UTF_8), Fold.write(e)));
    }

    static ObjectNode fields() {
        return JsonNodeFactory.instance.objectNode();
    }

    void clientState(KafkaStreams.State now, KafkaStreams.State old) {
        String name =
                switch (now) {
                    case RUNNING -> "RUNNING";
                    case REBALANCING -> "PARTITIONS_ASSIGNED";
                    case PENDING_SHUTDOWN -> "PENDING_SHUTDOWN";
                    case NOT_RUNNING, ERROR, PENDING_ERROR -> "DEAD";
                    default -> "CREATED";
                };
        for (int t = 1; t <= threads; t++) {
            event("thread_state", t, fields().put("old", state).put("new", name));
        }
        state = name;
        producer.flush();
    }

    void generation(int generation) {
        event("rebalance_complete", threadIndex(), fields().put("generation", generation));
    }

    /** Publish every thread's assignment of {@code sourceTopic} after each generation. */
    void watchAssignments(String sourceTopic) {
        assignmentTopic = sourceTopic;
    }

    boolean watchesAssignments() {
        return assignmentTopic != null;
    }

    /**
     * A stream thread's consumer completed a generation (its onPartitionsAssigned ran, which
     * the classic protocol calls every generation, even with nothing added): the generation
     * and the thread's whole assignment. Tasks are {@code 0_<partition>}: the benchmark's
     * topology is one sub-topology reading one topic.
     */
    void assignment(int generation, Collection<TopicPartition> owned) {
        int thread = threadIndex();
        event("rebalance_complete", thread, fields().put("generation", generation));
        ArrayNode partitions = JsonNodeFactory.instance.arrayNode();
        ArrayNode tasks = JsonNodeFactory.instance.arrayNode();
        owned.stream()
                .filter(tp -> tp.topic().equals(assignmentTopic))
                .sorted(Comparator.comparingInt(TopicPartition::partition))
                .forEach(
                        tp -> {
                            partitions.add(tp.toString());
                            tasks.add("0_" + tp.partition());
                        });
        ObjectNode f = fields();
        f.set("partitions", partitions);
        f.set("tasks", tasks);
        event("assignment", thread, f);
    }

    void restoredBytes(String topic, int partition, long size) {
        bytes.computeIfAbsent(new TopicPartition(topic, partition), k -> new AtomicLong())
                .addAndGet(size);
    }

    @Override
    public void onRestoreStart(TopicPartition tp, String store, long start, long end) {
        bytes.put(tp, new AtomicLong());
    }

    @Override
    public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long restored) {}

    @Override
    public void onRestoreEnd(TopicPartition tp, String store, long totalRestored) {
        complete(tp, store, totalRestored);
    }

    @Override
    public void onRestoreSuspended(TopicPartition tp, String store, long totalRestored) {
        complete(tp, store, totalRestored);
    }

    private void complete(TopicPartition tp, String store, long records) {
        AtomicLong size = bytes.remove(tp);
        event(
                "restore_complete",
                threadIndex(),
                fields().put("task", tp.topic() + "-" + tp.partition())
                        .put("store", store)
                        .put("records", records)
                        .put("bytes", size == null ? 0 : size.get()));
    }

    synchronized void close() {
        closed = true;
        producer.close(java.time.Duration.ofSeconds(5));
    }
}
