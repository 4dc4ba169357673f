package baton.compat;

import baton.compat.Main.Env;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** The single-partition scenarios: produce, consume, commit, idempotent. */
final class Basic {
    private Basic() {}

    static List<String> values(String prefix, int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(prefix + "-" + i);
        }
        return out;
    }

    static Properties producerProps(Env env, boolean idempotent) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, env.bootstrap());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        // kafka-clients 3.x turns idempotence on by default; the plain produce
        // scenario turns it off so both paths of the broker are exercised.
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, Boolean.toString(idempotent));
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) Main.DEADLINE.toMillis());
        if (idempotent) {
            // Small batches and five in flight: the broker sees a run of
            // pipelined batches with rising sequence numbers, not one batch.
            p.put(ProducerConfig.RETRIES_CONFIG, Integer.MAX_VALUE);
            p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5);
            p.put(ProducerConfig.BATCH_SIZE_CONFIG, 256);
            p.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        } else {
            p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        }
        return p;
    }

    /** Sends every value (to `partition`, or where the partitioner puts it when
     * null) and returns each acknowledgement, in send order. */
    static List<RecordMetadata> send(Env env, List<String> vals, Integer partition, boolean idempotent)
            throws Exception {
        List<RecordMetadata> out = new ArrayList<>();
        try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps(env, idempotent))) {
            List<Future<RecordMetadata>> futs = new ArrayList<>();
            for (String v : vals) {
                futs.add(p.send(new ProducerRecord<>(env.topic(), partition, null, v)));
            }
            p.flush();
            for (Future<RecordMetadata> f : futs) {
                out.add(f.get(Main.DEADLINE.toSeconds(), TimeUnit.SECONDS));
            }
        }
        return out;
    }

    static Properties consumerProps(Env env, String group, String clientId) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, env.bootstrap());
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10000);
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
        }
        return p;
    }

    /** Polls until `n` records arrived (or the deadline passed) and returns them. */
    static List<ConsumerRecord<String, String>> pollN(KafkaConsumer<String, String> c, int n) {
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        long end = System.nanoTime() + Main.DEADLINE.toNanos();
        while (got.size() < n && System.nanoTime() < end) {
            c.poll(java.time.Duration.ofMillis(200)).forEach(got::add);
        }
        return got;
    }

    static List<String> valuesOf(List<ConsumerRecord<String, String>> recs) {
        return recs.stream().map(ConsumerRecord::value).toList();
    }

    /** acks=all, idempotence off: 50 values p-0..p-49, acknowledged at rising
     * offsets. The caller reads them back with another client. */
    static void produce(Env env) throws Exception {
        List<RecordMetadata> acks = send(env, values("p", 50), null, false);
        for (int i = 1; i < acks.size(); i++) {
            RecordMetadata a = acks.get(i - 1), b = acks.get(i);
            Main.check(a.partition() != b.partition() || a.offset() < b.offset(),
                    "offsets do not rise in send order: " + a + " then " + b);
        }
    }

    /** The caller wrote c-0..c-49; read them from the earliest offset of every
     * partition, outside any group (assign, then seekToBeginning). */
    static void consume(Env env) {
        List<String> want = values("c", 50);
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps(env, null, "java-consume"))) {
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo pi : c.partitionsFor(env.topic(), Main.DEADLINE)) {
                tps.add(new TopicPartition(pi.topic(), pi.partition()));
            }
            Main.check(!tps.isEmpty(), "the topic has no partitions");
            c.assign(tps);
            c.seekToBeginning(tps);
            List<String> got = valuesOf(pollN(c, want.size()));
            Main.check(got.equals(want), "read " + got + ", want " + want);
        }
    }

    /** commitSync, then a new member of the group resumes from the commit:
     * a-0..a-9 consumed and committed (offset 10, checked with committed()),
     * then b-0..b-4 appended and read by a fresh consumer starting at offset
     * 10, which commits 15. The caller checks 15 with another client. */
    static void commit(Env env) throws Exception {
        TopicPartition tp0 = new TopicPartition(env.topic(), 0);
        send(env, values("a", 10), 0, false);
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps(env, env.group(), "java-c1"))) {
            c.subscribe(List.of(env.topic()));
            List<String> got = valuesOf(pollN(c, 10));
            Main.check(got.equals(values("a", 10)), "first member read " + got);
            c.commitSync(Main.DEADLINE);
        }
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps(env, env.group(), "java-check"))) {
            Map<TopicPartition, OffsetAndMetadata> m = c.committed(Set.of(tp0), Main.DEADLINE);
            OffsetAndMetadata om = m.get(tp0);
            Main.check(om != null && om.offset() == 10, "committed offset after the first member is " + om + ", want 10");
        }
        send(env, values("b", 5), 0, false);
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps(env, env.group(), "java-c2"))) {
            c.subscribe(List.of(env.topic()));
            List<ConsumerRecord<String, String>> recs = pollN(c, 5);
            Main.check(!recs.isEmpty() && recs.get(0).offset() == 10,
                    "the second member did not resume at offset 10: " + recs);
            Main.check(valuesOf(recs).equals(values("b", 5)), "second member read " + valuesOf(recs));
            c.commitSync(Main.DEADLINE);
        }
    }

    /** enable.idempotence with retries and five batches in flight: i-0..i-199
     * land at 200 consecutive offsets, each once. The caller reads them back
     * with another client and checks there are no duplicates. */
    static void idempotent(Env env) throws Exception {
        List<RecordMetadata> acks = send(env, values("i", 200), null, true);
        long base = acks.get(0).offset();
        for (int i = 0; i < acks.size(); i++) {
            RecordMetadata a = acks.get(i);
            Main.check(a.partition() == acks.get(0).partition() && a.offset() == base + i,
                    "record " + i + " acknowledged at " + a + ", want offset " + (base + i));
        }
    }
}
