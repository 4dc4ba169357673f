//! The broker's semantics through the HTTP API of the real binary: FIFO,
//! leases (exclusivity, expiry, extend, fencing), ack statuses, retry limit
//! and dead letters, consumer groups and subscription modes, dedup, delayed
//! processing, long polls, auto-ack, fetch, retention, restart after SIGTERM,
//! metrics and the resources routes.
//!
//! Lease times are 1 s where expiry matters, so waits stay short; every wait
//! is bounded by the client's timeout.

use crate::common;

use common::api::{client, ns, read, txids, Api};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::{Duration, Instant};

#[tokio::test]
async fn fifo_within_a_partition_across_pops() {
    let api = Api::start();
    api.push_n("fifo", "p", "m", 0..6).await;
    api.push_n("fifo", "p", "m", 6..10).await;
    let mut seen = Vec::new();
    let mut offsets = Vec::new();
    for _ in 0..10 {
        let (st, v) = api.pop("fifo", "batch=3").await;
        if st == 204 {
            break;
        }
        assert_eq!(st, 200, "{v}");
        let msgs = v["messages"].as_array().unwrap().clone();
        assert!(msgs.iter().all(|m| m["partition"] == "p" && m["leaseId"] == v["leaseId"]));
        offsets.extend(msgs.iter().map(|m| m["offset"].as_u64().unwrap()));
        seen.extend(ns(&msgs));
        api.ack_ok(&msgs).await;
    }
    assert_eq!(seen, (0..10).collect::<Vec<_>>());
    assert_eq!(offsets, (0..10).collect::<Vec<_>>());
    api.pop_none("fifo", "batch=3").await;
}

#[tokio::test]
async fn competing_consumers_never_share_a_leased_message() {
    let api = Api::start();
    for p in 0..4 {
        api.push_n("cc", &format!("p{p}"), &format!("p{p}"), 0..3).await;
    }
    // Eight consumers at once: each partition is leased to exactly one of them.
    let pops: Vec<_> = (0..8)
        .map(|_| {
            let (c, url) = (api.c.clone(), api.s.url("/api/v1/pop/queue/cc?wait=false&batch=10"));
            tokio::spawn(async move { read(c.get(url).send().await.unwrap()).await })
        })
        .collect();
    let mut delivered = Vec::new();
    let mut partitions = HashSet::new();
    let mut all = Vec::new();
    for p in pops {
        let (st, v) = p.await.unwrap();
        if st == 204 {
            continue;
        }
        assert_eq!(st, 200, "{v}");
        assert!(partitions.insert(v["partition"].as_str().unwrap().to_string()), "{v}");
        let msgs = v["messages"].as_array().unwrap().clone();
        assert_eq!(ns(&msgs), [0, 1, 2], "a partition's batch in order: {v}");
        delivered.extend(txids(&msgs));
        all.extend(msgs);
    }
    assert_eq!(partitions.len(), 4, "one consumer per partition");
    let unique: HashSet<_> = delivered.iter().collect();
    assert_eq!(unique.len(), 12, "no message delivered twice: {delivered:?}");
    api.pop_none("cc", "batch=10").await;
    api.ack_ok(&all).await;
    api.pop_none("cc", "batch=10").await;

    // One partition: while its lease lives, a second consumer gets nothing,
    // even though messages remain (FIFO needs the partition exclusive).
    api.push_n("one", "Default", "o", 0..3).await;
    let first = api.pop_some("one", "batch=2").await;
    assert_eq!(ns(&first), [0, 1]);
    api.pop_none("one", "batch=2").await;
    api.ack_ok(&first).await;
    assert_eq!(ns(&api.pop_some("one", "batch=2").await), [2]);
}

