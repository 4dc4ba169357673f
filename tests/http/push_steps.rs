//! A push is planned in steps of at most `--push-step-ms` of planner time (D80). A
//! partition's first write makes its directory and files on the planner, so one push
//! creating thousands of partitions held every other request back for the whole of it
//! (12 s for 5,000 on the development VM). Now a push sent after such a push began is
//! answered before it; the wide push is still answered once, whole, every group stored
//! once; and a kill between its steps loses nothing a retry with the same transaction
//! ids does not mend.
//!
//! D81 takes the same cost off the planner where a request cannot be split: new partitions
//! take directories the provisioner made ahead, a transaction waits for its directories
//! (and is refused, writing nothing, if they never come), and due timers fire within the
//! same budget a tick.

use crate::common;

use common::api::{client, wide_push, Api};
use serde_json::{json, Value};
use std::time::Duration;

const WIDE: usize = 3_000;

/// The wide push, on its own connection: (status, body).
fn spawn_wide(api: &Api) -> tokio::task::JoinHandle<(u16, Value)> {
    let url = api.s.url("/api/v1/push");
    tokio::spawn(async move {
        let r = client().post(url).json(&wide_push("wide", WIDE)).send().await;
        match r {
            Ok(r) => common::api::read(r).await,
            Err(e) => (0, json!({ "error": e.to_string() })),
        }
    })
}

/// Waits (at most 30 s) until a push has been continued in a later step.
async fn wait_for_a_continued_step(api: &Api) {
    for _ in 0..3_000 {
        if api.metric("baton_planner_push_continuations_total").await > 0.0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no push was planned in more than one step in 30 s");
}

/// Every partition of "wide" holds exactly one message.
async fn one_message_each(api: &Api) {
    one_message_in_each(api, "wide", WIDE).await;
}

/// `queue` has `n` partitions holding exactly one message each.
async fn one_message_in_each(api: &Api, queue: &str, n: usize) {
    let (st, d) = api.get(&format!("/api/v1/resources/queues/{queue}/depth?limit=1")).await;
    assert_eq!(st, 200, "{d}");
    assert_eq!((d["pending"].as_u64(), d["partitionsPending"].as_u64()), (Some(n as u64), Some(n as u64)), "{d}");
}

#[tokio::test]
async fn a_push_sent_after_a_wide_push_began_is_answered_before_it() {
    let api = Api::with(&["--push-step-ms", "2"]);
    api.push("probe", "0", &[("first", json!(0))]).await;
    let sent = std::time::Instant::now();
    let wide = spawn_wide(&api);
    wait_for_a_continued_step(&api).await;
    // The wide push has steps left; a push that arrives now is planned between them.
    let t0 = std::time::Instant::now();
    let probed = api.push("probe", "0", &[("second", json!(1))]).await;
    let probe_took = t0.elapsed();
    assert_eq!(probed[0]["status"], "queued", "{probed:?}");
    let steps_then = api.metric("baton_planner_push_continuations_total").await;
    let (st, v) = wide.await.unwrap();
    let wide_took = sent.elapsed();
    // Relative, not a timed target: before D80 the probe waited for the whole wide push.
    assert!(probe_took * 4 < wide_took, "the probe took {probe_took:?}, the wide push {wide_took:?}");
    // The wide push still had steps planned after the probe was answered: the probe went
    // between them, not after the whole push.
    let steps_after = api.metric("baton_planner_push_continuations_total").await;
    assert!(
        steps_after > steps_then,
        "no step of the wide push came after the probe's answer ({steps_then} then, {steps_after} after; the probe took {probe_took:?})"
    );
    assert_eq!(st, 201, "{v}");
    let results = v.as_array().expect("one result per item");
    assert_eq!(results.len(), WIDE);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(
            (r["status"].as_str(), r["transactionId"].as_str()),
            (Some("queued"), Some(format!("w{i}").as_str())),
            "{r}"
        );
    }
    one_message_each(&api).await;
    eprintln!(
        "the probe took {probe_took:?}, the wide push {wide_took:?}; {} of its steps were planned after the probe",
        steps_after - steps_then
    );
}

