//! Regressions for the holes an outside review found in the core (issue 12), each through
//! the real binary: a transaction that half-committed, the queue-mode group deleted, a
//! second server on one data directory, a missing checkpoint that destroyed the data, a
//! request larger than a log frame. Each test failed on the code before its fix.

use crate::common;

use common::api::Api;
use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Item 2: the output queue at maxSize; a transaction acking the input and pushing the
/// output answered 503 and kept the ack: the input was gone and the output never written.
#[tokio::test]
async fn a_transaction_into_a_full_queue_rolls_back_and_loses_nothing() {
    let mut api = Api::start();
    api.configure("out", json!({"maxSize": 1})).await;
    api.push_n("out", "p", "o", 0..1).await;
    api.push_n("in", "p", "i", 0..1).await;
    let m = api.pop_some("in", "batch=1").await.remove(0);
    let body = json!({"operations": [
        {"type": "ack", "transactionId": m["transactionId"], "partitionId": m["partitionId"], "leaseId": m["leaseId"]},
        {"type": "push", "items": [{"queue": "out", "partition": "p", "payload": {"x": 1}}]}],
        "requiredLeases": [m["leaseId"]]});
    let (st, v) = api.post("/api/v1/transaction", body).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!((v["success"].clone(), v["reason"].clone()), (json!(false), json!("queue_full")), "{v}");
    // Nothing of it happened: the input still acks under its lease (it was not acked by the
    // rolled-back transaction) and, before that, survives a crash.
    api.s.kill9();
    api.s.restart();
    api.c = common::api::client();
    let depth = api.ok("/api/v1/resources/queues/out/depth").await;
    assert_eq!(depth["depth"], 1, "{depth}");
    let r = api.ack(&m, "completed", None).await;
    assert_eq!(r["success"], true, "the input was acked by a rolled-back transaction: {r}");
}

/// Item 4 (I6): deleting the reserved queue-mode group delivered every acked message again.
#[tokio::test]
async fn the_queue_mode_group_cannot_be_deleted_or_moved() {
    let api = Api::start();
    api.push_n("q", "p", "m", 0..3).await;
    let msgs = api.pop_some("q", "batch=3").await;
    api.ack_ok(&msgs).await;
    let del = api.c.delete(api.s.url("/api/v1/consumer-groups/__QUEUE_MODE__")).send().await.unwrap();
    let (st, v) = common::api::read(del).await;
    assert_eq!((st, v["code"].clone()), (400, json!("reserved_group")), "{v}");
    let (st, v) = api.post("/api/v1/consumer-groups/__QUEUE_MODE__/queues/q/seek", json!({})).await;
    assert_eq!((st, v["code"].clone()), (400, json!("reserved_group")), "{v}");
    api.pop_none("q", "batch=3").await;
}

fn second_server(dir: &std::path::Path) -> std::process::Output {
    let port = common::free_port();
    let mut c = Command::new(env!("CARGO_BIN_EXE_baton"));
    c.args(["serve", "--http-addr", &format!("127.0.0.1:{port}"), "--data-dir"])
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn a second baton");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("a second server on the same data directory kept running");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Item 9: two servers on one data directory both answered pushes; half were lost later.
#[tokio::test]
async fn a_second_server_on_the_same_directory_refuses_to_start_naming_the_holder() {
    let api = Api::start();
    api.push_n("q", "p", "m", 0..2).await;
    let out = second_server(&api.s.dir);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("in use by process") && err.contains(&api.s.pid().to_string()), "{err}");
    // Deleting the pid file frees nothing: the lock is on the directory.
    std::fs::remove_file(api.s.dir.join("LOCK")).unwrap();
    let out = second_server(&api.s.dir);
    assert!(!out.status.success(), "a deleted LOCK file let a second server in");
    // The first is untouched.
    assert_eq!(api.pop_some("q", "batch=10").await.len(), 2);
}

fn partition_files(dir: &std::path::Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let Ok(parts) = std::fs::read_dir(dir.join("partitions")) else { return out };
    for p in parts.flatten() {
        for f in std::fs::read_dir(p.path()).into_iter().flatten().flatten() {
            out.push((f.path().display().to_string(), f.metadata().unwrap().len()));
        }
    }
    out.sort();
    out
}