#[tokio::test]
async fn every_consumer_group_gets_every_message() {
    let api = Api::start();
    api.push_n("bus", "Default", "b", 0..3).await;
    let g1 = api.pop_some("bus", "batch=10&consumerGroup=g1").await;
    let g2 = api.pop_some("bus", "batch=10&consumerGroup=g2").await;
    let qm = api.pop_some("bus", "batch=10").await;
    assert_eq!(ns(&g1), [0, 1, 2]);
    assert_eq!(ns(&g2), [0, 1, 2]);
    assert_eq!(ns(&qm), [0, 1, 2]);
    assert_eq!(g1[0]["consumerGroup"], "g1");
    assert_eq!(qm[0]["consumerGroup"], "__QUEUE_MODE__");
    // Settling in g1 does not settle anything for g2.
    api.ack_ok(&g1).await;
    api.pop_none("bus", "batch=10&consumerGroup=g1").await;
    let r = api.ack(&g2[0], "failed", Some("g2 fails")).await;
    assert_eq!(r["success"], true, "{r}");
    let g2 = api.pop_some("bus", "batch=10&consumerGroup=g2").await;
    assert_eq!(ns(&g2), [0, 1, 2]);
    api.ack_ok(&g2).await;
    // Queue mode is a group of its own.
    let r = api.ack(&qm[0], "completed", None).await;
    assert_eq!(r["success"], true, "{r}");
    api.push_n("bus", "Default", "b", 3..4).await;
    assert_eq!(ns(&api.pop_some("bus", "batch=10&consumerGroup=g1").await), [3]);
    assert_eq!(ns(&api.pop_some("bus", "batch=10&consumerGroup=g2").await), [3]);
    let groups = api.ok("/api/v1/consumer-groups").await;
    let names: HashSet<&str> = groups.as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert!(names.contains("g1") && names.contains("g2"), "{groups}");
}

#[tokio::test]
async fn subscription_mode_new_skips_earlier_messages() {
    let api = Api::start();
    api.push_n("sub", "Default", "old", 0..2).await;
    api.pop_none("sub", "batch=10&consumerGroup=late&subscriptionMode=new").await;
    api.push_n("sub", "Default", "new", 2..3).await;
    let late = api.pop_some("sub", "batch=10&consumerGroup=late&subscriptionMode=new").await;
    assert_eq!(ns(&late), [2], "only what came after the group's first pop");
    // The stored cursor wins afterwards, and other groups still see all history.
    api.ack_ok(&late).await;
    api.pop_none("sub", "batch=10&consumerGroup=late").await;
    let all = api.pop_some("sub", "batch=10&consumerGroup=all&subscriptionMode=all").await;
    assert_eq!(ns(&all), [0, 1, 2]);
}

#[tokio::test]
async fn a_repeated_transaction_id_is_a_duplicate_and_stored_once() {
    let api = Api::start();
    let r = api.push("dd", "Default", &[("dup-1", json!(1))]).await;
    assert_eq!(r[0]["status"], "queued");
    let r = api.push("dd", "Default", &[("dup-1", json!("changed"))]).await;
    assert_eq!(r[0]["status"], "duplicate", "{r:?}");
    assert_eq!(r[0]["transactionId"], "dup-1");
    let r = api.push("dd", "Default", &[("dup-2", json!(2)), ("dup-2", json!(3))]).await;
    assert_eq!(r[0]["status"], "queued");
    assert_eq!(r[1]["status"], "duplicate", "{r:?}");
    // Dedup is per partition: the same id elsewhere is a new message.
    let r = api.push("dd", "other", &[("dup-1", json!(4))]).await;
    assert_eq!(r[0]["status"], "queued");
    let f = api.fetch("dd", "Default", 0).await;
    let payloads: Vec<&Value> = f["records"].as_array().unwrap().iter().map(|r| &r["payload"]).collect();
    assert_eq!(payloads, [&json!(1), &json!(2)], "{f}");
    assert_eq!(f["highWatermark"], 2);
    let q = api.ok("/api/v1/resources/queues/dd").await;
    assert_eq!(q["messages"]["total"], 3, "{q}");
}

#[tokio::test]
async fn delayed_processing_holds_a_message_back() {
    let api = Api::start();
    api.configure("late-start", json!({"delayedProcessing": 1})).await;
    let pushed = Instant::now();
    api.push_n("late-start", "Default", "d", 0..1).await;
    api.pop_none("late-start", "batch=1").await;
    tokio::time::sleep(Duration::from_millis(1200).saturating_sub(pushed.elapsed())).await;
    let m = api.pop_some("late-start", "batch=1").await;
    assert_eq!(ns(&m), [0]);
    assert!(pushed.elapsed() >= Duration::from_secs(1));
}

