//! `baton check pipeline`: drive an exactly-once pipeline against a Baton,
//! optionally with faults, record what every client saw, read both logs back
//! at the end and judge the history ([`crate::history::check`]).
//!
//! The pipeline:
//! - feeders push ids `0..N` into `<prefix>-in`, id `n` to partition
//!   `n % P` with payload `{"id": n, "seq": n / P}` and transactionId `in-<n>`;
//!   a push whose answer is lost is retried with the same ids (dedup);
//! - workers pop up to `--batch` under a lease (`leaseTime` configured on the
//!   input queue) and commit ONE transaction per batch: ack every input with
//!   its lease + push `{"id", "seq", "out": 2n, "txn": <attempt tag>}` with
//!   transactionId `out-<n>` to the same partition name of `<prefix>-out`.
//!   An unknown outcome (503, connection lost) is recorded and the worker moves
//!   on: if it did not commit, the lease runs out and a later pop redelivers.
//!   A `duplicate` rollback drops the duplicate output and retries (what an
//!   idempotent pipeline does; the history shows whether it should have happened);
//! - readers pop + ack the output queue;
//! - faults: `--kill-broker K` SIGKILLs and restarts the spawned broker at K
//!   random points of progress; `--kill-workers` abandons batches (pop, then
//!   drop), holds some past their lease and then commits (must be refused),
//!   and cuts some commits mid-request (the client hangs up after ~1 ms).

use crate::actors::{feeder, killer, reader, sleep_ms, worker};
use crate::broker::Broker;
use crate::history::{self, Delivery, Fed, History, Rec, Txn, Verdict};
use baton_client::Client;
use clap::Args;
use hdrhistogram::Histogram;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Args, Debug, Clone)]
pub struct PipelineArgs {
    /// The Baton to check (ignored with --spawn).
    #[arg(long, default_value = "http://127.0.0.1:6632")]
    pub url: String,
    /// Start a Baton of our own (`<this executable> serve`) on a free port with a fresh data directory.
    #[arg(long)]
    pub spawn: bool,
    /// With --spawn: the baton binary to run (default: this executable).
    #[arg(long)]
    pub bin: Option<PathBuf>,
    /// Input messages (unique ids).
    #[arg(long, default_value_t = 10_000)]
    pub messages: u64,
    /// Partitions of the input (and output) queue, named "0".."P-1".
    #[arg(long, default_value_t = 4)]
    pub partitions: u32,
    /// Concurrent workers (pop, transform, commit).
    #[arg(long, default_value_t = 4)]
    pub workers: u32,
    /// Messages per pop (and so per transaction).
    #[arg(long, default_value_t = 10)]
    pub batch: u32,
    /// Concurrent readers of the output queue (pop + ack).
    #[arg(long, default_value_t = 2)]
    pub readers: u32,
    /// leaseTime of both queues, in seconds.
    #[arg(long, default_value_t = 5)]
    pub lease_time: u64,
    /// SIGKILL and restart the spawned broker this many times during the run (needs --spawn).
    #[arg(long, default_value_t = 0)]
    pub kill_broker: u32,
    /// Kill workers mid-transaction: abandon popped batches, hold some past their lease then commit, cut some commits mid-request.
    #[arg(long)]
    pub kill_workers: bool,
    /// With --kill-workers: the chance that a popped batch meets one of those fates.
    #[arg(long, default_value_t = 0.03)]
    pub fault_rate: f64,
    /// Stop processing after this many seconds and judge what is there.
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
    /// Seed of the fault schedule (default: from the clock); printed so a run can be repeated.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Queue names are <prefix>-in and <prefix>-out (default: check-<seed as hex>).
    #[arg(long)]
    pub queue_prefix: Option<String>,
    /// Items per feeder push request.
    #[arg(long, default_value_t = 100)]
    pub feed_batch: u32,
    /// No progress lines on stderr.
    #[arg(long)]
    pub quiet: bool,
}

/// What a run measured and concluded (for the CLI and for the bench).
#[derive(Debug, Clone)]
pub struct PipelineReport {
    pub verdict: Verdict,
    /// From the first push until every fed id had reached a reader (or the timeout).
    pub elapsed: Duration,
    pub finished: bool,
    pub committed_txns: u64,
    pub committed_msgs: u64,
    pub txns_per_sec: f64,
    pub msgs_per_sec: f64,
    pub commit_p50_us: u64,
    pub commit_p99_us: u64,
    pub commit_max_us: u64,
    pub broker_kills: u32,
    pub abandoned: u64,
    pub held_past_lease: u64,
    pub cut: u64,
    /// With --spawn and a violation: the broker's data directory and log, kept.
    pub kept_dir: Option<PathBuf>,
    /// Everything printed.
    pub text: String,
}

