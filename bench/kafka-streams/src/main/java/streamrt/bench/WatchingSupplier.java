package streamrt.bench;

import java.time.Duration;
import java.util.Collection;
import java.util.Map;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.streams.KafkaClientSupplier;
import org.apache.kafka.streams.processor.internals.DefaultKafkaClientSupplier;

/**
 * Kafka Streams' own clients, two of them watched through public consumer API only: the main
 * consumer reports each new group generation it sees (ConsumerGroupMetadata after a poll, on
 * the stream thread that owns it), the restore consumer counts the changelog bytes it returns.
 * When the lifecycle watches assignments, the main consumer also wraps the rebalance listener
 * Kafka Streams subscribes with, to publish the thread's assignment after each generation.
 */
final class WatchingSupplier implements KafkaClientSupplier {
    private final DefaultKafkaClientSupplier base = new DefaultKafkaClientSupplier();
    private final Lifecycle life;

    WatchingSupplier(Lifecycle life) {
        this.life = life;
    }

    @Override
    public Admin getAdmin(Map<String, Object> config) {
        return base.getAdmin(config);
    }

    @Override
    public Producer<byte[], byte[]> getProducer(Map<String, Object> config) {
        return base.getProducer(config);
    }

    @Override
    public Consumer<byte[], byte[]> getConsumer(Map<String, Object> config) {
        return new MainConsumer(config, life);
    }

    @Override
    public Consumer<byte[], byte[]> getRestoreConsumer(Map<String, Object> config) {
        return new RestoreConsumer(config, life);
    }

    @Override
    public Consumer<byte[], byte[]> getGlobalConsumer(Map<String, Object> config) {
        return base.getGlobalConsumer(config);
    }

    static final class MainConsumer extends KafkaConsumer<byte[], byte[]> {
        private final Lifecycle life;
        private int generation = -1;

        MainConsumer(Map<String, Object> config, Lifecycle life) {
            super(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
            this.life = life;
        }

        @Override
        public ConsumerRecords<byte[], byte[]> poll(Duration timeout) {
            ConsumerRecords<byte[], byte[]> records = super.poll(timeout);
            int now = groupMetadata().generationId();
            if (now != generation && now > 0) {
                generation = now;
                life.generation(now);
            }
            return records;
        }

        @Override
        public void subscribe(Collection<String> topics, ConsumerRebalanceListener listener) {
            super.subscribe(topics, watched(listener));
        }

        @Override
        public void subscribe(Pattern pattern, ConsumerRebalanceListener listener) {
            super.subscribe(pattern, watched(listener));
        }

        private ConsumerRebalanceListener watched(ConsumerRebalanceListener listener) {
            return life.watchesAssignments() ? new Watched(listener) : listener;
        }

        /** Kafka Streams' own listener first; then the assignment it left, as an event. */
        private final class Watched implements ConsumerRebalanceListener {
            private final ConsumerRebalanceListener inner;

            Watched(ConsumerRebalanceListener inner) {
                this.inner = inner;
            }

            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                inner.onPartitionsRevoked(partitions);
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> partitions) {
                inner.onPartitionsLost(partitions);
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                inner.onPartitionsAssigned(partitions);
                life.assignment(groupMetadata().generationId(), assignment());
            }
        }
    }

    static final class RestoreConsumer extends KafkaConsumer<byte[], byte[]> {
        private final Lifecycle life;

        RestoreConsumer(Map<String, Object> config, Lifecycle life) {
            super(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
            this.life = life;
        }

        @Override
        public ConsumerRecords<byte[], byte[]> poll(Duration timeout) {
            ConsumerRecords<byte[], byte[]> records = super.poll(timeout);
            for (ConsumerRecord<byte[], byte[]> r : records) {
                long size = (r.key() == null ? 0 : r.key().length)
                        + (r.value() == null ? 0 : r.value().length);
                life.restoredBytes(r.topic(), r.partition(), size);
            }
            return records;
        }
    }
}