/// A long poll must return when a delayed message becomes due, not at its
/// timeout: nothing wakes it then (the engine's notifier fires on durable
/// pushes, released leases and lease expiries, but not when a delay ends).
#[tokio::test]
async fn a_long_poll_returns_when_a_delayed_message_becomes_due() {
    let api = Api::start();
    api.configure("dlp", json!({"delayedProcessing": 1})).await;
    api.push_n("dlp", "Default", "d", 0..1).await;
    let t = Instant::now();
    let (st, v) = api.get("/api/v1/pop/queue/dlp?wait=true&timeout=4000&batch=1").await;
    assert_eq!(st, 200, "{v}");
    assert!(t.elapsed() < Duration::from_millis(2500), "{:?}", t.elapsed());
}

#[tokio::test]
async fn a_long_poll_returns_soon_after_a_push() {
    let api = Api::start();
    api.configure("lp", json!({})).await;
    for queue in ["lp", "lp-unborn"] {
        let url = api.s.url(&format!("/api/v1/pop/queue/{queue}?wait=true&timeout=5000&batch=1"));
        let c = api.c.clone();
        let t = Instant::now();
        let waiter = tokio::spawn(async move { read(c.get(url).send().await.unwrap()).await });
        let delay = Duration::from_millis(400);
        tokio::time::sleep(delay).await;
        api.push_n(queue, "Default", "w", 0..1).await;
        let (st, v) = waiter.await.unwrap();
        let waited = t.elapsed();
        assert_eq!(st, 200, "{queue}: {v}");
        assert_eq!(v["messages"][0]["transactionId"], "w-0");
        assert!(waited > delay && waited < Duration::from_secs(2), "{queue}: {waited:?}");
    }
}

/// A consumer waiting while another holds the partition's lease must get the
/// rest of the partition as soon as that lease is released, by a nack or by
/// completing the whole batch.
async fn long_poll_after_release(settle: &str) {
    let api = Api::start();
    api.push_n("rel", "Default", "r", 0..3).await;
    let held = api.pop_some("rel", "batch=2").await;
    let url = api.s.url("/api/v1/pop/queue/rel?wait=true&timeout=5000&batch=10");
    let c = api.c.clone();
    let t = Instant::now();
    let waiter = tokio::spawn(async move { read(c.get(url).send().await.unwrap()).await });
    let delay = Duration::from_millis(400);
    tokio::time::sleep(delay).await;
    // A nack releases the lease at once; completing does once the whole batch is settled.
    let settles = if settle == "completed" { &held[..] } else { &held[..1] };
    for m in settles {
        assert_eq!(api.ack(m, settle, None).await["success"], true);
    }
    let (st, v) = waiter.await.unwrap();
    let waited = t.elapsed();
    assert_eq!(st, 200, "{v}");
    let want: &[u64] = if settle == "completed" { &[2] } else { &[0, 1, 2] };
    assert_eq!(ns(v["messages"].as_array().unwrap()), want, "{v}");
    assert!(waited > delay && waited < Duration::from_secs(2), "{waited:?}");
}

#[tokio::test]
async fn a_long_poll_is_woken_by_a_nack_that_releases_the_lease() {
    long_poll_after_release("retry").await;
}

#[tokio::test]
async fn a_long_poll_is_woken_when_acks_complete_a_lease() {
    long_poll_after_release("completed").await;
}

/// SIGTERM must not wait for open long polls to run out: a consumer's 30 s
/// poll would hold the shutdown (and a deployment's grace period) hostage.
#[tokio::test]
async fn sigterm_with_an_open_long_poll_exits_promptly() {
    let mut api = Api::start();
    api.configure("lp-term", json!({})).await;
    let url = api.s.url("/api/v1/pop/queue/lp-term?wait=true&timeout=20000");
    let c = api.c.clone();
    let waiter = tokio::spawn(async move { c.get(url).send().await.map(|r| r.status().as_u16()) });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t = Instant::now();
    let status = tokio::task::spawn_blocking(move || {
        let st = api.s.terminate();
        (api, st)
    })
    .await
    .unwrap()
    .1;
    assert_eq!(status.code(), Some(0), "{status}");
    assert!(t.elapsed() < Duration::from_secs(5), "shutdown took {:?}", t.elapsed());
    // The poller got an answer or a closed connection, not a hang.
    let _ = tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("poller released");
}

