//! `storage partitions`: create P partitions of one queue with one push and
//! one pop + ack each, then run a steady paced load across all of them (each
//! cycle: push one message to a partition, pop it from that partition, ack
//! it) for D seconds; run the same on `--baseline-partitions` (200) in a
//! server of its own first, and compare. Issue 18's targets: with 100,000
//! partitions no error, push and pop p99 ≤ 2× the 200-partition run, ≤ 4 KB
//! of RSS per idle partition.
//!
//! Owns the creation and the steady load. Must never hide an error (a server
//! out of file descriptors fails requests: they are counted and reported, and
//! the run exits non-zero) and never wait without bound: a phase stops after
//! `--max-errors` errors, every request has the client's timeout.

use super::{exe_name, mb, ms, verdict, Common, Node, Report};
use crate::hist::Latency;
use crate::workload::{payload, run_prefix};
use baton_client::{Ack, Client, PushItem};
use clap::Args;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const TARGET_P99_RATIO: f64 = 2.0;
pub const TARGET_RSS_PER_PARTITION: f64 = 4096.0;

#[derive(Args, Debug, Clone)]
pub struct PartitionsArgs {
    #[command(flatten)]
    pub common: Common,
    /// Partitions to create (the target: 100,000).
    #[arg(long, default_value_t = 2_000)]
    pub partitions: u32,
    /// Partitions of the comparison run.
    #[arg(long, default_value_t = 200)]
    pub baseline_partitions: u32,
    /// Seconds of steady load (each run).
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Steady load: cycles (push + pop + ack of one message) per second over all workers.
    #[arg(long, default_value_t = 500)]
    pub rate: u64,
    /// Concurrent workers, one connection each; worker w owns partitions w, w+W, ...
    #[arg(long, default_value_t = 16)]
    pub workers: usize,
    /// Payload bytes per message.
    #[arg(long, default_value_t = 256)]
    pub size: usize,
    /// A phase (creation, steady load) stops after this many errors.
    #[arg(long, default_value_t = 100)]
    pub max_errors: u64,
}

#[derive(Default)]
struct Errs {
    count: AtomicU64,
    first: Mutex<Option<String>>,
}

impl Errs {
    fn note(&self, e: String) {
        if self.count.fetch_add(1, Ordering::Relaxed) == 0 {
            *self.first.lock().expect("lock") = Some(e);
        }
    }
    fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
    fn first(&self) -> Option<String> {
        self.first.lock().expect("lock").clone()
    }
}

#[derive(Default)]
struct Lats {
    push: Latency,
    pop: Latency,
    ack: Latency,
    cycles: u64,
    behind: u64,
}

impl Lats {
    fn merge(&mut self, o: &Lats) {
        self.push.merge(&o.push);
        self.pop.merge(&o.pop);
        self.ack.merge(&o.ack);
        self.cycles += o.cycles;
        self.behind += o.behind;
    }
}

/// One cycle on partition `k`: push one message, pop it from that partition, ack it.
async fn cycle(
    c: &Client,
    queue: &str,
    k: u32,
    txid: &str,
    body: &serde_json::Value,
    l: &mut Lats,
) -> Result<(), String> {
    let part = format!("p{k}");
    let t0 = Instant::now();
    let r =
        c.push(&[PushItem::new(queue, &part, txid, body.clone())]).await.map_err(|e| format!("push {part}: {e}"))?;
    if r[0].status != "queued" {
        return Err(format!("push {part}: {} {}", r[0].status, r[0].error.clone().unwrap_or_default()));
    }
    let t1 = Instant::now();
    l.push.record(t1 - t0);
    let popped = c.pop(queue, Some(&part), 1, None).await.map_err(|e| format!("pop {part}: {e}"))?;
    let t2 = Instant::now();
    l.pop.record(t2 - t1);
    let p = popped.ok_or_else(|| format!("pop {part}: nothing, right after a push to it was queued"))?;
    let acks: Vec<Ack> =
        p.messages.iter().map(|m| Ack::completed(m, m.lease_id.as_deref().or(p.lease_id.as_deref()))).collect();
    let res = c.ack_batch(&acks).await.map_err(|e| format!("ack {part}: {e}"))?;
    l.ack.record(t2.elapsed());
    if let Some(bad) = res.iter().find(|r| !r.success) {
        return Err(format!("ack {part}: {}", bad.error.clone().unwrap_or_default()));
    }
    l.cycles += 1;
    Ok(())
}

