//! `baton relay` (issue 17) against a real PostgreSQL (scripts/peers/postgres.sh),
//! a real `baton serve` and the relay as child processes: order per aggregate,
//! zero duplicates across kill -9 and a paused relay (fencing), poison events
//! parked without blocking other aggregates, and the open-transaction gap rule.

use crate::common;
use crate::relay_util;
use common::Server;
use relay_util::*;
use serde_json::Value;
use std::time::{Duration, Instant};

/// Every aggregate's partition in Baton holds exactly its outbox ids, in id order, once each.
async fn check_exactly_once_in_order(pg: &tokio_postgres::Client, baton: &Server) {
    check_in_baton(pg, &baton.url("")).await
}

#[test]
fn delivers_in_order_per_aggregate() {
    let pg = Pg::start();
    init(&pg);
    let baton = Server::start();
    let relay = Relay::start(&pg, &baton, "r1", &[]);
    rt().block_on(async {
        insert_all(&pg, 20, 50, Duration::ZERO).await;
        let c = pg.client().await;
        wait_delivered(&c, 1000, Duration::from_secs(40), &|| relay.log()).await;
        check_exactly_once_in_order(&c, &baton).await;
        assert_eq!(relay.metric("baton_relay_delivered_total").await, 1000.0);
        // The gauges are refreshed every second.
        let deadline = Instant::now() + Duration::from_secs(5);
        while relay.metric("baton_relay_backlog").await != 0.0 {
            assert!(Instant::now() < deadline, "backlog gauge never reached 0");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let st: Value = serde_json::from_str(relay_cli(&pg, &["status", "--to", &baton.url("")]).trim()).unwrap();
        assert_eq!(
            (st["pending"].as_i64(), st["delivered"].as_i64(), st["parked"].as_i64()),
            (Some(0), Some(1000), Some(0))
        );
        let holders = st["bucketHolders"].as_object().expect("bucketHolders");
        assert_eq!(holders.len(), 64, "{st}");
        assert!(holders.values().all(|o| o == "r1"), "{st}");
        // A relay that died after Baton took a batch but before marking it re-sends it:
        // Baton answers duplicate, nothing is stored twice, the rows end delivered.
        let n = c
            .execute("UPDATE baton_outbox SET status = 'pending', delivered_at = NULL WHERE id % 7 = 0", &[])
            .await
            .unwrap();
        assert!(n > 100);
        wait_delivered(&c, 1000, Duration::from_secs(20), &|| relay.log()).await;
        check_exactly_once_in_order(&c, &baton).await;
        assert_eq!(relay.metric("baton_relay_duplicates_total").await, n as f64);
        // A lone relay is never fenced: renewals never change a token under its pushes.
        assert_eq!(relay.metric("baton_relay_fenced_total").await, 0.0);
    });
}

/// Baton's counter `name` from its Prometheus text.
async fn baton_counter(baton: &Server, name: &str) -> f64 {
    let t = reqwest::get(baton.url("/metrics/prometheus")).await.unwrap().text().await.unwrap();
    prom_value(&t, name).unwrap_or_else(|| panic!("no {name} in Baton's metrics"))
}

/// A backlog spread over many buckets goes as one guarded Baton transaction per round, not
/// one per bucket: the cost of a round is one fsync on each side, whatever it spans.
#[test]
fn a_round_across_buckets_is_one_transaction() {
    let pg = Pg::start();
    init(&pg);
    let baton = Server::start();
    let relay = Relay::start(&pg, &baton, "r1", &["--batch", "500"]);
    rt().block_on(async {
        relay.wait_buckets(64).await;
        let before = baton_counter(&baton, "baton_transactions_total").await;
        // 200 events of 100 aggregates (over most of the 64 buckets), committed at once.
        let c = pg.client().await;
        c.batch_execute(
            "INSERT INTO baton_outbox (aggregate_type, aggregate_id, event_type, payload) \
             SELECT 'order', 'agg-' || (i % 100), 'e', jsonb_build_object('i', i) FROM generate_series(0, 199) i",
        )
        .await
        .unwrap();
        wait_delivered(&c, 200, Duration::from_secs(20), &|| relay.log()).await;
        check_exactly_once_in_order(&c, &baton).await;
        let buckets: i64 = c.query_one("SELECT count(DISTINCT bucket) FROM baton_outbox", &[]).await.unwrap().get(0);
        assert!(buckets > 40, "the events span {buckets} buckets");
        let txns = baton_counter(&baton, "baton_transactions_total").await - before;
        assert!(txns <= 3.0, "{txns} Baton transactions for one round over {buckets} buckets");
        assert!(relay.metric("baton_relay_rounds_whole_total").await >= 1.0);
        assert_eq!(relay.metric("baton_relay_rounds_split_total").await, 0.0);
    });
}

/// A backlog the planner has no statistics for (the table was analyzed empty, as after a
/// TRUNCATE or a fresh init, and autovacuum has not come by yet) drains at batch speed.
/// The "nothing parked or backing off before it" test once ran as a nested loop over every
/// pending row: ~20 s a round at 100,000 pending, the relay all but stopped.
#[test]
fn a_backlog_on_stale_statistics_drains_quickly() {
    let pg = Pg::start();
    init(&pg);
    let baton = Server::start();
    rt().block_on(async {
        let c = pg.client().await;
        c.batch_execute(
            "ANALYZE baton_outbox; \
             INSERT INTO baton_outbox (aggregate_type, aggregate_id, event_type, payload) \
             SELECT 'order', 'agg-' || (i % 100), 'e', jsonb_build_object('i', i) FROM generate_series(0, 59999) i",
        )
        .await
        .unwrap();
        let relay = Relay::start(&pg, &baton, "r1", &["--batch", "2000"]);
        wait_delivered(&c, 60_000, Duration::from_secs(60), &|| relay.log()).await;
        check_exactly_once_in_order(&c, &baton).await;
    });
}

#[test]
fn failover_kill9_no_duplicates() {
    let pg = Pg::start();
    init(&pg);
    let baton = Server::start();
    let mut a = Relay::start(&pg, &baton, "ra", &[]);
    let b = Relay::start(&pg, &baton, "rb", &[]);
    rt().block_on(async {
        let inserting = insert_rounds(&pg, 30, Duration::from_millis(33));
        // Both relays hold buckets before one dies.
        let deadline = Instant::now() + Duration::from_secs(15);
        while a.metric("baton_relay_buckets_owned").await == 0.0 || b.metric("baton_relay_buckets_owned").await == 0.0 {
            assert!(Instant::now() < deadline, "buckets never spread:\n{}\n{}", a.log(), b.log());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(a.metric("baton_relay_delivered_total").await > 0.0, "ra delivered nothing before its death");
        a.kill9();
        let killed = Instant::now();
        // The survivor takes every bucket once the dead relay's 2 s leases expire.
        while b.metric("baton_relay_buckets_owned").await < 64.0 {
            assert!(killed.elapsed() < Duration::from_secs(4), "rb did not take over within the lease:\n{}", b.log());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        inserting.await.unwrap();
        let c = pg.client().await;
        wait_delivered(&c, 600, Duration::from_secs(30), &|| b.log()).await;
        check_exactly_once_in_order(&c, &baton).await;
        assert_eq!(b.metric("baton_relay_buckets_owned").await, 64.0, "the survivor holds every bucket");
    });
}

/// A relay kill -9'd and started again with its `--relay-id` (as a service manager does)
/// takes its own buckets back at once, not after its old leases expire: those are its own
/// (a lock acquired again by its holder answers the same permit). Before, it counted
/// them as held by another and waited the whole lease (10 s by default) doing nothing.
#[test]
fn a_relay_restarted_with_its_id_takes_its_buckets_back_at_once() {
    let pg = Pg::start();
    init(&pg);
    let baton = Server::start();
    let lease = ["--lease-secs", "30"];
    let mut a = Relay::start(&pg, &baton, "ra", &lease);
    rt().block_on(async {
        a.wait_buckets(64).await;
        let inserting = insert_rounds(&pg, 20, Duration::from_millis(50));
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(a.metric("baton_relay_delivered_total").await > 0.0, "nothing delivered before the kill");
        a.kill9();
        let again = Relay::start(&pg, &baton, "ra", &lease);
        again.takes_its_buckets_back(64, Duration::from_secs(30)).await;
        inserting.await.unwrap();
        let c = pg.client().await;
        wait_delivered(&c, 400, Duration::from_secs(20), &|| again.log()).await;
        check_exactly_once_in_order(&c, &baton).await;
    });
}

#[test]
fn paused_relay_is_fenced() {
    let pg = Pg::start();
    init(&pg);
    let baton = Server::start();
    // Test-only holds inside each round, between reading events and pushing them with the
    // round's guards: ra's (600 ms) makes a stop land inside a round nearly every time (the
    // renewal that would notice the loss waits for the round: it needs the lease state the
    // round holds); rb's (1.5 s) keeps rb from publishing ra's events before ra resumes, so
    // ra's stale push meets its guard and not Baton's dedup (which would answer duplicate).
    let a = Relay::start(&pg, &baton, "ra", &["--test-round-hold-ms", "600", "--lease-secs", "4"]);
    let b = Relay::start(&pg, &baton, "rb", &["--test-round-hold-ms", "1500", "--lease-secs", "4"]);
    rt().block_on(async {
        // Pause ra past its 4 s lease while events keep coming; rb takes its buckets; ra
        // resumes in the middle of a round and its next guarded push must be refused.
        let n = pause_until_fenced(&pg, &a, &b, Duration::from_secs(15), 300).await;
        let c = pg.client().await;
        wait_delivered(&c, n as i64, Duration::from_secs(30), &|| format!("{}\n{}", a.log(), b.log())).await;
        check_exactly_once_in_order(&c, &baton).await;
    });
}

#[test]
fn poison_parks_only_its_aggregate() {
    let pg = Pg::start();
    init(&pg);
    let baton = Server::start_with(&["--max-payload-bytes", "2048"]);
    // A batch of 5 while the poison aggregate has 8 events waiting behind its poison event:
    // the waiting ones must not fill every batch and starve the other aggregates.
    let relay = Relay::start(&pg, &baton, "r1", &["--max-attempts", "3", "--backoff-ms", "50", "--batch", "5"]);
    rt().block_on(async {
        // The good aggregates are delivered; the poison event is parked, its followers wait.
        let c = poison_parks(&pg, &relay, Duration::from_secs(30), "413").await;
        let parked = relay_cli(&pg, &["parked"]);
        let lines: Vec<Value> = parked.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 1, "{parked}");
        assert_eq!(lines[0]["id"], 1);
        // Nothing of the bad aggregate reached its queue; the parked note did.
        let bc = baton_client::Client::new(&baton.url(""), 1).unwrap();
        assert!(bc.fetch_all("outbox-order", "bad", 0).await.unwrap().is_empty());
        let note = bc.fetch_all("outbox-parked", "bad", 0).await.unwrap();
        assert_eq!(note.len(), 1);
        assert_eq!(note[0].payload["id"], 1);
        // The operator fixes the event and releases it: both go, in order.
        c.execute("UPDATE baton_outbox SET payload = '{\"blob\": \"small\"}' WHERE id = 1", &[]).await.unwrap();
        let out = relay_cli(&pg, &["release", "--id", "1"]);
        assert!(out.contains("\"released\":1"), "{out}");
        wait_delivered(&c, 59, Duration::from_secs(20), &|| relay.log()).await;
        check_exactly_once_in_order(&c, &baton).await;
        assert!(relay_cli(&pg, &["parked"]).trim().is_empty());
    });
}

#[test]
fn open_transaction_gap_holds_back_later_ids() {
    let pg = Pg::start();
    init(&pg);
    let baton = Server::start();
    let relay = Relay::start(&pg, &baton, "r1", &[]);
    rt().block_on(async {
        relay.wait_buckets(64).await;
        let first = pg.client().await;
        let later = pg.client().await;
        first.batch_execute("BEGIN").await.unwrap();
        let id1: i64 = first
            .query_one(
                "INSERT INTO baton_outbox (aggregate_type, aggregate_id, event_type) VALUES ('order', 'g', 'first') RETURNING id",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        let id2: i64 = later
            .query_one(
                "INSERT INTO baton_outbox (aggregate_type, aggregate_id, event_type) VALUES ('order', 'g', 'second') RETURNING id",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert!(id1 < id2);
        // id2 is committed and visible, but a transaction that holds a smaller id is open.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let st: String = later.query_one("SELECT status FROM baton_outbox WHERE id = $1", &[&id2]).await.unwrap().get(0);
        assert_eq!(st, "pending", "delivered past an open transaction's gap");
        let bc = baton_client::Client::new(&baton.url(""), 1).unwrap();
        assert!(bc.fetch_all("outbox-order", "g", 0).await.unwrap().is_empty());
        first.batch_execute("COMMIT").await.unwrap();
        wait_delivered(&later, 2, Duration::from_secs(10), &|| relay.log()).await;
        check_exactly_once_in_order(&later, &baton).await;
    });
}

#[test]
fn sigterm_hands_buckets_over_at_once() {
    let pg = Pg::start();
    init(&pg);
    let baton = Server::start();
    // A 9 s lease: waiting for expiry would take up to 9 s, a release is seen at the next 3 s tick.
    let mut a = Relay::start(&pg, &baton, "ra", &["--lease-secs", "9"]);
    let b = Relay::start(&pg, &baton, "rb", &["--lease-secs", "9"]);
    rt().block_on(async {
        let deadline = Instant::now() + Duration::from_secs(20);
        while a.metric("baton_relay_buckets_owned").await == 0.0 || b.metric("baton_relay_buckets_owned").await == 0.0 {
            assert!(Instant::now() < deadline, "buckets never spread:\n{}\n{}", a.log(), b.log());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        insert_all(&pg, 10, 10, Duration::ZERO).await;
        a.signal(libc::SIGTERM);
        let stopped = Instant::now();
        let status = a.child.as_mut().unwrap().wait().unwrap();
        assert!(status.success(), "ra exited {status:?}:\n{}", a.log());
        a.child = None;
        while b.metric("baton_relay_buckets_owned").await < 64.0 {
            assert!(stopped.elapsed() < Duration::from_millis(4500), "rb waited for expiry:\n{}", b.log());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let c = pg.client().await;
        wait_delivered(&c, 100, Duration::from_secs(20), &|| b.log()).await;
        check_exactly_once_in_order(&c, &baton).await;
    });
}

/// `--prune-after-secs`: delivered rows past the age are deleted by the relay; a parked row
/// (the operator's to release) and what Baton holds stay.
#[test]
fn delivered_rows_are_pruned_and_nothing_else() {
    let pg = Pg::start();
    init(&pg);
    let baton = Server::start();
    let relay = Relay::start(&pg, &baton, "r1", &["--prune-after-secs", "1"]);
    rt().block_on(async {
        let c = pg.client().await;
        c.batch_execute(
            "INSERT INTO baton_outbox (aggregate_type, aggregate_id, event_type, payload, status) \
             VALUES ('order', 'stuck', 'e', '{}', 'parked')",
        )
        .await
        .unwrap();
        insert_all(&pg, 5, 20, Duration::ZERO).await;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left: Vec<(String, i64)> = c
                .query("SELECT status, count(*) FROM baton_outbox GROUP BY status ORDER BY status", &[])
                .await
                .unwrap()
                .iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect();
            if left == [("parked".to_string(), 1)] {
                break;
            }
            assert!(Instant::now() < deadline, "rows left: {left:?}; log:\n{}", relay.log());
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert_eq!(relay.metric("baton_relay_pruned_total").await, 100.0);
        let b = baton_client::Client::new(&baton.url(""), 1).unwrap();
        for a in 0..5 {
            let got = b.fetch_all("outbox-order", &format!("agg-{a}"), 0).await.unwrap();
            assert_eq!(got.len(), 20, "agg-{a}");
        }
    });
}

/// The buckets each relay holds.
async fn owned(rs: &[&Relay]) -> Vec<f64> {
    let mut v = Vec::new();
    for r in rs {
        v.push(r.metric("baton_relay_buckets_owned").await);
    }
    v
}

/// Tandem's scenarios 5 and 7: three relays share the buckets under load; one is killed
/// outright mid-flight; the two survivors cover every bucket within the lease; the killed
/// one restarted takes its share back; every event arrives once and in order.
#[test]
fn three_relays_one_killed_and_restarted() {
    let pg = Pg::start();
    init(&pg);
    let baton = Server::start();
    let mut a = Relay::start(&pg, &baton, "ra", &[]);
    let b = Relay::start(&pg, &baton, "rb", &[]);
    let c = Relay::start(&pg, &baton, "rc", &[]);
    rt().block_on(async {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let v = owned(&[&a, &b, &c]).await;
            if v.iter().all(|n| *n > 0.0) && v.iter().sum::<f64>() == 64.0 {
                break;
            }
            assert!(Instant::now() < deadline, "buckets never spread over three relays: {v:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let inserting = insert_rounds(&pg, 40, Duration::from_millis(50));
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert!(a.metric("baton_relay_delivered_total").await > 0.0, "ra delivered nothing before its death");
        a.kill9();
        let killed = Instant::now();
        loop {
            let v = owned(&[&b, &c]).await;
            if v.iter().sum::<f64>() == 64.0 {
                break;
            }
            assert!(killed.elapsed() < Duration::from_secs(5), "survivors hold {v:?} of 64 buckets");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let a2 = Relay::start(&pg, &baton, "ra", &[]);
        let deadline = Instant::now() + Duration::from_secs(15);
        while a2.metric("baton_relay_buckets_owned").await == 0.0 {
            assert!(Instant::now() < deadline, "the restarted relay never took a share:\n{}", a2.log());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        inserting.await.unwrap();
        let pgc = pg.client().await;
        wait_delivered(&pgc, 800, Duration::from_secs(30), &|| format!("{}\n{}\n{}", a2.log(), b.log(), c.log())).await;
        check_exactly_once_in_order(&pgc, &baton).await;
        for r in [&a2, &b, &c] {
            assert_eq!(r.metric("baton_relay_parked_total").await, 0.0);
        }
    });
}

/// Tandem's scenario 8 (first half): PostgreSQL restarted while a round holds events it
/// read and has not marked. The relay reconnects; what it pushed before the restart is
/// answered `duplicate` when it comes round again; nothing is lost, doubled or reordered.
#[test]
fn postgres_restarted_mid_run_loses_nothing() {
    let pg = Pg::start();
    init(&pg);
    let baton = Server::start();
    // Each round waits 300 ms between reading its events and pushing them, so the stop
    // below lands inside a round most of the time.
    let relay = Relay::start(&pg, &baton, "r1", &["--test-round-hold-ms", "300"]);
    rt().block_on(async {
        relay.wait_buckets(64).await;
        insert_all(&pg, 10, 30, Duration::ZERO).await;
        let st = pg.script("stop");
        assert!(st.status.success(), "postgres.sh stop: {}", String::from_utf8_lossy(&st.stderr));
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let st = pg.script("start");
        assert!(st.status.success(), "postgres.sh start: {}", String::from_utf8_lossy(&st.stderr));
        insert_all(&pg, 10, 30, Duration::ZERO).await;
        let c = pg.client().await;
        wait_delivered(&c, 600, Duration::from_secs(40), &|| relay.log()).await;
        check_exactly_once_in_order(&c, &baton).await;
    });
}

/// `relay init` (also run by every `relay run`) on a live outbox must not stall the
/// application: an existing install that lacks an index, and an application transaction
/// that is open. A plain CREATE INDEX (or CREATE TRIGGER, or even CREATE INDEX IF NOT EXISTS
/// of an index that is there) queues a table lock behind that transaction, and every later
/// INSERT queues behind it: the application stops until the old transaction ends.
#[test]
fn init_on_a_live_outbox_does_not_stall_the_application() {
    let pg = Pg::start();
    init(&pg);
    rt().block_on(async {
        let c = pg.client().await;
        c.batch_execute("DROP INDEX baton_outbox_blocking").await.unwrap();
        let open = pg.client().await;
        open.batch_execute(
            "BEGIN; INSERT INTO baton_outbox (aggregate_type, aggregate_id, event_type) VALUES ('order', 'a', 'e')",
        )
        .await
        .unwrap();
        let url = pg.url();
        let init = std::thread::spawn(move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
                .args(["relay", "init", "--pg", &url, "--buckets", BUCKETS])
                .output()
                .unwrap()
        });
        tokio::time::sleep(Duration::from_millis(700)).await;
        let app = pg.client().await;
        app.batch_execute("SET statement_timeout = '3s'").await.unwrap();
        for i in 0..3 {
            app.execute(
                "INSERT INTO baton_outbox (aggregate_type, aggregate_id, event_type) VALUES ('order', 'b', 'e')",
                &[],
            )
            .await
            .unwrap_or_else(|e| panic!("insert {i} while relay init ran: {e}"));
        }
        open.batch_execute("COMMIT").await.unwrap();
        let out = init.join().unwrap();
        assert!(out.status.success(), "relay init: {}", String::from_utf8_lossy(&out.stderr));
        let valid: Option<bool> = c
            .query_opt("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass('baton_outbox_blocking')", &[])
            .await
            .unwrap()
            .map(|r| r.get(0));
        assert_eq!(valid, Some(true), "the missing index is back and valid");
    });
}

/// Settings past their bounds are refused at start with the flag named, not met later as a
/// PostgreSQL error every minute (an interval out of range) or a round larger than Baton's
/// push bound (100,000 items) that can only go one event at a time.
#[test]
fn relay_settings_past_their_bounds_are_refused_at_start() {
    let many: Vec<String> = (0..17).map(|i| format!("http://127.0.0.1:{}", 7000 + i)).collect();
    let many = many.join(",");
    for (flag, value) in [
        ("--prune-after-secs", "400000000"),
        ("--batch", "100001"),
        ("--batch", "0"),
        ("--to", "http://127.0.0.1:6632,,http://127.0.0.1:6633"),
        ("--to", "http://127.0.0.1:6632,http://127.0.0.1:6632"),
        ("--to", "ftp://127.0.0.1:6632"),
        ("--to", many.as_str()),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
            .args(["relay", "run", "--pg", "postgres://nobody@127.0.0.1:1/none", flag, value])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {err}");
        assert!(err.contains(flag), "{flag} {value}: {err}");
    }
}