#[tokio::test]
async fn a_long_poll_with_nothing_returns_204_after_its_timeout() {
    let api = Api::start();
    api.configure("idle", json!({})).await;
    for queue in ["idle", "never-made"] {
        let t = Instant::now();
        let (st, v) = api.get(&format!("/api/v1/pop/queue/{queue}?wait=true&timeout=500")).await;
        let waited = t.elapsed();
        assert_eq!(st, 204, "{v}");
        assert!(waited >= Duration::from_millis(450) && waited < Duration::from_millis(1500), "{queue}: {waited:?}");
    }
    // wait=false answers at once.
    let t = Instant::now();
    api.pop_none("idle", "timeout=5000").await;
    assert!(t.elapsed() < Duration::from_millis(400), "{:?}", t.elapsed());
}

#[tokio::test]
async fn auto_ack_delivers_without_a_lease_and_never_again() {
    let api = Api::start();
    api.configure("aa", json!({"leaseTime": 1})).await;
    api.push_n("aa", "Default", "a", 0..2).await;
    let (st, v) = api.pop("aa", "batch=10&autoAck=true").await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["leaseId"], Value::Null, "{v}");
    let msgs = v["messages"].as_array().unwrap();
    assert_eq!(ns(msgs), [0, 1]);
    assert!(msgs.iter().all(|m| m["leaseId"].is_null()), "{v}");
    api.pop_none("aa", "batch=10").await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    api.pop_none("aa", "batch=10").await;
    assert_eq!(api.ok("/api/v1/resources/queues/aa").await["depth"], 0);
}

#[tokio::test]
async fn fetch_by_offset_reads_records_and_watermarks() {
    let api = Api::start();
    api.push_n("fe", "Default", "f", 0..3).await;
    api.push_n("fe", "Default", "f", 3..5).await;
    let e = api.fetch("fe", "Default", 2).await;
    assert_eq!(e["error"], Value::Null, "{e}");
    assert_eq!(e["highWatermark"], 5, "{e}");
    assert_eq!(e["logStartOffset"], 0, "{e}");
    let recs = e["records"].as_array().unwrap();
    let offs: Vec<u64> = recs.iter().map(|r| r["offset"].as_u64().unwrap()).collect();
    assert_eq!(offs, [2, 3, 4], "{e}");
    assert_eq!(recs[0]["payload"], json!({"n": 2}));
    assert_eq!(recs[0]["transactionId"], "f-2");
    assert!(recs[0]["ts"].as_i64().is_some_and(|t| t > 1_600_000_000_000), "{e}");
    // At the watermark: nothing yet, no error. Past it: out of range.
    let e = api.fetch("fe", "Default", 5).await;
    assert_eq!(e["error"], Value::Null, "{e}");
    assert_eq!(e["records"].as_array().map(|r| r.len()), Some(0), "{e}");
    assert_eq!(api.fetch("fe", "Default", 6).await["error"], "OFFSET_OUT_OF_RANGE");
    assert_eq!(api.fetch("fe", "nope", 0).await["error"], "UNKNOWN_TOPIC_OR_PARTITION");
    // Fetching leases nothing: a pop still gets everything.
    assert_eq!(ns(&api.pop_some("fe", "batch=10").await), [0, 1, 2, 3, 4]);
}