/// xorshift64*: a small seeded generator, so a fault schedule can be repeated.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [0, 1).
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    None,
    /// Pop, then drop the batch: the lease runs out and the batch is redelivered.
    Abandon,
    /// Hold the batch past its lease, then commit: must be rolled back (I4).
    HoldPastLease,
    /// Hang up ~1 ms into the commit request.
    Cut,
}

pub(crate) struct Recorded {
    pub(crate) fed: Vec<Fed>,
    pub(crate) maybe_fed: Vec<u64>,
    pub(crate) txns: Vec<Txn>,
    pub(crate) deliveries: Vec<Delivery>,
    pub(crate) reader_seen: Vec<u64>,
    pub(crate) latency: Histogram<u64>,
    /// Fatal problems: the run cannot be judged.
    pub(crate) fatal: Vec<String>,
    /// Noteworthy but not fatal (refusals, odd answers), first few.
    pub(crate) notes: Vec<String>,
    pub(crate) kill_log: Vec<String>,
}

pub(crate) struct Shared {
    pub(crate) client: Client,
    pub(crate) a: PipelineArgs,
    pub(crate) qin: String,
    pub(crate) qout: String,
    pub(crate) seed: u64,
    pub(crate) t0: Instant,
    pub(crate) deadline: Instant,
    pub(crate) stop_work: AtomicBool,
    pub(crate) stop_read: AtomicBool,
    /// Broker incarnation: bumped just before each SIGKILL.
    pub(crate) epoch: AtomicU64,
    pub(crate) kills_done: AtomicU32,
    pub(crate) committed_inputs: AtomicU64,
    pub(crate) feeders_done: AtomicU32,
    pub(crate) forced: [AtomicBool; 3],
    pub(crate) abandoned: AtomicU64,
    pub(crate) held: AtomicU64,
    pub(crate) cut: AtomicU64,
    pub(crate) seen: Mutex<HashSet<u64>>,
    pub(crate) rec: Mutex<Recorded>,
}

impl Shared {
    pub(crate) fn now_us(&self) -> u64 {
        self.t0.elapsed().as_micros() as u64
    }
    pub(crate) fn rec(&self) -> std::sync::MutexGuard<'_, Recorded> {
        self.rec.lock().unwrap_or_else(|e| e.into_inner())
    }
    pub(crate) fn note(&self, m: String) {
        let mut r = self.rec();
        if r.notes.len() < 20 {
            r.notes.push(m);
        }
    }
    /// Fraction of the inputs known done: committed as answered, or read from the output.
    pub(crate) fn progress(&self) -> f64 {
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner()).len() as u64;
        self.committed_inputs.load(SeqCst).max(seen) as f64 / self.a.messages.max(1) as f64
    }

    pub(crate) fn fault(&self, rng: &mut Rng) -> Fault {
        if !self.a.kill_workers {
            return Fault::None;
        }
        // Make sure each fate happens at least once, at a point of real progress.
        let p = self.progress();
        for (i, (at, f)) in
            [(0.2, Fault::Abandon), (0.3, Fault::Cut), (0.4, Fault::HoldPastLease)].into_iter().enumerate()
        {
            if p >= at && !self.forced[i].swap(true, SeqCst) {
                return f;
            }
        }
        let x = rng.f64() / self.a.fault_rate.max(1e-9);
        if x < 1.0 / 3.0 {
            Fault::Abandon
        } else if x < 2.0 / 3.0 {
            Fault::Cut
        } else if x < 1.0 {
            Fault::HoldPastLease
        } else {
            Fault::None
        }
    }
}

fn decode(partition: &str, r: &baton_client::FetchedRecord) -> Rec {
    let g = |k: &str| r.payload.get(k).and_then(Value::as_u64);
    Rec {
        partition: partition.to_string(),
        offset: r.offset,
        id: g("id"),
        seq: g("seq"),
        out: g("out"),
        tag: r.payload.get("txn").and_then(Value::as_str).map(str::to_string),
    }
}

async fn read_log(c: &Client, queue: &str, partitions: u32) -> Result<Vec<Rec>, String> {
    let mut out = Vec::new();
    for p in 0..partitions {
        let name = p.to_string();
        let mut tries = 0;
        let recs = loop {
            match c.fetch_all(queue, &name, 0).await {
                Ok(r) => break r,
                Err(e) if e.is_unknown() && tries < 20 => {
                    tries += 1;
                    sleep_ms(100).await;
                }
                Err(e) => return Err(format!("read back {queue}/{name}: {e}")),
            }
        };
        out.extend(recs.iter().map(|r| decode(&name, r)));
    }
    Ok(out)
}