/// Item 10: with checkpoint.bin gone, start-up was refused only after every partition
/// directory had been deleted; with the file put back, every read answered 500.
#[tokio::test]
async fn a_missing_checkpoint_is_refused_before_anything_is_deleted() {
    let mut api = Api::with(&["--wal-segment-mb", "1", "--checkpoint-interval-secs", "1"]);
    let payload = json!({"pad": "x".repeat(4000)});
    for round in 0..10 {
        let items: Vec<Value> = (0..100)
            .map(|i| json!({"queue": "q", "partition": "p", "payload": payload, "transactionId": format!("r{round}-{i}")}))
            .collect();
        let (st, v) = api.post("/api/v1/push", json!({ "items": items })).await;
        assert_eq!(st, 201, "{v}");
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    // Wait for a checkpoint that retired the first WAL segment.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while api.s.wal_segments().first().is_none_or(|s| s.ends_with("wal-00000000000000000001.log")) {
        assert!(std::time::Instant::now() < deadline, "no checkpoint retired the first segment");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    api.s.terminate();
    let before = partition_files(&api.s.dir);
    assert!(!before.is_empty());
    let ckpt = api.s.dir.join("checkpoint.bin");
    let saved = api.s.dir.with_extension("ckpt");
    std::fs::rename(&ckpt, &saved).unwrap();
    let st = api.s.restart_expect_exit(Duration::from_secs(20));
    assert!(!st.success());
    assert!(api.s.log().contains("nothing was changed on disk"), "{}", api.s.log());
    assert_eq!(partition_files(&api.s.dir), before, "a refused start changed the partition files");
    std::fs::rename(&saved, &ckpt).unwrap();
    api.s.restart();
    api.c = common::api::client();
    let (st, v) = api.pop("q", "batch=1000").await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["messages"].as_array().unwrap().len(), 1000, "every message is readable again");
}

/// Item 1: a request whose entry is larger than a frame may be is refused before it is
/// planned (413), instead of a frame the log refuses while later frames take its index.
#[tokio::test]
async fn a_push_over_the_entry_limit_is_refused_and_the_node_keeps_working() {
    let mut api = Api::with(&[
        "--max-entry-mb",
        "1",
        "--kafka-max-frame-bytes",
        "1048576",
        "--max-body-bytes",
        "8388608",
        "--max-payload-bytes",
        "8388608",
    ]);
    let big = json!({"items": [{"queue": "q", "partition": "p", "payload": "x".repeat(3 << 20)}]});
    let (st, v) = api.post("/api/v1/push", big).await;
    assert_eq!(st, 201, "{v}");
    assert_eq!((v[0]["status"].clone(), v[0]["code"].clone()), (json!("failed"), json!("entry_too_large")), "{v}");
    api.push_n("q", "p", "small", 0..3).await;
    api.s.kill9();
    api.s.restart();
    api.c = common::api::client();
    assert_eq!(api.pop_some("q", "batch=10").await.len(), 3);
}

/// Item 15: transaction ids were deduplicated by a 64-bit FNV-1a hash; these two collide
/// under it, so the second push answered `duplicate` and was never stored, and with dedup
/// off an ack by one id settled the other message.
#[tokio::test]
async fn transaction_ids_that_collide_under_fnv_are_two_messages() {
    let api = Api::start();
    let (a, b) = ("BfQRRUtxLxD", "WaxExq-iA0I");
    let r = api.push("q", "p", &[(a, json!(1))]).await;
    assert_eq!(r[0]["status"], "queued", "{r:?}");
    let r = api.push("q", "p", &[(b, json!(2))]).await;
    assert_eq!(r[0]["status"], "queued", "the second id was taken for a duplicate: {r:?}");
    api.configure("nodedup", json!({"dedupWindowSeconds": 0})).await;
    api.push("nodedup", "p", &[(a, json!(1)), (b, json!(2))]).await;
    let msgs = api.pop_some("nodedup", "batch=2").await;
    assert_eq!(msgs.len(), 2);
    let second = msgs.iter().find(|m| m["transactionId"] == b).expect("b delivered").clone();
    let r = api.ack(&second, "failed", None).await;
    assert_eq!(r["success"], true, "{r}");
    // The nack of b released the lease without settling a (FIFO: both come back, a first);
    // under the old hash the ack by b's id found a's offset and settled a instead.
    let again = api.pop_some("nodedup", "batch=2").await;
    let ids: Vec<&str> = again.iter().map(|m| m["transactionId"].as_str().unwrap()).collect();
    assert_eq!(ids, vec![a, b], "{again:?}");
    let first = again.iter().find(|m| m["transactionId"] == a).unwrap().clone();
    let r = api.ack(&first, "completed", None).await;
    assert_eq!(r["success"], true, "{r}");
    let r = api.ack(&first, "completed", None).await;
    assert_ne!(r["success"], true, "acking a twice must not settle b: {r}");
}

