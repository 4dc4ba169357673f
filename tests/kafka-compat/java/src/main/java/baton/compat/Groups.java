package baton.compat;

import baton.compat.Main.Env;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;

/** The consumer-group scenarios: group_rebalance and static_member. The caller
 * creates the topic with 3 (group_rebalance) or 2 (static_member) partitions. */
final class Groups {
    private Groups() {}

    /**
     * One group member polling on its own thread. A KafkaConsumer is used by one
     * thread only, and its rebalance callbacks run inside poll on that thread;
     * the main thread reads the member's assignment and what it consumed.
     */
    static final class Member implements ConsumerRebalanceListener {
        final String name;
        private final KafkaConsumer<String, String> consumer;
        private final String topic;
        private final Thread thread;
        private final Set<Integer> assigned = new TreeSet<>();
        private final Set<String> seen = new HashSet<>();
        private int revokes; // rebalances that took partitions away from this member
        // The group generation this member last joined, read on the poll thread
        // (groupMetadata, like every consumer call, belongs to that thread) in
        // the assign callback, so that it never lags behind `assigned`.
        private int generation = -1;
        private volatile boolean stop;
        private volatile Throwable error;

        Member(Env env, String name, String instance) {
            this.name = name;
            this.topic = env.topic();
            Properties p = Basic.consumerProps(env, env.group(), name);
            if (instance != null) {
                p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instance);
            }
            consumer = new KafkaConsumer<>(p);
            thread = new Thread(this::run, "member-" + name);
            thread.setDaemon(true);
            thread.start();
        }

        private void run() {
            try {
                consumer.subscribe(List.of(topic), this);
                while (!stop) {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                        synchronized (this) {
                            seen.add(r.value());
                        }
                    }
                }
            } catch (Throwable t) {
                error = t;
            } finally {
                // A dynamic member sends LeaveGroup here; a static one does not.
                consumer.close(Duration.ofSeconds(10));
            }
        }

        @Override
        public synchronized void onPartitionsRevoked(Collection<TopicPartition> parts) {
            if (!parts.isEmpty() && !assigned.isEmpty()) {
                revokes++;
            }
            parts.forEach(tp -> assigned.remove(tp.partition()));
        }

        @Override
        public synchronized void onPartitionsAssigned(Collection<TopicPartition> parts) {
            generation = consumer.groupMetadata().generationId();
            parts.forEach(tp -> assigned.add(tp.partition()));
        }

        @Override
        public synchronized void onPartitionsLost(Collection<TopicPartition> parts) {
            parts.forEach(tp -> assigned.remove(tp.partition()));
        }

        synchronized Set<Integer> assigned() {
            return new TreeSet<>(assigned);
        }

        synchronized int revokes() {
            return revokes;
        }

        synchronized int generation() {
            return generation;
        }

        synchronized Set<String> seen() {
            return new HashSet<>(seen);
        }

        /** Stops polling and closes the consumer; fails if the poll loop had failed. */
        void leave() {
            stop = true;
            try {
                thread.join(30_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            Main.check(!thread.isAlive(), name + " did not close within 30 s");
            if (error != null) {
                throw new Main.Failure(name + "'s poll loop failed: " + error);
            }
        }

        void leaveQuietly() {
            try {
                leave();
            } catch (RuntimeException e) {
                // Cleanup after the verdict; the verdict stands.
            }
        }

        @Override
        public String toString() {
            return name + assigned();
        }
    }

    /** Every partition 0..n-1 is owned by exactly one member and every member owns one. */
    static boolean covers(List<Member> members, int n) {
        List<Integer> owned = new ArrayList<>();
        for (Member m : members) {
            Set<Integer> s = m.assigned();
            if (s.isEmpty()) {
                return false;
            }
            owned.addAll(s);
        }
        owned.sort(null);
        List<Integer> want = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            want.add(i);
        }
        return owned.equals(want);
    }

    static boolean sawAll(List<Member> members, List<String> values) {
        Set<String> seen = new HashSet<>();
        members.forEach(m -> seen.addAll(m.seen()));
        return seen.containsAll(values);
    }

    /** Writes `prefix-p` to each partition p of 0..n-1 and returns the values. */
    static List<String> onePerPartition(Env env, String prefix, int n) throws Exception {
        List<String> vals = new ArrayList<>();
        for (int p = 0; p < n; p++) {
            String v = prefix + "-" + p;
            Basic.send(env, List.of(v), p, false);
            vals.add(v);
        }
        return vals;
    }

    /** Three members share three partitions; one closes (LeaveGroup); the other
     * two get all three and consume what is written after the rebalance. */
    static void groupRebalance(Env env) throws Exception {
        List<Member> members = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                members.add(new Member(env, "m" + i, null));
            }
            Main.waitFor(() -> covers(members, 3) && members.stream().allMatch(m -> m.assigned().size() == 1),
                    "three members with one partition each " + members, Main.DEADLINE);
            List<String> before = onePerPartition(env, "before", 3);
            Main.waitFor(() -> sawAll(members, before), "the three members to consume " + before, Main.DEADLINE);
            members.get(2).leave();
            List<Member> rest = members.subList(0, 2);
            Main.waitFor(() -> covers(rest, 3), "the two left to share all three partitions " + rest, Main.DEADLINE);
            List<String> after = onePerPartition(env, "after", 3);
            Main.waitFor(() -> sawAll(rest, after), "the two left to consume " + after, Main.DEADLINE);
        } finally {
            members.forEach(Member::leaveQuietly);
        }
    }

    /**
     * group.instance.id: b joins first and leads (a restarted leader reassigns),
     * a joins and takes one partition; a closes (a static member sends no
     * LeaveGroup) and restarts with the same instance id within the session
     * timeout: it gets its partition back and b goes through no rebalance (same
     * generation, nothing revoked).
     */
    static void staticMember(Env env) {
        Member b = null, a = null, a2 = null;
        try {
            Member mb = b = new Member(env, "m1", "static-b");
            Main.waitFor(() -> mb.assigned().equals(Set.of(0, 1)), "the first static member to own both partitions",
                    Main.DEADLINE);
            Member ma = a = new Member(env, "m0", "static-a");
            Main.waitFor(() -> covers(List.of(ma, mb), 2), "two static members with one partition each", Main.DEADLINE);
            Set<Integer> pa = a.assigned(), pb = b.assigned();
            int bRevokes = b.revokes(), bGen = b.generation();
            a.leave();
            Member ma2 = a2 = new Member(env, "m2", "static-a");
            Main.waitFor(() -> ma2.assigned().equals(pa), "the restarted static member to get " + pa + " back",
                    Duration.ofSeconds(20));
            Main.sleep(1500); // a rebalance, had there been one, would show by now
            Main.check(b.assigned().equals(pb) && b.revokes() == bRevokes && b.generation() == bGen,
                    "the other member was rebalanced: it owned " + pb + " after " + bRevokes + " revokes in generation "
                            + bGen + ", now " + b.assigned() + " after " + b.revokes() + " in generation "
                            + b.generation());
        } finally {
            for (Member m : new Member[] {a, b, a2}) {
                if (m != null) {
                    m.leaveQuietly();
                }
            }
        }
    }
}