/// The input ids still deliverable: wait until no input partition is leased
/// (every in-flight transaction of ours can then no longer commit), then pop
/// each partition once without waiting. `None` if a lease never went away.
async fn probe_waiting(s: &Shared) -> Result<Option<Vec<u64>>, String> {
    let until = Instant::now() + Duration::from_secs(2 * s.a.lease_time + 10);
    loop {
        let v = match s.client.queue_view(&s.qin).await {
            Ok(v) => v,
            Err(baton_client::Error::Api { status: 404, .. }) => return Ok(Some(vec![])),
            Err(e) if e.is_unknown() && Instant::now() < until => {
                sleep_ms(100).await;
                continue;
            }
            Err(e) => return Err(format!("queue view of {}: {e}", s.qin)),
        };
        // Counted over every partition (the view's `partitionList` is one page of them).
        let leased = v.get("leasedPartitions").and_then(Value::as_u64).is_some_and(|n| n > 0);
        if !leased {
            break;
        }
        if Instant::now() >= until {
            s.note("probe: an input partition was still leased; waiting inputs not probed".into());
            return Ok(None);
        }
        sleep_ms(200).await;
    }
    const MAX_POP: u32 = 10_000;
    let mut ids = Vec::new();
    for p in 0..s.a.partitions {
        let name = p.to_string();
        // One pop per partition: it leases what it returns, so a second would see nothing.
        match s.client.pop(&s.qin, Some(&name), MAX_POP, None).await {
            Ok(Some(m)) if m.messages.len() >= MAX_POP as usize => {
                s.note(format!(
                    "probe: more than {MAX_POP} inputs wait in partition {name}; waiting inputs not probed"
                ));
                return Ok(None);
            }
            Ok(Some(m)) => ids.extend(m.messages.iter().filter_map(|m| m.data.get("id").and_then(Value::as_u64))),
            Ok(None) => {}
            Err(e) => return Err(format!("probe pop {}/{name}: {e}", s.qin)),
        }
    }
    Ok(Some(ids))
}

fn pct(h: &Histogram<u64>, q: f64) -> u64 {
    if h.is_empty() {
        0
    } else {
        h.value_at_quantile(q)
    }
}

/// Run the verifier; prints its report to stdout (progress to stderr).
pub fn run(a: PipelineArgs) -> Result<PipelineReport, String> {
    if a.kill_broker > 0 && !a.spawn {
        return Err("--kill-broker needs --spawn (the verifier can only kill a broker it started)".into());
    }
    if a.partitions == 0 || a.workers == 0 || a.batch == 0 || a.messages == 0 || a.lease_time == 0 {
        return Err("--messages, --partitions, --workers, --batch and --lease-time must be at least 1".into());
    }
    if !(0.0..=1.0).contains(&a.fault_rate) {
        return Err("--fault-rate is a probability in [0, 1]".into());
    }
    let seed = a.seed.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
    });
    let broker = if a.spawn { Some(Broker::start(a.bin.as_deref())?) } else { None };
    let url = broker.as_ref().map_or(a.url.clone(), |b| b.url.clone());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    rt.block_on(drive(a, url, seed, broker))
}

