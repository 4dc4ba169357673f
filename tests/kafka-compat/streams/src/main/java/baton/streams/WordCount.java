package baton.streams;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * The Kafka Streams WordCount example (Apache Kafka's
 * org.apache.kafka.streams.examples.wordcount.WordCountDemo): lines from an
 * input topic, split into lower-case words, re-keyed by word (a repartition
 * topic), counted in a state store (a compacted changelog topic), every count
 * update written to the output topic as word -> count (String -> Long).
 *
 * <pre>java -cp 'baton-kafka-streams.jar:lib/*' baton.streams.WordCount \
 *     BOOTSTRAP APPLICATION_ID INPUT OUTPUT GUARANTEE STATE_DIR EXPECTED_FILE DEADLINE_SECONDS [HALT_AFTER]</pre>
 *
 * GUARANTEE is the Streams processing.guarantee (exactly_once_v2 or
 * at_least_once). EXPECTED_FILE has one "word count" line per word. The app
 * runs until a read_committed reader of the output topic sees, as the latest
 * value of every word, exactly the expected count (and no word that is not
 * expected), then closes Streams and exits 0 printing "DONE". With
 * HALT_AFTER > 0 it instead halts the JVM (no close, no shutdown hook: what a
 * SIGKILL does) in the middle of a transaction: the stream thread, having
 * produced HALT_AFTER count updates, stops for 500 ms (the producer sends what
 * it holds, and no commit can run: commits run on that thread), then the JVM
 * halts with exit code 3, printing "HALTED". That run processes updates 1 ms
 * apart so that several transactions commit before the halt. It exits 1 with
 * a "FAIL: reason" line when the deadline passes first, when Streams reaches
 * ERROR (its uncaught exception is printed) or when a count goes past the
 * expected one; 2 on bad usage. The caller (test_streams_connect.py) then
 * reads the output itself and checks every update.
 *
 * The instance is a static member of the group (group.instance.id): the next
 * run of the same application replaces it at once instead of waiting for its
 * session to expire (Streams does not leave the group on close).
 *
 * The record cache is off (statestore.cache.max.bytes=0), so every input word
 * produces one output update: under exactly_once_v2 the committed updates of a
 * word are exactly 1, 2, ..., its count.
 */
