package baton.compat;

import java.io.File;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A share group member (KIP-932) with explicit acknowledgement, for
 * test_share_groups.py: it competes with other consumers of GROUP on TOPIC
 * and settles each record by its value "s-i": i % 10 == 7 is rejected,
 * i % 10 == 3 is released on its first delivery, everything else accepted.
 *
 * <p>One line per record on stdout, "got VALUE DELIVERY_COUNT TYPE", printed
 * after the acknowledgement is committed; "ackfail VALUE ERROR" for one the
 * broker refused. Runs until the file named by BATON_SHARE_STOP exists (or
 * two minutes pass), then closes the consumer.
 */
final class Share {
    private Share() {}

    static AcknowledgeType decide(String value, short deliveryCount) {
        int i = Integer.parseInt(value.substring(value.indexOf('-') + 1));
        if (i % 10 == 7) {
            return AcknowledgeType.REJECT;
        }
        if (i % 10 == 3 && deliveryCount == 1) {
            return AcknowledgeType.RELEASE;
        }
        return AcknowledgeType.ACCEPT;
    }

    /**
     * Sets the group's share.auto.offset.reset to earliest, as a Kafka user does before a
     * new share group reads what was written before it joined (the default is latest, on
     * Apache Kafka and on Baton).
     */
    static void fromEarliest(Main.Env env) throws Exception {
        setGroupConfig(env, "share.auto.offset.reset", "earliest");
    }