/// Item 16: a push woke every long poll of its queue, and each woken pop scanned every
/// partition on the planner: 1,000 waiting pops made unrelated pushes wait a second. Now a
/// push wakes about one pop per partition it filled (per consumer group). Counted, not timed:
/// the planner's command counter over one push with 200 pops waiting.
#[tokio::test]
async fn one_push_wakes_one_waiting_pop_not_all_of_them() {
    let api = Api::start();
    let items: Vec<Value> =
        (0..50).map(|i| json!({"queue": "herd", "partition": format!("p{i}"), "payload": i})).collect();
    let (st, v) = api.post("/api/v1/push", json!({ "items": items })).await;
    assert_eq!(st, 201, "{v}");
    for _ in 0..50 {
        api.pop_some("herd", "batch=10&autoAck=true").await;
    }
    api.pop_none("herd", "batch=10").await;
    // A /metrics read is itself planner work (queue and group gauges); measure
    // it so the wait below counts only the long polls' pops, however many times
    // a loaded machine makes it read.
    let m0 = api.metric("baton_planner_commands_total").await;
    let base = api.metric("baton_planner_commands_total").await;
    let per_read = base - m0;
    let waiters: Vec<_> = (0..200)
        .map(|_| {
            let c = api.c.clone();
            let url = api.s.url("/api/v1/pop/queue/herd?batch=1&wait=true&timeout=20000");
            tokio::spawn(async move { c.get(url).send().await.map(|r| r.status().as_u16()) })
        })
        .collect();
    // Every long poll has made its first pop and is waiting.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut reads = 0.0;
    while api.metric("baton_planner_commands_total").await - base - per_read * reads < 200.0 {
        reads += 1.0;
        assert!(std::time::Instant::now() < deadline, "the long polls did not all start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = api.metric("baton_planner_commands_total").await;
    api.push_n("herd", "p7", "wake", 0..1).await;
    let mut waiters = waiters;
    let served = loop {
        assert!(std::time::Instant::now() < deadline, "no long poll was served");
        if let Some(i) = waiters.iter().position(|w| w.is_finished()) {
            break waiters.remove(i).await.unwrap().unwrap();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert_eq!(served, 200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = api.metric("baton_planner_commands_total").await;
    // The push, the served pop and the metric reads; before the fix, 200 more pops.
    assert!(after - before < 20.0, "one push made {} planner commands", after - before);
    assert!(waiters.iter().all(|w| !w.is_finished()), "the other long polls still wait");
    for w in waiters {
        w.abort();
    }
}

/// Item 11: a server started under the common soft limit of open files (here lowered to
/// 256 before it starts) raises it to the hard limit, instead of running out at a few hundred
/// connections and partition files.
#[test]
fn the_server_raises_its_soft_file_limit_to_the_hard_one() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let port = common::free_port();
    let mut c = Command::new(env!("CARGO_BIN_EXE_baton"));
    c.args(["serve", "--http-addr", &format!("127.0.0.1:{port}"), "--data-dir"])
        .arg(dir.path().join("data"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: setrlimit is async-signal-safe; it only lowers this child's soft limit.
    unsafe {
        c.pre_exec(|| {
            let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
            lim.rlim_cur = lim.rlim_max.min(256);
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            Ok(())
        });
    }
    let mut child = common::Baton(c.spawn().unwrap());
    let limits = || std::fs::read_to_string(format!("/proc/{}/limits", child.0.id())).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let line = loop {
        let l = limits().lines().find(|l| l.starts_with("Max open files")).unwrap().to_string();
        let v: Vec<&str> = l.split_whitespace().collect();
        if v[3] == v[4] || std::time::Instant::now() > deadline {
            break l;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let v: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(v[3], v[4], "soft limit not raised: {line}");
    let _ = child.0.kill();
}
