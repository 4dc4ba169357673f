package baton.compat;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * The Java client of Baton's Kafka compatibility suite: runs one scenario with
 * Apache kafka-clients against a broker and exits 0 on success, 1 with a
 * "FAIL scenario: reason" line on stderr when the broker misbehaves, 2 on bad
 * usage.
 *
 * <pre>java -jar baton-kafka-compat.jar SCENARIO BOOTSTRAP TOPIC GROUP</pre>
 *
 * Scenarios: produce, consume, commit, idempotent, group_rebalance,
 * static_member (test_clients.py), and the transaction scenarios txn_commit,
 * txn_abort, txn_fence, txn_ctp (test_transactions_clients.py), and
 * share_compete and share_renew, a KafkaShareConsumer (test_share_groups.py). The values
 * each one writes or expects, and what the pytest caller checks afterwards
 * with another client, are the same for the franz-go program; those two
 * files describe that contract.
 */
public final class Main {
    /** How long any one wait inside a scenario may take before it fails. */
    static final Duration DEADLINE = Duration.ofSeconds(60);

    private Main() {}

    /** A broken expectation: the message is the whole report. */
    static final class Failure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Failure(String message) {
            super(message);
        }
    }

    /** Where a scenario runs: the broker, its topic and its consumer group. */
    record Env(String bootstrap, String topic, String group) {}

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new Failure(what);
        }
    }

    /** Polls `cond` every 100 ms until it holds; fails naming `what` after `timeout`. */
    static void waitFor(BooleanSupplier cond, String what, Duration timeout) {
        long end = System.nanoTime() + timeout.toNanos();
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > end) {
                throw new Failure("timed out after " + timeout.toSeconds() + " s waiting for " + what);
            }
            sleep(100);
        }
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Failure("interrupted");
        }
    }

    public static void main(String[] args) {
        // Set before the first logger exists: only the client's warnings and
        // errors reach stderr, which the caller shows when a scenario fails.
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        System.setProperty("org.slf4j.simpleLogger.showDateTime", "true");
        if (args.length != 4) {
            System.err.println("usage: baton-kafka-compat SCENARIO BOOTSTRAP TOPIC GROUP");
            System.exit(2);
        }
        String scenario = args[0];
        Env env = new Env(args[1], args[2], args[3]);
        int code = 0;
        try {
            switch (scenario) {
                case "produce" -> Basic.produce(env);
                case "consume" -> Basic.consume(env);
                case "commit" -> Basic.commit(env);
                case "idempotent" -> Basic.idempotent(env);
                case "group_rebalance" -> Groups.groupRebalance(env);
                case "static_member" -> Groups.staticMember(env);
                case "txn_commit" -> Txn.commit(env);
                case "txn_abort" -> Txn.abort(env);
                case "txn_fence" -> Txn.fence(env);
                case "txn_ctp" -> Txn.ctp(env);
                case "share_compete" -> Share.compete(env);
                case "share_bench" -> Share.bench(env);
                case "share_renew" -> Share.renew(env);
                default -> {
                    System.err.println("unknown scenario " + scenario);
                    code = 2;
                }
            }
        } catch (Failure f) {
            System.err.println("FAIL " + scenario + ": " + f.getMessage());
            code = 1;
        } catch (Exception e) {
            System.err.println("FAIL " + scenario + ": " + e);
            e.printStackTrace();
            code = 1;
        }
        if (code == 0) {
            System.out.println("ok " + scenario);
        }
        // The client's own threads may still be winding down; the verdict is in.
        System.exit(code);
    }
}