public final class WordCount {
    private WordCount() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 8 && args.length != 9) {
            System.err.println("usage: WordCount BOOTSTRAP APPLICATION_ID INPUT OUTPUT GUARANTEE STATE_DIR "
                    + "EXPECTED_FILE DEADLINE_SECONDS [HALT_AFTER]");
            System.exit(2);
        }
        String bootstrap = args[0];
        String appId = args[1];
        String input = args[2];
        String output = args[3];
        String guarantee = args[4];
        String stateDir = args[5];
        Map<String, Long> expected = readExpected(Path.of(args[6]));
        Duration deadline = Duration.ofSeconds(Long.parseLong(args[7]));
        long haltAfter = args.length > 8 ? Long.parseLong(args[8]) : 0;
        long start = System.nanoTime();
        long end = start + deadline.toNanos();

        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        // Every update goes out (see the class comment), and commits come
        // often enough for a CI-sized run (at_least_once defaults to 30 s).
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        // Streams deletes the repartition records it has consumed
        // (DeleteRecords) on a commit at most this often (30 s by default,
        // longer than a run here).
        props.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 500);
        // Internal topics (repartition, changelog) with one replica, what a
        // single broker can give; the same on a cluster, for every target alike.
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG), appId + "-static");

        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> lines = builder.stream(input);
        lines.flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
                .filter((key, word) -> !word.isEmpty())
                .groupBy((key, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
                .count(Materialized.as("counts"))
                .toStream()
                .peek((word, count) -> {
                    if (haltAfter > 0) {
                        haltWhen(haltAfter, start);
                    }
                })
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        Topology topology = builder.build();
        System.err.println(topology.describe());

        AtomicReference<Throwable> crash = new AtomicReference<>();
        KafkaStreams streams = new KafkaStreams(topology, props);
        streams.setUncaughtExceptionHandler(e -> {
            crash.compareAndSet(null, e);
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse
                    .SHUTDOWN_CLIENT;
        });
        streams.setStateListener((now, before) -> System.err.println("streams state " + before + " -> " + now));
        streams.start();

        String failure = null;
        Map<String, Long> latest = new TreeMap<>();
        long updates = 0;
        try (KafkaConsumer<byte[], byte[]> reader = reader(bootstrap)) {
            List<TopicPartition> parts = new ArrayList<>();
            for (PartitionInfo p : reader.partitionsFor(output, Duration.ofSeconds(30))) {
                parts.add(new TopicPartition(output, p.partition()));
            }
            reader.assign(parts);
            reader.seekToBeginning(parts);
            while (true) {
                if (crash.get() != null) {
                    failure = "Streams stopped on " + crash.get();
                    crash.get().printStackTrace();
                    break;
                }
                if (streams.state() == KafkaStreams.State.ERROR
                        || streams.state() == KafkaStreams.State.NOT_RUNNING) {
                    failure = "Streams is " + streams.state();
                    break;
                }
                if (System.nanoTime() > end) {
                    failure = "deadline of " + deadline.toSeconds() + " s passed: latest counts "
                            + diff(latest, expected);
                    break;
                }
                for (ConsumerRecord<byte[], byte[]> r : reader.poll(Duration.ofMillis(200))) {
                    String word = new String(r.key(), StandardCharsets.UTF_8);
                    long count = ByteBuffer.wrap(r.value()).getLong();
                    latest.put(word, count);
                    updates++;
                }
                String over = over(latest, expected);
                if (over != null) {
                    failure = over;
                    break;
                }
                if (haltAfter == 0 && latest.equals(expected)) {
                    break;
                }
            }
        } catch (RuntimeException e) {
            e.printStackTrace();
            failure = "reading the output failed: " + e;
        }
        double took = (System.nanoTime() - start) / 1e9;
        System.err.println("closing Streams");
        boolean closed = streams.close(Duration.ofSeconds(30));
        if (failure != null) {
            System.out.println("FAIL: " + failure);
            System.out.flush();
            System.exit(1);
        }
        System.out.printf(Locale.ROOT, "DONE %d words, %d committed updates read, in %.1f s (closed cleanly: %s)%n",
                expected.size(), updates, took, closed);
        System.out.flush();
        System.exit(0);
    }

    /** Count updates this JVM has produced (the stream thread's alone). */
    private static long produced;

    /** On the stream thread, before each count update goes out: throttle, and halt at the HALT_AFTER-th. */
    static void haltWhen(long haltAfter, long start) {
        produced++;
        sleep(1);
        if (produced < haltAfter) {
            return;
        }
        sleep(500);
        System.out.printf(Locale.ROOT, "HALTED after producing %d count updates, %.1f s after start%n", produced,
                (System.nanoTime() - start) / 1e9);
        System.out.flush();
        System.err.flush();
        Runtime.getRuntime().halt(3);
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A read_committed reader of the output topic, in no group. */
    static KafkaConsumer<byte[], byte[]> reader(String bootstrap) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        return new KafkaConsumer<>(p);
    }

    static Map<String, Long> readExpected(Path file) throws IOException {
        Map<String, Long> m = new TreeMap<>();
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            if (line.isBlank()) {
                continue;
            }
            String[] f = line.trim().split(" ");
            m.put(f[0], Long.parseLong(f[1]));
        }
        return m;
    }

    /** A word counted past its expected count (or not expected at all): the run can only fail. */
    static String over(Map<String, Long> latest, Map<String, Long> expected) {
        for (Map.Entry<String, Long> e : latest.entrySet()) {
            Long want = expected.get(e.getKey());
            if (want == null) {
                return "unexpected word " + e.getKey() + " counted " + e.getValue();
            }
            if (e.getValue() > want) {
                return "word " + e.getKey() + " counted " + e.getValue() + ", more than the " + want + " it occurs";
            }
        }
        return null;
    }

    /** The words whose latest count is not yet the expected one, for the deadline's message. */
    static String diff(Map<String, Long> latest, Map<String, Long> expected) {
        Map<String, String> d = new HashMap<>();
        for (Map.Entry<String, Long> e : expected.entrySet()) {
            Long got = latest.get(e.getKey());
            if (!e.getValue().equals(got)) {
                d.put(e.getKey(), got + "/" + e.getValue());
            }
        }
        return d.size() + " of " + expected.size() + " words short (got/want): " + new TreeMap<>(d);
    }
}