async fn drive(a: PipelineArgs, url: String, seed: u64, broker: Option<Broker>) -> Result<PipelineReport, String> {
    let prefix = a.queue_prefix.clone().unwrap_or_else(|| format!("check-{seed:x}"));
    let client = Client::new(&url, (a.workers + a.readers + 8) as usize).map_err(|e| e.to_string())?;
    client.wait_healthy(Duration::from_secs(10)).await.map_err(|e| format!("{url}: {e}"))?;
    let mut text = String::new();
    let _ = writeln!(
        text,
        "baton check pipeline: {url} ({}), {} messages, {} partitions, {} workers, batch {}, {} readers, leaseTime {} s, kill-broker {}, kill-workers {}, seed {seed}",
        if a.spawn { "spawned" } else { "given" },
        a.messages,
        a.partitions,
        a.workers,
        a.batch,
        a.readers,
        a.lease_time,
        a.kill_broker,
        a.kill_workers
    );
    print!("{text}");
    let qin = format!("{prefix}-in");
    let qout = format!("{prefix}-out");
    // A retry limit out of reach: with faults, a batch may be redelivered many
    // times; dead-lettering it would take it out of the pipeline.
    let opts = json!({"leaseTime": a.lease_time, "retryLimit": 1_000_000, "dlqAfterMaxRetries": false});
    for q in [&qin, &qout] {
        client.configure(q, opts.clone()).await.map_err(|e| format!("configure {q}: {e}"))?;
    }
    let t0 = Instant::now();
    let s = Arc::new(Shared {
        client: client.clone(),
        a: a.clone(),
        qin,
        qout,
        seed,
        t0,
        deadline: t0 + Duration::from_secs(a.timeout),
        stop_work: AtomicBool::new(false),
        stop_read: AtomicBool::new(false),
        epoch: AtomicU64::new(0),
        kills_done: AtomicU32::new(0),
        committed_inputs: AtomicU64::new(0),
        feeders_done: AtomicU32::new(0),
        forced: Default::default(),
        abandoned: AtomicU64::new(0),
        held: AtomicU64::new(0),
        cut: AtomicU64::new(0),
        seen: Mutex::new(HashSet::new()),
        rec: Mutex::new(Recorded {
            fed: Vec::new(),
            maybe_fed: Vec::new(),
            txns: Vec::new(),
            deliveries: Vec::new(),
            reader_seen: Vec::new(),
            latency: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds"),
            fatal: Vec::new(),
            notes: Vec::new(),
            kill_log: Vec::new(),
        }),
    });
    let nf = a.partitions.min(4);
    let feeders: Vec<_> = (0..nf).map(|f| tokio::spawn(feeder(s.clone(), f, nf))).collect();
    let workers: Vec<_> = (0..a.workers).map(|w| tokio::spawn(worker(s.clone(), w))).collect();
    let readers: Vec<_> = (0..a.readers).map(|r| tokio::spawn(reader(s.clone(), r))).collect();
    let mut broker = broker;
    let killer_thread = match (a.kill_broker, broker.take()) {
        (k, Some(b)) if k > 0 => {
            let s2 = s.clone();
            Some(std::thread::spawn(move || killer(s2, b, k)))
        }
        (_, b) => {
            broker = b;
            None
        }
    };

    // Run until every fed id reached a reader and every kill happened, or the timeout.
    let mut last_print = Instant::now();
    let finished = loop {
        sleep_ms(20).await;
        let seen = s.seen.lock().unwrap_or_else(|e| e.into_inner()).len() as u64;
        let fed_all = s.feeders_done.load(SeqCst) == nf;
        let fatal = !s.rec().fatal.is_empty();
        let kills = s.kills_done.load(SeqCst);
        if fed_all && seen >= a.messages && kills >= a.kill_broker {
            break true;
        }
        let killer_gave_up = killer_thread.as_ref().is_some_and(|t| t.is_finished()) && kills < a.kill_broker;
        if fatal || Instant::now() >= s.deadline || killer_gave_up {
            break false;
        }
        if !a.quiet && last_print.elapsed() >= Duration::from_secs(5) {
            last_print = Instant::now();
            let fed = s.rec().fed.len();
            eprintln!(
                "[{:>5.1} s] fed {fed}, inputs committed {}, output read {seen}, broker kills {kills}",
                t0.elapsed().as_secs_f64(),
                s.committed_inputs.load(SeqCst)
            );
        }
    };
    let elapsed = t0.elapsed();
    s.stop_work.store(true, SeqCst);
    for h in feeders.into_iter().chain(workers) {
        let _ = h.await;
    }
    let mut killer_err = None;
    if let Some(t) = killer_thread {
        let (b, r) = tokio::task::spawn_blocking(move || t.join())
            .await
            .map_err(|e| e.to_string())?
            .map_err(|_| "the killer thread panicked".to_string())?;
        broker = Some(b);
        killer_err = r.err();
    }
    let mut fatal: Vec<String> = s.rec().fatal.clone();
    fatal.extend(killer_err);
    if let Some(b) = broker.as_mut() {
        if let Err(e) = b.check_alive() {
            fatal.push(e);
        }
    }
    if fatal.is_empty() {
        if let Err(e) = client.wait_healthy(Duration::from_secs(30)).await {
            fatal.push(format!("broker unhealthy at the end: {e}"));
        }
    }

    let mut result = Err(String::new());
    if fatal.is_empty() {
        result = judge(&s, &a).await;
        if let Err(e) = &result {
            fatal.push(e.clone());
        }
    }
    s.stop_read.store(true, SeqCst);
    for h in readers {
        let _ = h.await;
    }
    if !fatal.is_empty() {
        let mut msg = format!("check pipeline could not complete: {}", fatal.join("; "));
        if let Some(b) = broker.as_mut() {
            let _ = write!(msg, "\nbroker log tail:\n{}", b.log_tail(30));
            if let Some(d) = b.keep() {
                let _ = write!(msg, "\nbroker data directory kept at {}", d.display());
            }
        }
        return Err(msg);
    }
    let verdict = result.expect("judged");

    let r = s.rec();
    let committed_txns = verdict.committed + verdict.unknown_committed;
    let secs = elapsed.as_secs_f64().max(1e-9);
    let mut report = PipelineReport {
        committed_txns,
        committed_msgs: verdict.committed_inputs,
        txns_per_sec: committed_txns as f64 / secs,
        msgs_per_sec: verdict.committed_inputs as f64 / secs,
        commit_p50_us: pct(&r.latency, 0.5),
        commit_p99_us: pct(&r.latency, 0.99),
        commit_max_us: if r.latency.is_empty() { 0 } else { r.latency.max() },
        elapsed,
        finished,
        broker_kills: s.kills_done.load(SeqCst),
        abandoned: s.abandoned.load(SeqCst),
        held_past_lease: s.held.load(SeqCst),
        cut: s.cut.load(SeqCst),
        kept_dir: None,
        text: String::new(),
        verdict,
    };
    let mut out = String::new();
    out.push_str(&report.verdict.render());
    let line = |out: &mut String, k: &str, v: String| {
        let _ = writeln!(out, "{k:<22}{v}");
    };
    line(
        &mut out,
        "finished",
        if finished {
            format!("yes, in {:.2} s", secs)
        } else {
            format!("NO: stopped after {:.2} s (timeout {} s)", secs, a.timeout)
        },
    );
    line(
        &mut out,
        "throughput",
        format!("{:.0} committed txns/s, {:.0} msgs/s", report.txns_per_sec, report.msgs_per_sec),
    );
    line(
        &mut out,
        "commit latency",
        format!(
            "p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} commits)",
            report.commit_p50_us as f64 / 1000.0,
            report.commit_p99_us as f64 / 1000.0,
            report.commit_max_us as f64 / 1000.0,
            r.latency.len()
        ),
    );
    line(
        &mut out,
        "faults",
        format!(
            "broker kills {}, batches abandoned {}, held past lease {}, commits cut {}",
            report.broker_kills, report.abandoned, report.held_past_lease, report.cut
        ),
    );
    for k in &r.kill_log {
        let _ = writeln!(out, "  {k}");
    }
    for n in &r.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    drop(r);
    if report.verdict.ok() {
        let _ = writeln!(out, "result: OK, no violation");
    } else {
        let _ = writeln!(out, "result: FAILED, {} violation(s)", report.verdict.total_violations());
        if let Some(b) = broker.as_mut() {
            if let Some(d) = b.keep() {
                let _ = writeln!(
                    out,
                    "broker data directory and log kept at {} (queues {}-in, {}-out)",
                    d.display(),
                    prefix,
                    prefix
                );
                report.kept_dir = Some(d);
            }
        }
    }
    print!("{out}");
    text.push_str(&out);
    report.text = text;
    Ok(report)
}