/// `workers` tasks; worker w runs cycles on partitions w, w+W, ... : once each
/// (`paced` None), or cycling through them, cycle g due at g / rate s, until `secs`.
async fn drive(
    c: &Client,
    queue: &str,
    parts: u32,
    workers: usize,
    paced: Option<(u64, Duration)>,
    size: usize,
    max_errors: u64,
) -> (Lats, Arc<Errs>, f64) {
    let errs = Arc::new(Errs::default());
    let body = serde_json::Value::String(String::from_utf8_lossy(&payload(size)).into_owned());
    let prefix: Arc<str> = run_prefix().into();
    let start = Instant::now() + Duration::from_millis(20);
    let mut tasks = Vec::new();
    let w_n = workers.min(parts as usize).max(1) as u64;
    for w in 0..w_n {
        let (c, queue, errs, body, prefix) = (c.clone(), queue.to_string(), errs.clone(), body.clone(), prefix.clone());
        tasks.push(tokio::spawn(async move {
            let mut l = Lats::default();
            let mine: Vec<u32> = (w as u32..parts).step_by(w_n as usize).collect();
            let mut i = 0u64;
            loop {
                let k = match paced {
                    None if i as usize >= mine.len() => break,
                    None => mine[i as usize],
                    Some((rate, secs)) => {
                        let due = start + Duration::from_secs_f64((i * w_n + w) as f64 / rate as f64);
                        if due >= start + secs {
                            break;
                        }
                        tokio::time::sleep_until(due.into()).await;
                        if Instant::now() > due + Duration::from_millis(1) {
                            l.behind += 1;
                        }
                        mine[i as usize % mine.len()]
                    }
                };
                if errs.count() >= max_errors {
                    break;
                }
                let txid = format!("{prefix}-{w}-{i}");
                if let Err(e) = cycle(&c, &queue, k, &txid, &body, &mut l).await {
                    errs.note(e);
                }
                i += 1;
            }
            l
        }));
    }
    let mut all = Lats::default();
    for t in tasks {
        match t.await {
            Ok(l) => all.merge(&l),
            Err(e) => errs.note(format!("worker panicked: {e}")),
        }
    }
    (all, errs, start.elapsed().as_secs_f64())
}

/// What one server with P partitions measured.
struct One {
    parts: u32,
    rss_before: u64,
    rss_created: u64,
    rss_after: u64,
    create_secs: f64,
    create_errors: u64,
    steady: Lats,
    steady_secs: f64,
    steady_errors: u64,
    first_error: Option<String>,
    died: Option<String>,
    /// SIGTERM to exit (the shutdown checkpoint syncs every partition file).
    stop_secs: Option<f64>,
    /// The server's checkpoint figures at the end of the steady load (from /metrics).
    server: serde_json::Value,
}

impl One {
    fn per_partition(&self) -> f64 {
        (self.rss_created as f64 - self.rss_before as f64) / self.parts as f64
    }
    fn json(&self) -> serde_json::Value {
        json!({
            "partitions": self.parts,
            "rss_before_bytes": self.rss_before, "rss_created_bytes": self.rss_created,
            "rss_after_bytes": self.rss_after, "rss_per_partition_bytes": self.per_partition(),
            "create_secs": self.create_secs, "create_errors": self.create_errors,
            "steady_secs": self.steady_secs, "steady_errors": self.steady_errors, "cycles": self.steady.cycles,
            "behind": self.steady.behind,
            "push": self.steady.push.summary(), "pop": self.steady.pop.summary(), "ack": self.steady.ack.summary(),
            "first_error": self.first_error, "died": self.died, "stop_secs": self.stop_secs,
            "server": self.server,
        })
    }
}

