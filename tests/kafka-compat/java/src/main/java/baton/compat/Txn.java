package baton.compat;

import baton.compat.Main.Env;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The transaction scenarios: txn_commit, txn_abort, txn_fence, txn_ctp. The
 * caller creates TOPIC with PARTITIONS partitions (txn_fence: one), and for
 * txn_ctp also TOPIC-out with PARTITIONS; each scenario checks what it wrote
 * with read_committed and read_uncommitted readers of its own, and the caller
 * reads the topics again with librdkafka. tests/kafka-compat/
 * test_transactions_clients.py describes the contract.
 */
final class Txn {
    private Txn() {}

    static final int PARTITIONS = 3;

    /**
     * Tighter than Main.DEADLINE: a scenario makes up to five waits in a row,
     * and a broker that gets transactions wrong should fail the test file in
     * minutes, not hang it.
     */
    static final Duration DEADLINE = Duration.ofSeconds(30);

    static KafkaProducer<String, String> txnProducer(Env env, String txid) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, env.bootstrap());
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txid);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, txid);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        // initTransactions, commitTransaction and abortTransaction block up to
        // max.block.ms; so does send while metadata is missing.
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, (int) DEADLINE.toMillis());
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) DEADLINE.toMillis() / 2);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) DEADLINE.toMillis());
        return new KafkaProducer<>(p);
    }

    /** Sends value i to partition i % partitions and waits for every acknowledgement. */
    static void sendAll(KafkaProducer<String, String> p, String topic, List<String> vals, int partitions)
            throws Exception {
        List<Future<?>> futs = new ArrayList<>();
        for (int i = 0; i < vals.size(); i++) {
            futs.add(p.send(new ProducerRecord<>(topic, i % partitions, null, vals.get(i))));
        }
        p.flush();
        for (Future<?> f : futs) {
            f.get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
        }
    }

    /** What a topic holds per partition when value i went to partition i % partitions. */
    static Map<Integer, List<String>> spread(List<String> vals, int partitions) {
        Map<Integer, List<String>> out = new TreeMap<>();
        for (int p = 0; p < partitions; p++) {
            out.put(p, new ArrayList<>());
        }
        for (int i = 0; i < vals.size(); i++) {
            out.get(i % partitions).add(vals.get(i));
        }
        return out;
    }

    static List<String> concat(List<String> a, List<String> b) {
        List<String> out = new ArrayList<>(a);
        out.addAll(b);
        return out;
    }

    static List<TopicPartition> partitionsOf(String topic, int n) {
        List<TopicPartition> tps = new ArrayList<>();
        for (int p = 0; p < n; p++) {
            tps.add(new TopicPartition(topic, p));
        }
        return tps;
    }

    /**
     * Reads `topic` from the beginning, outside any group, with one isolation
     * level, until it holds at least `want` values and every partition's
     * position has reached the end that level sees (endOffsets: the last
     * stable offset for read_committed, the high watermark otherwise). The
     * position passes control records, so at that point the reader has seen
     * everything the broker shows this isolation level. The end is asked for
     * again on every check: the commit markers, and with them the last stable
     * offset, may land after commitTransaction returns.
     */
    static Map<Integer, List<String>> readAll(Env env, String topic, int partitions, String isolation, int want) {
        Properties props = Basic.consumerProps(env, null, "java-reader-" + isolation);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        Map<Integer, List<String>> got = new TreeMap<>();
        List<TopicPartition> tps = partitionsOf(topic, partitions);
        tps.forEach(tp -> got.put(tp.partition(), new ArrayList<>()));
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props)) {
            c.assign(tps);
            c.seekToBeginning(tps);
            long end = System.nanoTime() + DEADLINE.toNanos();
            int total = 0;
            Map<TopicPartition, Long> ends = Map.of();
            while (true) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    got.get(r.partition()).add(r.value());
                    total++;
                }
                if (total >= want) {
                    ends = c.endOffsets(tps, DEADLINE);
                    boolean atEnd = true;
                    for (TopicPartition tp : tps) {
                        atEnd &= c.position(tp, DEADLINE) >= ends.get(tp);
                    }
                    if (atEnd) {
                        return got;
                    }
                }
                if (System.nanoTime() > end) {
                    Map<Integer, Long> positions = new TreeMap<>();
                    tps.forEach(tp -> positions.put(tp.partition(), c.position(tp, DEADLINE)));
                    throw new Main.Failure(isolation + " read " + total + " of " + want + " values from " + topic
                            + " in " + DEADLINE.toSeconds() + " s (positions " + positions + ", ends " + ends
                            + "): " + got);
                }
            }
        }
    }

    static void expectRead(Env env, String topic, int partitions, String isolation, Map<Integer, List<String>> want) {
        int n = want.values().stream().mapToInt(List::size).sum();
        Map<Integer, List<String>> got = readAll(env, topic, partitions, isolation, n);
        Main.check(got.equals(want), isolation + " read " + got + ", want " + want);
    }

    /** 30 values over three partitions in one transaction, committed; read_committed sees exactly them. */
    static void commit(Env env) throws Exception {
        List<String> vals = Basic.values("t", 30);
        try (KafkaProducer<String, String> p = txnProducer(env, env.topic() + "-tid")) {
            p.initTransactions();
            p.beginTransaction();
            sendAll(p, env.topic(), vals, PARTITIONS);
            p.commitTransaction();
        }
        expectRead(env, env.topic(), PARTITIONS, "read_committed", spread(vals, PARTITIONS));
    }

    /**
     * Three transactions of one producer over three partitions: a-* committed,
     * b-* acknowledged (so in the log) and then aborted, c-* committed.
     * read_committed sees a and c, read_uncommitted a, b and c.
     */
    static void abort(Env env) throws Exception {
        List<String> a = Basic.values("a", 6), b = Basic.values("b", 6), c = Basic.values("c", 6);
        try (KafkaProducer<String, String> p = txnProducer(env, env.topic() + "-tid")) {
            p.initTransactions();
            p.beginTransaction();
            sendAll(p, env.topic(), a, PARTITIONS);
            p.commitTransaction();
            p.beginTransaction();
            sendAll(p, env.topic(), b, PARTITIONS);
            p.abortTransaction();
            p.beginTransaction();
            sendAll(p, env.topic(), c, PARTITIONS);
            p.commitTransaction();
        }
        expectRead(env, env.topic(), PARTITIONS, "read_committed", spread(concat(a, c), PARTITIONS));
        Map<Integer, List<String>> all = spread(a, PARTITIONS);
        spread(b, PARTITIONS).forEach((part, v) -> all.get(part).addAll(v));
        spread(c, PARTITIONS).forEach((part, v) -> all.get(part).addAll(v));
        expectRead(env, env.topic(), PARTITIONS, "read_uncommitted", all);
    }

    /**
     * Zombie fencing on a one-partition topic: producer 1 begins and writes
     * zombie-* (acknowledged); producer 2 initialises the same transactional
     * id, which aborts producer 1's transaction and bumps the epoch; producer
     * 1's commit fails with ProducerFencedException (Kafka answers EndTxn with
     * PRODUCER_FENCED); producer 2 commits new-*. read_committed sees only
     * new-*, read_uncommitted both: the zombie's records were written and are
     * hidden by the abort, not lost.
     */
    static void fence(Env env) throws Exception {
        String txid = env.topic() + "-tid";
        List<String> zombie = Basic.values("zombie", 3), fresh = Basic.values("new", 3);
        try (KafkaProducer<String, String> p1 = txnProducer(env, txid)) {
            p1.initTransactions();
            p1.beginTransaction();
            sendAll(p1, env.topic(), zombie, 1);
            try (KafkaProducer<String, String> p2 = txnProducer(env, txid)) {
                p2.initTransactions();
                KafkaException err = null;
                try {
                    p1.commitTransaction();
                } catch (KafkaException e) {
                    err = e;
                }
                Main.check(err != null, "producer 1 committed after producer 2 initialised its transactional id");
                Main.check(err instanceof ProducerFencedException,
                        "producer 1's commit failed with " + err + ", want ProducerFencedException");
                p2.beginTransaction();
                sendAll(p2, env.topic(), fresh, 1);
                p2.commitTransaction();
            }
        }
        expectRead(env, env.topic(), 1, "read_committed", Map.of(0, fresh));
        expectRead(env, env.topic(), 1, "read_uncommitted", Map.of(0, concat(zombie, fresh)));
    }

    /**
     * Consume-transform-produce, exactly once: in-0..in-29 written (not
     * transactionally) over TOPIC's three partitions; a group member of GROUP
     * (read_committed, no auto commit) consumes them, and one transaction
     * writes t:in-i to the same partition of TOPIC-out and the consumed
     * offsets (sendOffsetsToTransaction with the member's group metadata);
     * commit. The group's committed offsets are then the end of the input and
     * the output holds exactly the 30 transformed values.
     */
    static void ctp(Env env) throws Exception {
        int m = 30;
        String out = env.topic() + "-out";
        List<String> in = Basic.values("in", m);
        try (KafkaProducer<String, String> plain = new KafkaProducer<>(Basic.producerProps(env, false))) {
            sendAll(plain, env.topic(), in, PARTITIONS);
        }
        Properties cp = Basic.consumerProps(env, env.group(), "java-ctp");
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp);
                KafkaProducer<String, String> p = txnProducer(env, env.topic() + "-tid")) {
            p.initTransactions();
            c.subscribe(List.of(env.topic()));
            p.beginTransaction();
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            List<Future<?>> futs = new ArrayList<>();
            int n = 0;
            long end = System.nanoTime() + DEADLINE.toNanos();
            while (n < m) {
                Main.check(System.nanoTime() < end,
                        "consumed " + n + " of " + m + " input records in " + DEADLINE.toSeconds() + " s");
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    futs.add(p.send(new ProducerRecord<>(out, r.partition(), null, "t:" + r.value())));
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    n++;
                }
            }
            Main.check(n == m, "consumed " + n + " input records, want " + m);
            p.flush();
            for (Future<?> f : futs) {
                f.get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
            }
            p.sendOffsetsToTransaction(offsets, c.groupMetadata());
            p.commitTransaction();
        }

        Map<TopicPartition, Long> want = new HashMap<>();
        partitionsOf(env.topic(), PARTITIONS).forEach(tp -> want.put(tp, (long) m / PARTITIONS));
        // A read_committed consumer asks OffsetFetch for stable offsets: Kafka
        // answers UNSTABLE_OFFSET_COMMIT until the coordinator has written the
        // transaction's marker to __consumer_offsets, and committed() retries.
        Properties chk = Basic.consumerProps(env, env.group(), "java-ctp-check");
        chk.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(chk)) {
            Map<TopicPartition, Long> ends = c.endOffsets(want.keySet(), DEADLINE);
            Main.check(ends.equals(want), "the input's end offsets are " + ends + ", want " + want);
            Map<TopicPartition, Long> got = new HashMap<>();
            long end = System.nanoTime() + DEADLINE.toNanos();
            while (true) {
                got.clear();
                c.committed(want.keySet(), DEADLINE).forEach((tp, om) -> got.put(tp, om == null ? null : om.offset()));
                if (got.equals(want)) {
                    break;
                }
                Main.check(System.nanoTime() < end, "the group committed " + got + ", want the end of the input " + want);
                Main.sleep(200);
            }
        }
        List<String> transformed = in.stream().map(v -> "t:" + v).toList();
        expectRead(env, out, PARTITIONS, "read_committed", spread(transformed, PARTITIONS));
    }
}