/// Read everything back and judge. Readers keep running until they have seen
/// the whole output (or a drain timeout) so `undelivered` is meaningful.
async fn judge(s: &Arc<Shared>, a: &PipelineArgs) -> Result<Verdict, String> {
    let early = read_log(&s.client, &s.qout, a.partitions).await?;
    let want: HashSet<u64> = early.iter().filter_map(|r| r.id).collect();
    let until = Instant::now() + Duration::from_secs(2 * a.lease_time + 10);
    while Instant::now() < until {
        let all = {
            let seen = s.seen.lock().unwrap_or_else(|e| e.into_inner());
            want.iter().all(|id| seen.contains(id))
        };
        if all {
            break;
        }
        sleep_ms(50).await;
    }
    s.stop_read.store(true, SeqCst);
    let waiting = probe_waiting(s).await?;
    let input_log = read_log(&s.client, &s.qin, a.partitions).await?;
    let output_log = read_log(&s.client, &s.qout, a.partitions).await?;
    let r = s.rec();
    let h = History {
        fed: r.fed.clone(),
        maybe_fed: r.maybe_fed.clone(),
        txns: r.txns.clone(),
        deliveries: r.deliveries.clone(),
        input_log,
        output_log,
        waiting,
        reader_seen: (a.readers > 0).then(|| r.reader_seen.clone()),
    };
    drop(r);
    Ok(history::check(&h))
}