async fn one(a: &PartitionsArgs, parts: u32) -> Result<One, String> {
    let c = &a.common;
    let mut node = Node::start(c, None, &[]).await?;
    node.client
        .configure(&c.queue, json!({"leaseTime": 60, "retryLimit": 3}))
        .await
        .map_err(|e| format!("configure: {e}"))?;
    let client = crate::baton::BatonHttp::client(&node.s.url, a.workers.max(8))?;
    let rss_before = node.rss()?;
    let t0 = Instant::now();
    let (_, cerr, _) = drive(&client, &c.queue, parts, a.workers, None, a.size, a.max_errors).await;
    let create_secs = t0.elapsed().as_secs_f64();
    let rss_created = node.rss().unwrap_or(0);
    if !c.no_progress {
        eprintln!(
            "partitions {parts}: created in {create_secs:.1} s, {} errors, RSS {} → {} MB",
            cerr.count(),
            mb(rss_before as f64),
            mb(rss_created as f64)
        );
    }
    let secs = Duration::from_secs_f64(a.duration);
    let (steady, serr, steady_secs) =
        drive(&client, &c.queue, parts, a.workers, Some((a.rate, secs)), a.size, a.max_errors).await;
    let rss_after = node.rss().unwrap_or(0);
    let server = server_figures(&node).await;
    let died = node.s.check_alive().err().map(|e| e.0);
    let stop_secs = if died.is_none() { Some(node.stop()?.as_secs_f64()) } else { None };
    if !c.no_progress {
        eprintln!(
            "partitions {parts}: steady load {steady_secs:.1} s, {} cycles, {} errors; stopped in {} s",
            steady.cycles,
            serr.count(),
            stop_secs.map_or("-".into(), |s| format!("{s:.1}"))
        );
    }
    Ok(One {
        parts,
        rss_before,
        rss_created,
        rss_after,
        create_secs,
        create_errors: cerr.count(),
        steady,
        steady_secs,
        steady_errors: serr.count(),
        first_error: cerr.first().or_else(|| serr.first()),
        died,
        stop_secs,
        server,
    })
}

/// What the server says of its checkpoints: how many, how many synced the filesystem at
/// once, and the planner's longest pause for one (D31). Null where /metrics did not answer.
async fn server_figures(node: &Node) -> serde_json::Value {
    let Ok(text) = node.client.metrics().await else { return serde_json::Value::Null };
    let get =
        |name: &str| text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse::<f64>().ok());
    json!({
        "checkpoints": get("baton_checkpoints_total"),
        "checkpoint_syncfs": get("baton_checkpoint_syncfs_total"),
        "checkpoint_pause_max_secs": get("baton_checkpoint_pause_max_seconds"),
        "partition_file_opens": get("baton_partition_file_opens_total"),
    })
}

pub async fn run(a: &PartitionsArgs) -> Result<Report, String> {
    if a.partitions == 0 || a.baseline_partitions == 0 || a.workers == 0 || a.rate == 0 || a.size == 0 {
        return Err("--partitions, --baseline-partitions, --workers, --rate and --size must be positive".into());
    }
    if !(a.duration > 0.0 && a.duration <= 86_400.0) {
        return Err("--duration must be in (0, 86400] seconds".into());
    }
    // The small run first, each on a server of its own, never both at once.
    let base = one(a, a.baseline_partitions).await?;
    let big = one(a, a.partitions).await?;
    Ok(report(a, &base, &big))
}