/// A kill between the steps of a push: the client has no answer, the groups of durable
/// steps are stored, and the same push sent again stores the rest and nothing twice.
#[tokio::test]
async fn a_kill_between_the_steps_of_a_push_loses_nothing_a_retry_does_not_mend() {
    let mut api = Api::with(&["--push-step-ms", "2"]);
    let wide = spawn_wide(&api);
    wait_for_a_continued_step(&api).await;
    api.s.kill9();
    let (st, _) = wide.await.unwrap();
    assert!(st == 0 || st == 201, "the killed push answered {st}");
    api.s.restart();
    api.c = client();
    let (st, v) = api.post("/api/v1/push", wide_push("wide", WIDE)).await;
    assert_eq!(st, 201, "{v}");
    let results = v.as_array().expect("one result per item");
    let queued = results.iter().filter(|r| r["status"] == "queued").count();
    let dup = results.iter().filter(|r| r["status"] == "duplicate").count();
    assert_eq!(queued + dup, WIDE, "{:?}", &results[..3]);
    one_message_each(&api).await;
}

/// Due timers are fired by the planner's tick, each pushing to its own partition: before
/// D81 one tick fired up to 1,000 of them in one entry however long their new partitions'
/// files took to make, holding every other request back. Now a tick fires them for at most
/// `--push-step-ms` of planner time (at least one); the rest fire in the next ticks, late,
/// never lost, each exactly once.
#[tokio::test]
async fn due_timers_that_make_partitions_fire_over_several_ticks() {
    use base64::Engine;
    const TIMERS: usize = 200;
    let api = Api::with(&["--push-step-ms", "1"]);
    let payload = base64::engine::general_purpose::STANDARD.encode("{\"t\":1}");
    let ops: Vec<Value> = (0..TIMERS)
        .map(|i| {
            json!({"op": "schedule", "queue": "tq", "timerKey": format!("k{i}"), "partition": format!("t{i}"),
                   "payload": payload, "delayMs": 1_000})
        })
        .collect();
    let (st, v) = api.post("/api/v1/timers", json!({ "operations": ops })).await;
    assert_eq!(st, 200, "{v}");
    // Partition counts seen while they fire: one tick firing them all shows 0, then 200.
    let mut seen = Vec::new();
    for _ in 0..6_000 {
        let n = api.metric("baton_partitions").await as usize;
        if seen.last() != Some(&n) {
            seen.push(n);
        }
        if n == TIMERS {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(seen.last(), Some(&TIMERS), "not every timer fired in 30 s: {seen:?}");
    assert!(seen.iter().any(|n| *n > 0 && *n < TIMERS), "every timer fired in one pass: {seen:?}");
    one_message_in_each(&api, "tq", TIMERS).await;
    eprintln!("partition counts seen while the timers fired: {seen:?}");
}

fn spare_dirs(api: &Api) -> usize {
    std::fs::read_dir(api.s.dir.join("partitions/.spare-parts")).map_or(0, |d| d.count())
}

/// Waits (at most 60 s) until the provisioner holds `n` spare partition directories.
async fn wait_spare_dirs(api: &Api, n: usize) {
    for _ in 0..6_000 {
        if spare_dirs(api) >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("only {} spare partition directories after 60 s, waiting for {n}", spare_dirs(api));
}

/// A transaction pushing one message to each of the new partitions `from..to` of queue "tx".
fn wide_transaction_body(from: usize, to: usize) -> Value {
    let items: Vec<Value> =
        (from..to).map(|i| json!({"queue": "tx", "partition": format!("p{i}"), "payload": {"i": i}})).collect();
    json!({"operations": [{"type": "push", "items": items}]})
}

async fn wide_transaction(api: &Api, from: usize, to: usize) {
    let (st, v) = api.post("/api/v1/transaction", wide_transaction_body(from, to)).await;
    assert_eq!((st, &v["success"]), (200, &json!(true)), "{v}");
}

async fn dirs_taken_and_missed(api: &Api) -> (f64, f64) {
    (
        api.metric("baton_partition_spare_dirs_taken_total").await,
        api.metric("baton_partition_spare_dirs_missed_total").await,
    )
}

/// New partitions take spare directories the provisioner made ahead (D81): a transaction
/// that writes to hundreds of new partitions renames them into place instead of making a
/// directory and three files for each on the planner. The pool grows to what was asked of
/// it, and a restart keeps it: the next transaction finds its directories ready at once.
#[tokio::test]
async fn new_partitions_take_ready_made_directories_and_a_restart_keeps_them() {
    let mut api = Api::with(&[]);
    wait_spare_dirs(&api, 16).await;
    wide_transaction(&api, 0, 100).await;
    wide_transaction(&api, 100, 400).await;
    assert_eq!(dirs_taken_and_missed(&api).await, (400.0, 0.0), "every new partition found a spare directory");
    // A restart adopts what is ready instead of deleting it.
    wait_spare_dirs(&api, 200).await;
    api.s.terminate();
    let left = spare_dirs(&api);
    api.s.restart();
    api.c = client();
    assert!(spare_dirs(&api) >= left.min(200), "{} of {left} spare directories survived the restart", spare_dirs(&api));
    wide_transaction(&api, 400, 600).await;
    assert_eq!(dirs_taken_and_missed(&api).await, (200.0, 0.0), "the adopted directories served the next 200");
    assert_eq!(api.metric("baton_planner_transactions_waited_total").await, 0.0, "and it did not wait for them");
    one_message_in_each(&api, "tx", 600).await;
}

/// A transaction whose new partitions outnumber the spare directories ready waits for the
/// provisioner to make them, planning nothing meanwhile (D81): every one of its partitions
/// then finds a directory ready, none is made on the planner, and a push sent while it
/// waits is answered. Before, the planner made the rest itself, holding everyone back.
#[tokio::test]
async fn a_transaction_waits_for_its_directories_instead_of_making_them_on_the_planner() {
    let api = Api::with(&[]);
    api.push("probe", "0", &[("first", json!(0))]).await;
    wait_spare_dirs(&api, 16).await;
    let before = dirs_taken_and_missed(&api).await;
    let url = api.s.url("/api/v1/transaction");
    let wide = tokio::spawn(async move {
        let r = client().post(url).json(&wide_transaction_body(0, 600)).send().await;
        common::api::read(r.unwrap()).await
    });
    for _ in 0..3_000 {
        if api.metric("baton_planner_transactions_waited_total").await >= 1.0 || wide.is_finished() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let probed = api.push("probe", "0", &[("second", json!(1))]).await;
    assert_eq!(probed[0]["status"], "queued", "{probed:?}");
    let (st, v) = wide.await.unwrap();
    assert_eq!((st, &v["success"]), (200, &json!(true)), "{v}");
    assert_eq!(api.metric("baton_planner_transactions_waited_total").await, 1.0);
    let (taken, missed) = dirs_taken_and_missed(&api).await;
    assert_eq!((taken - before.0, missed - before.1), (600.0, 0.0), "every new partition found a directory ready");
    one_message_in_each(&api, "tx", 600).await;
}

/// A transaction whose directories never come (here the provisioner cannot make any: its
/// directory is replaced by a file) is refused `overloaded` after its wait (10 s), with
/// nothing written, instead of making its files on the planner after all (D81).
#[tokio::test]
async fn a_transaction_whose_directories_never_come_is_refused_and_writes_nothing() {
    let api = Api::with(&[]);
    wait_spare_dirs(&api, 16).await;
    let spares = api.s.dir.join("partitions/.spare-parts");
    std::fs::rename(&spares, api.s.dir.join("spare-parts-moved")).unwrap();
    std::fs::write(&spares, b"not a directory").unwrap();
    let t0 = std::time::Instant::now();
    let (st, v) = api.post("/api/v1/transaction", wide_transaction_body(0, 100)).await;
    assert_eq!((st, v["code"].as_str()), (429, Some("overloaded")), "{v}");
    assert!(v["error"].as_str().unwrap().contains("nothing was written"), "{v}");
    assert!(t0.elapsed() >= Duration::from_secs(9), "refused after {:?}, before its wait", t0.elapsed());
    let (st, _) = api.get("/api/v1/resources/queues/tx").await;
    assert_eq!(st, 404, "the refused transaction made nothing");
    assert_eq!(api.metric("baton_planner_transactions_waited_total").await, 1.0);
    // It was counted again only when its wait was over, not on each of the planner's
    // passes (every 5 ms): many waiting transactions cost a comparison each per pass (D82).
    assert_eq!(api.metric("baton_planner_transaction_wait_recounts_total").await, 1.0);
    // Everything else still works meanwhile: a push to a new partition makes its files itself,
    // and so does a transaction short of no more directories than are worth a wait (16:
    // 20 new partitions, 15 spares left, all of them unusable now).
    let r = api.push("other", "0", &[("o", json!(1))]).await;
    assert_eq!(r[0]["status"], "queued", "{r:?}");
    let (st, v) = api.post("/api/v1/transaction", wide_transaction_body(1_000, 1_020)).await;
    assert_eq!((st, &v["success"]), (200, &json!(true)), "{v}");
    assert_eq!(api.metric("baton_planner_transactions_waited_total").await, 1.0, "the narrow one did not wait");
}

/// The largest value of `--spare-partition-dirs` is refused at start with the reason: the
/// pool's queue is allocated whole, and `u64::MAX` made the process panic at start.
#[test]
fn a_spare_directory_pool_past_its_bound_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["serve", "--http-addr", "127.0.0.1:0", "--kafka-addr", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .args(["--spare-partition-dirs", "18446744073709551615"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("--spare-partition-dirs") && !err.contains("panicked"), "{err}");
}

/// Transactions waiting for directories are bounded by `--max-queued-requests`: past it one
/// is refused `overloaded` at once (nothing written), not queued to wait as well. Here the
/// provisioner cannot make directories, the bound is 2 and three wide transactions arrive:
/// two wait their 10 s, the third is refused at once.
#[tokio::test]
async fn transactions_waiting_for_directories_past_the_queue_bound_are_refused_at_once() {
    let api = Api::with(&["--max-queued-requests", "2"]);
    wait_spare_dirs(&api, 16).await;
    let spares = api.s.dir.join("partitions/.spare-parts");
    std::fs::rename(&spares, api.s.dir.join("spare-parts-moved")).unwrap();
    std::fs::write(&spares, b"not a directory").unwrap();
    let mut sent = Vec::new();
    for i in 0..3 {
        let url = api.s.url("/api/v1/transaction");
        let body = wide_transaction_body(i * 100, i * 100 + 100);
        sent.push(tokio::spawn(async move {
            for _ in 0..50 {
                let t0 = std::time::Instant::now();
                let r = client().post(&url).json(&body).send().await;
                let (st, v) = common::api::read(r.unwrap()).await;
                // The planner's own queue (the Kafka door's timeout check, say) is not the
                // bound under test: sent again.
                if v["error"].as_str().is_some_and(|e| e.contains("waiting for the planner")) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
                return (st, v, t0.elapsed());
            }
            panic!("the planner's queue refused the transaction 50 times");
        }));
        // One at a time, so the planner's own queue (bounded by the same number) is empty
        // when each arrives and only the wait's bound can refuse.
        for _ in 0..3_000 {
            let waiting = api.metric("baton_planner_transactions_waited_total").await;
            if waiting >= (i + 1) as f64 || sent.last().unwrap().is_finished() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    let mut at_once = 0;
    let mut after_wait = 0;
    for s in sent {
        let (st, v, took) = s.await.unwrap();
        assert_eq!((st, v["code"].as_str()), (429, Some("overloaded")), "{v}");
        let why = v["error"].as_str().unwrap();
        if why.contains("too many transactions are waiting") {
            at_once += 1;
            assert!(took < Duration::from_secs(9), "refused at the bound after {took:?}");
        } else {
            assert!(why.contains("nothing was written"), "{v}");
            after_wait += 1;
        }
    }
    assert_eq!((at_once, after_wait), (1, 2), "two wait, the third is refused at once");
    assert_eq!(api.metric("baton_planner_transactions_waited_total").await, 2.0);
    let (st, _) = api.get("/api/v1/resources/queues/tx").await;
    assert_eq!(st, 404, "the refused transactions made nothing");
}