    /** Sets one config of GROUP with the admin client (IncrementalAlterConfigs, SET). */
    static void setGroupConfig(Main.Env env, String name, String value) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", env.bootstrap());
        try (Admin a = Admin.create(p)) {
            ConfigResource g = new ConfigResource(ConfigResource.Type.GROUP, env.group());
            AlterConfigOp op = new AlterConfigOp(new ConfigEntry(name, value), AlterConfigOp.OpType.SET);
            a.incrementalAlterConfigs(Map.of(g, List.of(op))).all().get();
        }
    }

    /** A member of GROUP that acknowledges each record itself. */
    static Properties explicitMember(Main.Env env) {
        Properties p = new Properties();
        p.put("bootstrap.servers", env.bootstrap());
        p.put("group.id", env.group());
        p.put("share.acknowledgement.mode", "explicit");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        return p;
    }

    /**
     * The share-consume benchmark (docs/benchmarks/kafka-share.md): BATON_SHARE_CONSUMERS
     * members (threads) accept every record of TOPIC one by one (explicit mode; the
     * acknowledgements ride on the next fetch) until BATON_SHARE_COUNT are accepted in
     * all. Prints "share_bench N records in S s = R msg/s", timed from the first record
     * to the last acknowledgement committed.
     */
    static void bench(Main.Env env) throws Exception {
        fromEarliest(env);
        long want = Long.parseLong(System.getenv().getOrDefault("BATON_SHARE_COUNT", "100000"));
        int threads = Integer.parseInt(System.getenv().getOrDefault("BATON_SHARE_CONSUMERS", "1"));
        java.util.concurrent.atomic.AtomicLong done = new java.util.concurrent.atomic.AtomicLong();
        java.util.concurrent.atomic.AtomicLong first = new java.util.concurrent.atomic.AtomicLong();
        java.util.concurrent.atomic.AtomicReference<Exception> failed = new java.util.concurrent.atomic.AtomicReference<>();
        long end = System.nanoTime() + Duration.ofMinutes(5).toNanos();
        List<Thread> ts = new java.util.ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Thread th = new Thread(() -> {
                Properties p = explicitMember(env);
                try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p)) {
                    c.subscribe(List.of(env.topic()));
                    while (done.get() < want && System.nanoTime() < end) {
                        ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(100));
                        if (rs.isEmpty()) {
                            continue;
                        }
                        first.compareAndSet(0, System.nanoTime());
                        for (ConsumerRecord<String, String> r : rs) {
                            c.acknowledge(r, AcknowledgeType.ACCEPT);
                        }
                        done.addAndGet(rs.count());
                    }
                    c.commitSync();
                } catch (Exception e) {
                    failed.set(e);
                }
            });
            th.start();
            ts.add(th);
        }
        for (Thread th : ts) {
            th.join();
        }
        long took = System.nanoTime() - first.get();
        if (failed.get() != null) {
            throw new Main.Failure("a consumer failed: " + failed.get());
        }
        Main.check(done.get() >= want, "accepted " + done.get() + " of " + want + " in five minutes");
        double secs = took / 1e9;
        System.out.printf("share_bench %d records in %.3f s = %.0f msg/s%n", done.get(), secs, done.get() / secs);
    }

    /**
     * KIP-1222 through KafkaShareConsumer: with the group's lock at 2 s, the one record of
     * TOPIC is acquired, renewed (AcknowledgeType.RENEW, committed) every 700 ms for 6 s,
     * then accepted. Prints "acquired VALUE", then "renewed N accepted VALUE" once the
     * accept is committed. The pytest caller pops the same group over HTTP meanwhile.
     */
    static void renew(Main.Env env) throws Exception {
        fromEarliest(env);
        setGroupConfig(env, "share.record.lock.duration.ms", "2000");
        try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(explicitMember(env))) {
            c.subscribe(List.of(env.topic()));
            ConsumerRecord<String, String> r = null;
            long end = System.nanoTime() + Main.DEADLINE.toNanos();
            while (r == null && System.nanoTime() < end) {
                for (ConsumerRecord<String, String> rec : c.poll(Duration.ofMillis(200))) {
                    r = rec;
                }
            }
            Main.check(r != null, "no record acquired within " + Main.DEADLINE);
            System.out.println("acquired " + r.value());
            System.out.flush();
            int renewed = 0;
            long until = System.nanoTime() + Duration.ofSeconds(6).toNanos();
            while (System.nanoTime() < until) {
                Thread.sleep(700);
                c.acknowledge(r, AcknowledgeType.RENEW);
                committed(c.commitSync(), "renew");
                renewed++;
                // A renewed record comes back from the next poll, to be settled.
                for (ConsumerRecord<String, String> rec : c.poll(Duration.ofMillis(100))) {
                    Main.check(rec.offset() == r.offset(), "another record arrived: " + rec.value());
                    r = rec;
                }
            }
            c.acknowledge(r, AcknowledgeType.ACCEPT);
            committed(c.commitSync(), "accept");
            System.out.println("renewed " + renewed + " accepted " + r.value());
        }
    }

    private static void committed(Map<TopicIdPartition, Optional<KafkaException>> res, String what) {
        for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : res.entrySet()) {
            Main.check(e.getValue().isEmpty(), what + " refused on " + e.getKey() + ": " + e.getValue());
        }
    }

    static void compete(Main.Env env) throws Exception {
        fromEarliest(env);
        String stop = System.getenv("BATON_SHARE_STOP");
        Main.check(stop != null, "BATON_SHARE_STOP names the file that ends the run");
        Properties p = explicitMember(env);
        p.put("client.id", "baton-share-compat");
        p.put("max.poll.records", "20");
        long end = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p)) {
            c.subscribe(List.of(env.topic()));
            while (!new File(stop).exists() && System.nanoTime() < end) {
                ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
                if (rs.isEmpty()) {
                    continue;
                }
                StringBuilder out = new StringBuilder();
                for (ConsumerRecord<String, String> r : rs) {
                    short dc = r.deliveryCount().orElse((short) -1);
                    AcknowledgeType type = decide(r.value(), dc);
                    c.acknowledge(r, type);
                    out.append("got ").append(r.value()).append(' ').append(dc).append(' ').append(type.name()).append('\n');
                }
                Map<TopicIdPartition, Optional<KafkaException>> res = c.commitSync();
                for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : res.entrySet()) {
                    if (e.getValue().isPresent()) {
                        for (ConsumerRecord<String, String> r : rs) {
                            if (r.partition() == e.getKey().partition()) {
                                out.append("ackfail ").append(r.value()).append(' ')
                                        .append(e.getValue().get().getClass().getSimpleName()).append('\n');
                            }
                        }
                    }
                }
                System.out.print(out);
                System.out.flush();
            }
        }
    }
}