fn report(a: &PartitionsArgs, base: &One, big: &One) -> Report {
    let mut t = format!(
        "storage partitions: {} vs {} partitions, steady {} cycles/s (push + pop + ack) for {} s, {} workers, {}\n\n",
        big.parts,
        base.parts,
        a.rate,
        a.duration,
        a.workers,
        exe_name(&a.common)
    );
    let row = |o: &One| {
        let s = &o.steady;
        vec![
            o.parts.to_string(),
            format!("{:.1}", o.create_secs),
            format!("{} + {}", o.create_errors, o.steady_errors),
            format!("{:.0}", s.cycles as f64 / o.steady_secs.max(1e-9)),
            ms(s.push.percentile_us(50.0)),
            ms(s.push.percentile_us(99.0)),
            ms(s.pop.percentile_us(50.0)),
            ms(s.pop.percentile_us(99.0)),
            ms(s.ack.percentile_us(99.0)),
            mb(o.rss_before as f64),
            mb(o.rss_created as f64),
            format!("{:.0}", o.per_partition()),
        ]
    };
    t += &super::table(
        &[
            "partitions",
            "create s",
            "errors (create + steady)",
            "cycles/s",
            "push p50 ms",
            "push p99 ms",
            "pop p50 ms",
            "pop p99 ms",
            "ack p99 ms",
            "RSS before MB",
            "RSS created MB",
            "RSS B/partition",
        ],
        &[row(base), row(big)],
    );
    // No ratio from a run with no successful cycle: a p99 of nothing is not fast.
    let ratio = |f: fn(&Lats) -> &Latency| {
        let (b, r) = (f(&base.steady), f(&big.steady));
        (b.count() > 0 && r.count() > 0).then(|| r.percentile_us(99.0) as f64 / b.percentile_us(99.0).max(1) as f64)
    };
    let (push_ratio, pop_ratio) = (ratio(|l| &l.push), ratio(|l| &l.pop));
    let ratio_met = match (push_ratio, pop_ratio) {
        (Some(a), Some(b)) => Some(a <= TARGET_P99_RATIO && b <= TARGET_P99_RATIO),
        _ => None,
    };
    let errors = big.create_errors + big.steady_errors + base.create_errors + base.steady_errors;
    let per = big.per_partition();
    let show = |r: Option<f64>| r.map_or("-".into(), |r| format!("{r:.2}"));
    t += &format!(
        "\np99 ratio {} / {}: push {}, pop {}: {} (≤ {TARGET_P99_RATIO}×)\n",
        big.parts,
        base.parts,
        show(push_ratio),
        show(pop_ratio),
        ratio_met.map_or("not measured (a run had no successful cycle)", verdict)
    );
    t += &format!(
        "RSS per idle partition: {per:.0} B: {} (≤ 4 KB); errors: {errors}: {} (none)\n",
        verdict(per <= TARGET_RSS_PER_PARTITION),
        verdict(errors == 0)
    );
    for o in [base, big] {
        let f = |k: &str| o.server[k].as_f64();
        if let (Some(n), Some(fs), Some(pause)) =
            (f("checkpoints"), f("checkpoint_syncfs"), f("checkpoint_pause_max_secs"))
        {
            t += &format!(
                "{} partitions: {n} checkpoints ({fs} by syncfs), longest planner pause for one {:.1} ms\n",
                o.parts,
                pause * 1e3
            );
        }
    }
    if let Some(e) = big.first_error.as_ref().or(base.first_error.as_ref()) {
        t += &format!("first error: {e}\n");
    }
    let mut problems = Vec::new();
    if errors > 0 {
        problems.push(format!("{errors} requests failed"));
    }
    for o in [base, big] {
        if let Some(d) = &o.died {
            problems.push(format!("the server with {} partitions died: {d}", o.parts));
        }
    }
    let json = json!({
        "scenario": "partitions",
        "exe": exe_name(&a.common),
        "rate": a.rate, "duration_secs": a.duration, "workers": a.workers, "size": a.size,
        "baseline": base.json(), "run": big.json(),
        "p99_ratio": {"push": push_ratio, "pop": pop_ratio},
        "errors": errors,
        "target": {"p99_ratio_max": TARGET_P99_RATIO, "rss_per_partition_max": TARGET_RSS_PER_PARTITION,
                   "ratio_met": ratio_met,
                   "rss_met": per <= TARGET_RSS_PER_PARTITION, "errors_met": errors == 0},
    });
    Report {
        table: t,
        json,
        failure: (!problems.is_empty()).then(|| format!("storage partitions: {}", problems.join("; "))),
    }
}
