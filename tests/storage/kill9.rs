//! The acceptance test of crash safety: under concurrent push and ack load,
//! kill the server with SIGKILL several times and restart it. Afterwards:
//!
//! 1. every push that got an answer (`queued` or `duplicate`) is in the log
//!    exactly once; a push whose answer never came is there at most once; no
//!    transaction id is there twice;
//! 2. no message whose ack was answered `success: true` is delivered again
//!    (a delivery counts against an ack only if it was received strictly after
//!    the ack's answer was received);
//! 3. every acknowledged push was delivered at least once (nothing lost).
//!
//! Pushers retry the same items with the same transaction ids after a
//! connection error or a 5xx (dedup makes that safe). The seed is printed;
//! set `BATON_KILL9_SEED` to replay a schedule.

use crate::common;

use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const QUEUE: &str = "k9";
const PARTITIONS: u64 = 4;
const PUSHERS: u64 = 8;
const CONSUMERS: u64 = 4;
const KILLS: usize = 5;
/// Short, so leases orphaned by a crash expire quickly and their messages come back.
const LEASE_SECS: u64 = 2;
/// Attempts per push request (about 100 ms apart) before its items are left in doubt.
const PUSH_ATTEMPTS: u32 = 150;
/// The drain ends after this long without a delivery (must exceed the lease time).
const QUIET: Duration = Duration::from_millis(3500);
const DRAIN_LIMIT: Duration = Duration::from_secs(30);

/// xorshift64*: enough randomness for schedules, no extra crates.
#[derive(Clone)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
}

#[derive(Default)]
struct PushOutcome {
    /// Items whose push answer said queued or duplicate.
    acknowledged: Vec<String>,
    /// Items whose push answer never came (retries exhausted).
    in_doubt: Vec<String>,
    /// Items answered `failed` (never expected here).
    failed: Vec<(String, Value)>,
    requests: u64,
    retries: u64,
    duplicates: u64,
}

#[derive(Debug, Clone)]
struct Delivery {
    txid: String,
    partition_id: String,
    lease: String,
    offset: u64,
    attempt: u64,
    consumer: u64,
    sent: Instant,
    recv: Instant,
}

#[derive(Default)]
struct ConsumeOutcome {
    deliveries: Vec<Delivery>,
    /// (txid, lease, time the success answer was received).
    acks: Vec<(String, String, Instant)>,
    ack_refused: u64,
    ack_lost: u64,
    pop_errors: u64,
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .connect_timeout(Duration::from_secs(1))
        .pool_idle_timeout(Duration::from_secs(2))
        .build()
        .expect("http client")
}

async fn pusher(id: u64, base: String, seed: u64, stop: Arc<AtomicBool>) -> PushOutcome {
    let c = http();
    let mut rng = Rng::new(seed);
    let mut out = PushOutcome::default();
    let mut seq = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let n = rng.between(1, 5);
        let mut txids = Vec::new();
        let mut items = Vec::new();
        for _ in 0..n {
            let txid = format!("k9-{id}-{seq}");
            let part = format!("p{}", rng.below(PARTITIONS));
            items.push(json!({
                "queue": QUEUE, "partition": part, "transactionId": txid,
                "payload": {"w": id, "s": seq, "pad": "0123456789abcdef0123456789abcdef"},
            }));
            txids.push(txid);
            seq += 1;
        }
        // A short pause keeps the backlog (and so the drain) bounded on a small machine.
        tokio::time::sleep(Duration::from_millis(rng.between(0, 3))).await;
        let body = json!({ "items": items });
        out.requests += 1;
        let mut answer = None;
        for attempt in 0..PUSH_ATTEMPTS {
            if attempt > 0 {
                out.retries += 1;
                tokio::time::sleep(Duration::from_millis(rng.between(50, 150))).await;
            }
            let r = match c.post(format!("{base}/api/v1/push")).json(&body).send().await {
                Ok(r) => r,
                Err(_) => continue,
            };
            let st = r.status();
            if st.is_server_error() || st.as_u16() == 429 {
                continue;
            }
            assert_eq!(st.as_u16(), 201, "push answered {st}: {:?}", r.text().await);
            match r.json::<Value>().await {
                Ok(v) => {
                    answer = Some(v);
                    break;
                }
                Err(_) => continue, // the connection died mid-body: no answer
            }
        }
        let Some(v) = answer else {
            out.in_doubt.extend(txids);
            continue;
        };
        let arr = v.as_array().unwrap_or_else(|| panic!("push answer is not an array: {v}"));
        assert_eq!(arr.len(), txids.len(), "one status per item: {v}");
        for (t, r) in txids.into_iter().zip(arr) {
            assert_eq!(r["transactionId"], json!(t), "statuses come back in item order: {v}");
            match r["status"].as_str() {
                Some("queued") => out.acknowledged.push(t),
                Some("duplicate") => {
                    out.duplicates += 1;
                    out.acknowledged.push(t)
                }
                _ => out.failed.push((t, r.clone())),
            }
        }
    }
    out
}