/// Retention trims whole stored batches older than retentionSeconds (checked
/// every 100 ms) and deletes segment files that hold only trimmed offsets.
/// With 1 MiB segments, four ~400 kB batches fill two segments. The old
/// segment's file is deleted by the first checkpoint after the trim (1 s here).
#[tokio::test]
async fn retention_moves_log_start_and_deletes_old_segments() {
    let api = Api::with(&["--partition-segment-mb", "1", "--checkpoint-interval-secs", "1"]);
    api.configure("ret", json!({"retentionSeconds": 1})).await;
    let big = "r".repeat(400_000);
    for i in 0..4 {
        let t = format!("r-{i}");
        api.push("ret", "Default", &[(t.as_str(), json!(big))]).await;
    }
    let pushed = Instant::now();
    let e = api.fetch("ret", "Default", 0).await;
    assert_eq!((e["logStartOffset"].as_u64(), e["highWatermark"].as_u64()), (Some(0), Some(4)), "{e}");
    // `.spare` and `.spare-parts` hold the provisioner's ready-made files (D17, D81), not partitions.
    let listed = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(api.s.dir.join("partitions"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while listed().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let parts = listed();
    assert_eq!(parts.len(), 1, "{parts:?}");
    let pdir = parts[0].clone();
    // Each segment has its index files beside it (D29); they come and go with it.
    let files = || {
        let mut v: Vec<String> = std::fs::read_dir(&pdir)
            .map(|d| d.map(|e| e.unwrap().file_name().into_string().unwrap()).collect())
            .unwrap_or_default();
        v.sort();
        v
    };
    let segs = || files().into_iter().filter(|f| f.ends_with(".seg")).collect::<Vec<_>>();
    // Segment files get their names on the provisioner's thread, just after the push answers.
    let deadline = Instant::now() + Duration::from_secs(5);
    while segs().len() < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(segs(), ["00000000000000000000.seg", "00000000000000000003.seg"]);
    let deadline = Instant::now() + Duration::from_secs(6);
    let e = loop {
        let e = api.fetch("ret", "Default", 4).await;
        if e["logStartOffset"] == 4 || Instant::now() > deadline {
            break e;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(e["logStartOffset"], 4, "retention never trimmed: {e}");
    assert!(pushed.elapsed() >= Duration::from_millis(900), "trimmed too early");
    let deadline = Instant::now() + Duration::from_secs(5);
    while segs().len() > 1 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(segs(), ["00000000000000000003.seg"], "the old segment is deleted, the active one kept");
    let deadline = Instant::now() + Duration::from_secs(5);
    while files().len() > 3 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        files(),
        ["00000000000000000003.idx", "00000000000000000003.seg", "00000000000000000003.txid"],
        "its index files go with it"
    );
    assert_eq!(api.fetch("ret", "Default", 0).await["error"], "OFFSET_OUT_OF_RANGE");
    api.pop_none("ret", "batch=10").await;
    // The partition goes on from where it was.
    let r = api.push("ret", "Default", &[("r-4", json!("small"))]).await;
    assert_eq!(r[0]["offset"], 4, "{r:?}");
}

#[tokio::test]
async fn sigterm_exits_0_and_a_restart_keeps_pushes_and_acks() {
    let mut api = Api::start();
    api.push_n("dur", "Default", "d", 0..6).await;
    api.push_n("dur", "Default", "d", 6..10).await;
    let m = api.pop_some("dur", "batch=4").await;
    api.ack_ok(&m).await;
    let m = api.pop_some("dur", "batch=2").await;
    assert_eq!(ns(&m), [4, 5]);
    assert_eq!(api.ack(&m[0], "completed", None).await["success"], true);
    assert_eq!(api.ack(&m[1], "failed", Some("charged")).await["success"], true);
    let g = api.pop_some("dur", "batch=3&consumerGroup=g").await;
    api.ack_ok(&g).await;
    let dead = api.push("dur", "dead", &[("z", json!("dead"))]).await;
    assert_eq!(dead[0]["status"], "queued");
    let (st, v) = api.get("/api/v1/pop/queue/dur/partition/dead?wait=false&batch=1&consumerGroup=g").await;
    assert_eq!(st, 200, "{v}");
    let z = v["messages"].as_array().unwrap().clone();
    assert_eq!(api.ack(&z[0], "dlq", Some("gone")).await["success"], true);

    api.c = client(); // no pooled connection survives the restart
    let status = api.s.terminate();
    assert_eq!(status.code(), Some(0), "SIGTERM must exit 0: {status}");
    api.s.restart();

    let q = api.ok("/api/v1/resources/queues/dur").await;
    assert_eq!(q["messages"]["total"], 11, "{q}");
    let d = api.dlq("dur").await;
    assert_eq!(d["total"], 1, "{d}");
    assert_eq!(d["messages"][0]["errorMessage"], "gone", "{d}");
    let (st, v) = api.get("/api/v1/pop/queue/dur/partition/Default?wait=false&batch=100").await;
    assert_eq!(st, 200, "{v}");
    let m = v["messages"].as_array().unwrap();
    assert_eq!(ns(m), [5, 6, 7, 8, 9], "acked messages stay acked");
    assert_eq!(m[0]["deliveryAttempt"], 2, "the failure stays charged: {}", m[0]);
    assert_eq!(m[1]["deliveryAttempt"], 1);
    let (st, v) = api.get("/api/v1/pop/queue/dur/partition/Default?wait=false&batch=100&consumerGroup=g").await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(ns(v["messages"].as_array().unwrap()), [3, 4, 5, 6, 7, 8, 9]);
    let (st, v) = api.get("/api/v1/pop/queue/dur/partition/dead?wait=false&batch=100&consumerGroup=g").await;
    assert_eq!(st, 204, "the dead-lettered message stays settled: {v}");
    // Dedup survives the restart too.
    let r = api.push("dur", "Default", &[("d-0", json!("again"))]).await;
    assert_eq!(r[0]["status"], "duplicate", "{r:?}");
}

#[tokio::test]
async fn metrics_expose_counters_fsync_latency_and_depth() {
    let api = Api::start();
    api.push_n("met", "Default", "m", 0..3).await;
    let r = api.c.get(api.s.url("/metrics/prometheus")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let ct = r.headers()["content-type"].to_str().unwrap().to_string();
    assert!(ct.starts_with("text/plain"), "{ct}");
    let text = r.text().await.unwrap();
    assert!(text.contains("# TYPE baton_pushed_messages_total counter"), "{text}");
    assert_eq!(api.metric("baton_pushed_messages_total").await, 3.0);
    assert!(text.contains("baton_wal_fdatasync_seconds_bucket{le=\"+Inf\"}"), "{text}");
    let syncs = api.metric("baton_wal_fdatasync_seconds_count").await;
    assert!(syncs >= 1.0, "the push was synced: {text}");
    assert!(text.contains("baton_queue_depth{queue=\"met\"} 3"), "{text}");
    // `/metrics` is JSON (Queen's client reads it so) unless a scraper asks for text.
    let (st, j) = api.get("/metrics").await;
    assert_eq!(st, 200);
    assert_eq!(j["metrics"]["baton_pushed_messages_total"], 3.0, "{j}");
    assert!(j["series"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["name"] == "baton_queue_depth" && s["labels"]["queue"] == "met" && s["value"] == 3.0));
    assert_eq!(j["unparsed"], serde_json::json!([]), "every sample parses");
    let scrape = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    let r = api.c.get(api.s.url("/metrics")).header("accept", scrape).send().await.unwrap();
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/plain"));
    assert!(r.text().await.unwrap().contains("# TYPE baton_pushed_messages_total counter"));
    let m = api.pop_some("met", "batch=1").await;
    api.ack_ok(&m).await;
    let text = api.metrics().await;
    assert!(text.contains("baton_queue_depth{queue=\"met\"} 2"), "{text}");
    assert_eq!(api.metric("baton_acked_messages_total").await, 1.0);
    assert_eq!(api.metric("baton_popped_messages_total").await, 1.0);
    // Server-side request durations, by route template (never by queue name).
    let push_count = r#"baton_http_request_duration_seconds_count{method="POST",route="/api/v1/push"}"#;
    assert_eq!(api.metric(push_count).await, 1.0, "one push request so far");
    let pop = r#"baton_http_request_duration_seconds_count{method="GET",route="/api/v1/pop/queue/{queue}"}"#;
    assert_eq!(api.metric(pop).await, 1.0);
    assert!(!text.contains("route=\"/api/v1/pop/queue/met\""), "labels never carry a queue name: {text}");
    let (st, _) = api.get("/api/v1/nowhere").await;
    assert_eq!(st, 404);
    assert!(!api.metrics().await.contains("nowhere"), "unmatched paths make no series");
}

/// D84: on an idle server the planner writes and syncs a push's frame itself. The count of
/// such batches is what shows it; without D84 it stays 0. Every push is still synced
/// (fdatasync count) and readable after.
#[tokio::test]
async fn pushes_to_an_idle_server_are_synced_by_the_planner_itself() {
    let api = Api::start();
    api.push_n("idle", "Default", "warm", 0..1).await;
    let (here, batches, syncs) = (
        api.metric("baton_wal_batches_by_submitter_total").await,
        api.metric("baton_wal_batches_total").await,
        api.metric("baton_wal_fdatasync_seconds_count").await,
    );
    for i in 0..5 {
        api.push_n("idle", "Default", "one", i..i + 1).await;
    }
    let here = api.metric("baton_wal_batches_by_submitter_total").await - here;
    let batches = api.metric("baton_wal_batches_total").await - batches;
    let syncs = api.metric("baton_wal_fdatasync_seconds_count").await - syncs;
    assert!(batches >= 5.0 && syncs >= 5.0, "one sync per push at least: {batches} batches, {syncs} syncs");
    // Five pushes one after another find the planner with nothing else to do; allow a
    // coinciding tick to send one or two through the WAL thread.
    assert!(here >= 3.0, "only {here} of {batches} batches were written by the planner");
    let (st, v) = api.pop("idle", "batch=10").await;
    assert_eq!((st, v["messages"].as_array().map(Vec::len)), (200, Some(6)), "{v}");
}

#[tokio::test]
async fn resources_and_consumer_group_routes_answer_sensible_json() {
    let api = Api::start();
    api.configure("res", json!({"leaseTime": 7})).await;
    api.push_n("res", "p1", "a", 0..2).await;
    api.push_n("res", "p2", "b", 0..1).await;
    let h = api.ok("/health").await;
    assert_eq!(h["status"], "healthy", "{h}");

    let all = api.ok("/api/v1/resources/queues").await;
    let q = all["queues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["name"] == "res")
        .unwrap_or_else(|| panic!("{all}"))
        .clone();
    assert_eq!(q["partitions"], 2, "{q}");
    assert_eq!(q["options"]["leaseTime"], 7, "{q}");
    assert_eq!(q["depth"], 3, "{q}");
    let one = api.ok("/api/v1/resources/queues/res").await;
    for (k, v) in q.as_object().unwrap() {
        assert_eq!(&one[k], v, "the list and the single view agree on {k}");
    }
    assert!(q.get("partitionList").is_none(), "the list carries counts, not partitions: {q}");
    let names: Vec<&str> =
        one["partitionList"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["p1", "p2"]);
    assert_eq!(one["messages"]["total"], 3);

    let d = api.ok("/api/v1/resources/queues/res/depth").await;
    assert_eq!(d["queue"], "res");
    assert_eq!(d["depth"], 3);
    assert_eq!(
        d["partitions"],
        json!([{"partition": "p1", "pending": 2, "depth": 2}, {"partition": "p2", "pending": 1, "depth": 1}])
    );
    // Queen's depth report fields (issue 16 item 1).
    assert_eq!((&d["pending"], &d["partitionsPending"], &d["effectivePending"]), (&json!(3), &json!(2), &json!(3)));
    assert_eq!((&d["group"], &d["conflation"]), (&json!(null), &json!(false)));

    let (st, v) = api.get("/api/v1/pop/queue/res/partition/p1?wait=false&batch=1&consumerGroup=billing").await;
    assert_eq!(st, 200, "{v}");
    let m = v["messages"].as_array().unwrap().clone();
    api.ack_ok(&m).await;
    let m = api.pop_some("res", "batch=10").await;
    api.ack_ok(&m).await;

    let o = api.ok("/api/v1/resources/overview").await;
    assert_eq!(o["queues"], 1, "{o}");
    assert_eq!(o["partitions"], 2, "{o}");
    assert_eq!(o["messages"]["total"], 3, "{o}");
    assert_eq!(o["messages"]["pending"], 3 - m.len() as u64, "{o}");
    assert_eq!(o["counters"]["pushed"], 3, "{o}");

    let groups = api.ok("/api/v1/consumer-groups").await;
    let billing = groups
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "billing")
        .unwrap_or_else(|| panic!("{groups}"))
        .clone();
    // Its first pop of the queue (of p1 only) started the group on every partition of it
    // (issue 16: a subscription is per group and queue), so p2's unread message is lag too.
    assert_eq!(billing["totalLag"], 2, "{billing}");
    assert_eq!(billing["partitions"].as_array().unwrap().len(), 2, "{billing}");
    let g = api.ok("/api/v1/consumer-groups/billing").await;
    assert_eq!(g, billing);
    // The depth as billing sees it: one of p1 settled, p2 untouched; a group that never
    // read the queue owes all of it; a bad query is a 400.
    let d = api.ok("/api/v1/resources/queues/res/depth?group=billing").await;
    assert_eq!((&d["group"], &d["pending"], &d["partitionsPending"]), (&json!("billing"), &json!(2), &json!(2)), "{d}");
    let d = api.ok("/api/v1/resources/queues/res/depth?group=nobody").await;
    assert_eq!(d["pending"], 3, "{d}");
    let (st, _) = api.get("/api/v1/resources/queues/res/depth?group=a&group=b").await;
    assert_eq!(st, 400);
    let p = &g["partitions"][0];
    assert_eq!((p["queue"].as_str(), p["partition"].as_str()), (Some("res"), Some("p1")), "{g}");
    assert_eq!((p["offset"].as_u64(), p["end"].as_u64(), p["lag"].as_u64()), (Some(1), Some(2), Some(1)), "{g}");

    // A message by partition id and transaction id.
    let pid = m[0]["partitionId"].as_str().unwrap();
    let tx = m[0]["transactionId"].as_str().unwrap();
    let msg = api.ok(&format!("/api/v1/messages/{pid}/{tx}")).await;
    assert_eq!(msg["data"], m[0]["data"], "{msg}");
    assert_eq!(msg["queue"], "res");
    // Each group's state of it (Queen's `consumerGroups`): queue mode acked it.
    let qm = msg["consumerGroups"].as_array().unwrap().iter().find(|g| g["name"] == "__QUEUE_MODE__").cloned();
    let qm = qm.unwrap_or_else(|| panic!("{msg}"));
    assert_eq!((&qm["consumed"], &qm["leased"], &qm["leaseExpiresAt"]), (&json!(true), &json!(false), &json!(null)));

    // Deleting the group forgets it.
    let r = api.c.delete(api.s.url("/api/v1/consumer-groups/billing")).send().await.unwrap();
    let (st, v) = read(r).await;
    assert_eq!((st, &v["success"]), (200, &json!(true)), "{v}");
    let (st, _) = api.get("/api/v1/consumer-groups/billing").await;
    assert_eq!(st, 404);
}

#[tokio::test]
async fn delete_queue_removes_it_and_its_messages() {
    let api = Api::start();
    api.push_n("gone", "Default", "g", 0..3).await;
    let leased = api.pop_some("gone", "batch=1").await;
    let r = api.c.delete(api.s.url("/api/v1/resources/queues/gone")).send().await.unwrap();
    let (st, v) = read(r).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["deleted"], true, "{v}");
    let (st, v) = api.get("/api/v1/resources/queues/gone").await;
    assert_eq!(st, 404, "{v}");
    api.pop_none("gone", "batch=10").await;
    // The lease died with the queue.
    let r = api.ack(&leased[0], "completed", None).await;
    assert_eq!(r["success"], false, "{r}");
    let r = api.c.delete(api.s.url("/api/v1/resources/queues/gone")).send().await.unwrap();
    let (st, v) = read(r).await;
    assert_eq!((st, &v["deleted"]), (200, &json!(false)), "{v}");
    // A queue of the same name starts empty.
    api.push_n("gone", "Default", "new", 0..1).await;
    let m = api.pop_some("gone", "batch=10").await;
    assert_eq!(txids(&m), ["new-0"]);
    assert_eq!(m[0]["offset"], 0);
}

#[tokio::test]
async fn consumer_group_seek_to_start_redelivers() {
    let api = Api::start();
    api.push_n("seek", "Default", "s", 0..3).await;
    let m = api.pop_some("seek", "batch=10&consumerGroup=g").await;
    api.ack_ok(&m).await;
    api.pop_none("seek", "batch=10&consumerGroup=g").await;
    let (st, v) = api.post("/api/v1/consumer-groups/g/queues/seek/seek", json!({})).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(v["partitions"], 1, "{v}");
    let again = api.pop_some("seek", "batch=10&consumerGroup=g").await;
    assert_eq!(ns(&again), [0, 1, 2]);
    assert_eq!(again[0]["deliveryAttempt"], 1);
    // Seeking drops the live lease; the old lease's acks are refused.
    let (st, v) = api.post("/api/v1/consumer-groups/g/queues/seek/seek", json!({"toEnd": true})).await;
    assert_eq!(st, 200, "{v}");
    let r = api.ack(&again[0], "completed", None).await;
    assert_eq!(r["success"], false, "{r}");
    api.pop_none("seek", "batch=10&consumerGroup=g").await;
    api.push_n("seek", "Default", "s", 3..4).await;
    assert_eq!(ns(&api.pop_some("seek", "batch=10&consumerGroup=g").await), [3]);
    // Queue mode was never touched by the group's seeks.
    assert_eq!(ns(&api.pop_some("seek", "batch=10").await), [0, 1, 2, 3]);
    let (st, v) = api.post("/api/v1/consumer-groups/g/queues/nope/seek", json!({})).await;
    assert_eq!(st, 404, "{v}");
    assert_eq!(v["code"], "queue_not_found", "{v}");
}