async fn consumer(id: u64, base: String, stop: Arc<AtomicBool>, t0: Instant, last: Arc<AtomicU64>) -> ConsumeOutcome {
    let c = http();
    let mut out = ConsumeOutcome::default();
    let pop_url = format!("{base}/api/v1/pop/queue/{QUEUE}?batch=10&wait=true&timeout=500");
    while !stop.load(Ordering::Relaxed) {
        let sent = Instant::now();
        let r = match c.get(&pop_url).send().await {
            Ok(r) => r,
            Err(_) => {
                out.pop_errors += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        match r.status().as_u16() {
            200 => {}
            204 => continue,
            s if s >= 500 => {
                out.pop_errors += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            s => panic!("pop answered {s}: {:?}", r.text().await),
        }
        let v: Value = match r.json().await {
            Ok(v) => v,
            Err(_) => {
                out.pop_errors += 1;
                continue;
            }
        };
        let recv = Instant::now();
        last.fetch_max(recv.duration_since(t0).as_millis() as u64, Ordering::Relaxed);
        let msgs = v["messages"].as_array().cloned().unwrap_or_default();
        assert!(!msgs.is_empty(), "a 200 pop holds messages: {v}");
        let mut acks = Vec::new();
        for m in &msgs {
            let d = Delivery {
                txid: m["transactionId"].as_str().expect("transactionId").to_string(),
                partition_id: m["partitionId"].as_str().expect("partitionId").to_string(),
                lease: m["leaseId"].as_str().expect("leaseId").to_string(),
                offset: m["offset"].as_u64().expect("offset"),
                attempt: m["deliveryAttempt"].as_u64().unwrap_or(0),
                consumer: id,
                sent,
                recv,
            };
            acks.push(json!({
                "transactionId": d.txid, "partitionId": d.partition_id,
                "leaseId": d.lease, "status": "completed",
            }));
            out.deliveries.push(d);
        }
        let body = json!({ "consumerGroup": null, "acknowledgments": acks });
        let r = match c.post(format!("{base}/api/v1/ack/batch")).json(&body).send().await {
            Ok(r) => r,
            Err(_) => {
                out.ack_lost += msgs.len() as u64;
                continue;
            }
        };
        if r.status().is_server_error() {
            out.ack_lost += msgs.len() as u64;
            continue;
        }
        assert!(r.status().is_success(), "ack answered {}: {:?}", r.status(), r.text().await);
        let Ok(res) = r.json::<Value>().await else {
            out.ack_lost += msgs.len() as u64;
            continue;
        };
        let at = Instant::now();
        let res = res.as_array().unwrap_or_else(|| panic!("ack answer is not an array: {res}"));
        assert_eq!(res.len(), msgs.len(), "one result per ack");
        for (m, a) in msgs.iter().zip(res) {
            let txid = m["transactionId"].as_str().unwrap().to_string();
            if a["success"] == json!(true) {
                out.acks.push((txid, m["leaseId"].as_str().unwrap().to_string(), at));
            } else {
                out.ack_refused += 1;
            }
        }
    }
    out
}

/// Every record of one partition, paged through with fetch: (offset, txid, payload).
async fn read_partition(c: &reqwest::Client, base: &str, partition: &str) -> Vec<(u64, String, Value)> {
    let mut out = Vec::new();
    let mut offset = 0u64;
    for _ in 0..100_000 {
        let body =
            json!({"entries": [{"queue": QUEUE, "partition": partition, "offset": offset, "maxBytes": 1 << 20}]});
        let v: Value = c
            .post(format!("{base}/api/v1/fetch"))
            .json(&body)
            .send()
            .await
            .expect("fetch")
            .json()
            .await
            .expect("fetch json");
        let e = &v["entries"][0];
        assert!(e["error"].is_null(), "fetch {partition}@{offset}: {e}");
        let hw = e["highWatermark"].as_u64().expect("highWatermark");
        if offset >= hw {
            return out;
        }
        let recs = e["records"].as_array().expect("records");
        assert!(!recs.is_empty(), "fetch {partition}@{offset} below hw {hw} returned nothing");
        for r in recs {
            let o = r["offset"].as_u64().expect("offset");
            assert_eq!(o, offset, "offsets of {partition} are dense");
            out.push((o, r["transactionId"].as_str().expect("txid").to_string(), r["payload"].clone()));
            offset = o + 1;
        }
    }
    panic!("fetch of {partition} did not reach its high watermark");
}

/// Print at most a few lines of a failure class and remember that it failed.
fn report(errors: &mut Vec<String>, what: &str, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    let mut s = format!("{what}: {} case(s)", lines.len());
    for l in lines.iter().take(15) {
        s.push_str("\n    ");
        s.push_str(l);
    }
    errors.push(s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill9_under_push_and_ack_load_loses_nothing_and_redelivers_no_acked_message() {
    let seed = std::env::var("BATON_KILL9_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
    });
    println!("kill9 seed: {seed} (BATON_KILL9_SEED={seed} replays this schedule)");
    let mut rng = Rng::new(seed);
    let t0 = Instant::now();

    // Small WAL segments and 1 s checkpoints, so kills also land during
    // segment rotation, checkpoints, and the retirement of old segments into
    // the recycling pool and their reuse as zero-filled spares (D20).
    let mut server = common::Server::start_with(&["--checkpoint-interval-secs", "1", "--wal-segment-mb", "1"]);
    let base = server.url("");
    let c = http();
    let r: Value = c
        .post(server.url("/api/v1/configure"))
        .json(&json!({"queue": QUEUE, "options": {
            "leaseTime": LEASE_SECS, "retryLimit": 1_000_000, "dlqAfterMaxRetries": false,
            "dedupWindowSeconds": 3600}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["configured"], true, "{r}");

    let stop_push = Arc::new(AtomicBool::new(false));
    let stop_consume = Arc::new(AtomicBool::new(false));
    let last_delivery = Arc::new(AtomicU64::new(0));
    let pushers: Vec<_> =
        (0..PUSHERS).map(|i| tokio::spawn(pusher(i, base.clone(), rng.next(), stop_push.clone()))).collect();
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|i| tokio::spawn(consumer(i, base.clone(), stop_consume.clone(), t0, last_delivery.clone())))
        .collect();

    // The controller: SIGKILL at randomized moments, restart on the same port and data.
    let mut kills = 0;
    for _ in 0..KILLS {
        tokio::time::sleep(Duration::from_millis(rng.between(1500, 3000))).await;
        let gap = Duration::from_millis(rng.between(0, 300));
        tokio::task::block_in_place(|| {
            server.kill9();
            std::thread::sleep(gap);
            server.restart();
        });
        kills += 1;
        println!("kill {kills} at {:.2}s (down {gap:?})", t0.elapsed().as_secs_f64());
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let load_secs = t0.elapsed().as_secs_f64();

    stop_push.store(true, Ordering::Relaxed);
    let mut pushed = PushOutcome::default();
    for h in pushers {
        let o = h.await.expect("pusher task");
        pushed.acknowledged.extend(o.acknowledged);
        pushed.in_doubt.extend(o.in_doubt);
        pushed.failed.extend(o.failed);
        pushed.requests += o.requests;
        pushed.retries += o.retries;
        pushed.duplicates += o.duplicates;
    }

    // Drain: consume (and ack) until nothing has been delivered for a while.
    let drain_start = Instant::now();
    loop {
        let last = t0 + Duration::from_millis(last_delivery.load(Ordering::Relaxed));
        let quiet_since = last.max(drain_start);
        if quiet_since.elapsed() >= QUIET || drain_start.elapsed() >= DRAIN_LIMIT {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop_consume.store(true, Ordering::Relaxed);
    let mut consumed = ConsumeOutcome::default();
    for h in consumers {
        let o = h.await.expect("consumer task");
        consumed.deliveries.extend(o.deliveries);
        consumed.acks.extend(o.acks);
        consumed.ack_refused += o.ack_refused;
        consumed.ack_lost += o.ack_lost;
        consumed.pop_errors += o.pop_errors;
    }
    let drain_secs = drain_start.elapsed().as_secs_f64();

    // Read the whole log of every partition.
    let mut in_log: HashMap<String, Vec<(String, u64)>> = HashMap::new();
    let mut log_records = 0usize;
    let mut bad_payload = Vec::new();
    for p in 0..PARTITIONS {
        let name = format!("p{p}");
        for (o, txid, payload) in read_partition(&c, &base, &name).await {
            log_records += 1;
            let want = txid
                .strip_prefix("k9-")
                .and_then(|s| s.split_once('-'))
                .and_then(|(w, s)| Some((w.parse::<u64>().ok()?, s.parse::<u64>().ok()?)));
            if want.is_none_or(|(w, s)| payload["w"] != json!(w) || payload["s"] != json!(s)) {
                bad_payload.push(format!("{name}@{o}: {txid} holds {payload}"));
            }
            in_log.entry(txid).or_default().push((name.clone(), o));
        }
    }
    let depth: Value = c
        .get(server.url(&format!("/api/v1/resources/queues/{QUEUE}/depth")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();

    let acknowledged: HashSet<&String> = pushed.acknowledged.iter().collect();
    let in_doubt: HashSet<&String> = pushed.in_doubt.iter().collect();
    let failed: HashSet<&String> = pushed.failed.iter().map(|(t, _)| t).collect();
    let mut delivered: HashMap<&str, Vec<&Delivery>> = HashMap::new();
    for d in &consumed.deliveries {
        delivered.entry(d.txid.as_str()).or_default().push(d);
    }
    // The first success answer per txid (a second success would itself be a bug).
    let mut acked_at: HashMap<&str, (Instant, &str)> = HashMap::new();
    let mut double_acks = Vec::new();
    for (t, lease, at) in &consumed.acks {
        if let Some((prev, prev_lease)) = acked_at.get(t.as_str()) {
            double_acks.push(format!(
                "{t}: ack succeeded under lease {prev_lease} at {:.3}s and again under {lease} at {:.3}s",
                prev.duration_since(t0).as_secs_f64(),
                at.duration_since(t0).as_secs_f64()
            ));
        }
        let e = acked_at.entry(t.as_str()).or_insert((*at, lease.as_str()));
        if *at < e.0 {
            *e = (*at, lease.as_str());
        }
    }

    let mut errors = Vec::new();
    // (1) acknowledged pushes exactly once, in-doubt at most once, nothing twice.
    let missing: Vec<String> = pushed.acknowledged.iter().filter(|t| !in_log.contains_key(*t)).cloned().collect();
    let mut twice: Vec<String> =
        in_log.iter().filter(|(_, v)| v.len() > 1).map(|(t, v)| format!("{t} at {v:?}")).collect();
    twice.sort();
    let unknown: Vec<String> = in_log
        .keys()
        .filter(|t| !acknowledged.contains(t) && !in_doubt.contains(t) && !failed.contains(t))
        .cloned()
        .collect();
    let failed_written: Vec<String> =
        pushed.failed.iter().filter(|(t, _)| in_log.contains_key(t)).map(|(t, r)| format!("{t}: {r}")).collect();
    report(&mut errors, "(1) acknowledged push missing from the log", &missing);
    report(&mut errors, "(1) transaction id stored more than once", &twice);
    report(&mut errors, "(1) record in the log that was never pushed", &unknown);
    report(&mut errors, "(1) push answered `failed` but stored", &failed_written);
    report(&mut errors, "(1) record payload does not match its transaction id", &bad_payload);

    // (2) nothing delivered after its ack's success answer was received.
    let mut redelivered_after_ack = Vec::new();
    for (t, (at, lease)) in &acked_at {
        for d in delivered.get(t).map(|v| v.as_slice()).unwrap_or(&[]) {
            if d.recv > *at {
                redelivered_after_ack.push(format!(
                    "{t} (offset {} of {}): ack under lease {lease} answered at {:.3}s; delivered again to consumer {} \
                     under lease {} (attempt {}), pop sent at {:.3}s, received at {:.3}s",
                    d.offset,
                    d.partition_id,
                    at.duration_since(t0).as_secs_f64(),
                    d.consumer,
                    d.lease,
                    d.attempt,
                    d.sent.duration_since(t0).as_secs_f64(),
                    d.recv.duration_since(t0).as_secs_f64()
                ));
            }
        }
    }
    redelivered_after_ack.sort();
    report(&mut errors, "(2) message delivered again after its ack was answered success", &redelivered_after_ack);
    report(&mut errors, "(2) ack answered success twice for one message", &double_acks);

    // (3) every acknowledged push (indeed every stored record) delivered at least once.
    let mut never_delivered: Vec<String> = in_log
        .keys()
        .filter(|t| !delivered.contains_key(t.as_str()))
        .map(|t| {
            let kind = if acknowledged.contains(t) { "acknowledged" } else { "in doubt" };
            format!("{t} ({kind}) at {:?}", in_log[t])
        })
        .collect();
    never_delivered.sort();
    let phantom: Vec<String> = delivered.keys().filter(|t| !in_log.contains_key(**t)).map(|t| t.to_string()).collect();
    let acked_not_in_log: Vec<String> =
        acked_at.keys().filter(|t| !in_log.contains_key(**t)).map(|t| t.to_string()).collect();
    report(&mut errors, "(3) stored message never delivered", &never_delivered);
    report(&mut errors, "(3) delivered message missing from the log", &phantom);
    report(&mut errors, "(3) acked message missing from the log", &acked_not_in_log);
    if depth["depth"] != json!(0) {
        errors.push(format!("after the drain the queue still holds messages: {depth}"));
    }

    // (4) counts.
    let deliveries = consumed.deliveries.len();
    let unique = delivered.len();
    let in_doubt_stored = in_doubt.iter().filter(|t| in_log.contains_key(t.as_str())).count();
    let by_attempt: BTreeMap<u64, usize> = consumed.deliveries.iter().fold(BTreeMap::new(), |mut m, d| {
        *m.entry(d.attempt).or_default() += 1;
        m
    });
    println!(
        "kill9 counts: kills={kills} load={load_secs:.1}s drain={drain_secs:.1}s total={:.1}s\n  \
         pushed (acknowledged)={} (of which answered duplicate={}) push requests={} push retries={}\n  \
         in-doubt={} (stored {in_doubt_stored}) failed={}\n  \
         log records={log_records} delivered (unique)={unique} deliveries={deliveries} redelivered={}\n  \
         acked (success answers)={} ack refused={} ack answers lost={} pop errors={}\n  \
         deliveries by attempt={by_attempt:?}",
        t0.elapsed().as_secs_f64(),
        pushed.acknowledged.len(),
        pushed.duplicates,
        pushed.requests,
        pushed.retries,
        pushed.in_doubt.len(),
        pushed.failed.len(),
        deliveries - unique,
        consumed.acks.len(),
        consumed.ack_refused,
        consumed.ack_lost,
        consumed.pop_errors,
    );
    assert!(kills == KILLS && !pushed.acknowledged.is_empty() && !consumed.acks.is_empty());
    if !errors.is_empty() {
        let log = server.log();
        let notable: Vec<&str> =
            log.lines().filter(|l| l.contains("WARN") || l.contains("ERROR") || l.contains("recovered")).collect();
        panic!(
            "crash-safety violations (seed {seed}):\n{}\nserver log (warnings, errors, recoveries):\n{}",
            errors.join("\n"),
            notable.join("\n")
        );
    }
}
