//! `baton check history --spawn` / `--addr`: record a history of real clients
//! against a real Baton (optionally under a nemesis), in the format of
//! docs/check.md, then judge it with the checker.
//!
//! - `writer`: the one writer of the file, the clock and the operation ids;
//! - `clients`: the client tasks (push, pop, ack, extend, transaction), each
//!   request an invocation before it is sent and a completion once answered;
//! - `kafka_clients`: the Kafka client tasks on the Kafka door (idempotent and
//!   plain produce, fetch, offset commit and fetch) on a topic of their own,
//!   and that topic's final logs;
//! - `nemesis`: SIGKILL + restart and SIGSTOP + SIGCONT of a spawned broker,
//!   and through the fault shim (crates/faults) a jumped wall clock, failing
//!   or slow fsync and a full disk, each inside a `nemesis` window;
//! - `cluster_nemesis`: with `--cluster`, three members of our own
//!   (`crate::members`), the clients at the one that never leads, and the
//!   faults aimed at whichever member leads (kill, stop, partition, clock);
//! - `final_state`: once nothing is in flight, what is waiting, the DLQ and
//!   every partition's whole log.
//!
//! This file owns the flags and the order of the run: queues, clients and
//! nemesis, stop the nemesis (the broker is serving), let the clients settle
//! (only pops and acks: what waits shrinks), stop them (each finishes or
//! gives up on its request), read the final state, judge. Must
//! never judge anything itself: the verdict is the checker's, on the file.

mod clients;
mod cluster_nemesis;
mod final_state;
mod kafka_clients;
mod nemesis;
mod writer;

use crate::broker::Broker;
use crate::members::Members;
use baton_client::{Client, Options};
use clap::Args;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Args, Debug, Clone)]
pub struct RecordArgs {
    /// Record a history against a `baton serve` of our own (free port, temp data
    /// directory), with the --nemesis faults, then judge it.
    #[arg(long, conflicts_with_all = ["check", "generate", "addr"])]
    pub spawn: bool,
    /// Record against a running server (no nemesis: we cannot restart it).
    #[arg(long, value_name = "URL", conflicts_with_all = ["check", "generate"])]
    pub addr: Option<String>,
    /// With --spawn: three members on loopback instead of one (`--node-id`, Raft links
    /// through proxies), the clients at the member that never leads, and the --nemesis
    /// faults (kill, stop, partition, clock) aimed at whichever member leads; at the end
    /// the members' partition files are compared byte for byte. No Kafka clients.
    #[arg(long, requires = "spawn")]
    pub cluster: bool,
    /// The executable to `serve` with --spawn (default: this one).
    #[arg(long, value_name = "PATH", requires = "spawn")]
    pub exe: Option<PathBuf>,
    /// Seconds the clients run.
    #[arg(long, default_value_t = 20)]
    pub duration: u64,
    /// Concurrent client tasks.
    #[arg(long, default_value_t = 8)]
    pub clients: u32,
    /// Partitions per queue.
    #[arg(long, default_value_t = 3)]
    pub partitions: u32,
    /// The queues' leaseTime in ms (whole seconds: Baton's leaseTime is in seconds).
    #[arg(long, default_value_t = 2000)]
    pub lease_ms: u64,
    /// Faults to inject in turn (--spawn only): kill (SIGKILL + restart), stop (SIGSTOP past the lease time + SIGCONT),
    /// partition (--cluster only: the leader's Raft links cut),
    /// and through the fault shim: clock (wall clock ±1 h; with --cluster: a member rebooted --clock-skew-ms ahead, then handed the log), fsync (EIO: the node latches; restart),
    /// fsync-slow (+300 ms a sync), disk-full (ENOSPC), clock-restart (a restart 1 h ahead; docs/check.md),
    /// power (SIGKILL, then only what was synced is left on the disk: a power cut; docs/check.md).
    #[arg(long, value_delimiter = ',', requires = "spawn")]
    pub nemesis: Vec<String>,
    /// The fault shim the clock, fsync and disk-full faults preload into the broker
    /// (default: libbaton_faults.so beside the executable, or in its deps/).
    #[arg(long, value_name = "PATH", requires = "spawn")]
    pub faults_lib: Option<PathBuf>,
    /// With --cluster: how much further ahead each `clock` fault puts a member's wall clock, in ms.
    #[arg(long, default_value_t = 8000, value_parser = clap::value_parser!(i64).range(1..=86_400_000))]
    pub clock_skew_ms: i64,
    /// With --cluster: the members' --clock-follow-ms (D72); 0 keeps each member on its own
    /// clock, so a `clock` fault hands the log to a leader --clock-skew-ms ahead (D41, D46).
    /// Default: the broker's.
    #[arg(long, value_name = "MS")]
    pub member_clock_follow_ms: Option<u64>,
    /// Quiet time between two faults.
    #[arg(long, default_value_t = 1500)]
    pub nemesis_interval_ms: u64,
    /// After the faults, seconds the clients only pop and ack what is waiting (ending early
    /// once every client keeps finding nothing); default: a fifth of --duration, at most 600.
    #[arg(long, value_name = "SECS")]
    pub settle_secs: Option<u64>,
    /// Whether every second `power` cut also keeps some of the unsynced sectors (a torn
    /// write); with false, a cut keeps exactly what was synced.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub power_tear: bool,
    /// At every `power` cut, this many more cuts of the same moment, each restored aside
    /// and judged as start-up would (`check data`) and held to the log entry the broker
    /// said was durable before the kill; the campaign's own cut is judged by the history.
    /// At most 10,000: each is a restore and a `check data` of the whole directory.
    #[arg(long, default_value_t = 0, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=10_000))]
    pub power_points: u64,
    /// Concurrent Kafka client tasks (idempotent and plain produce, fetch, offset commit
    /// and fetch on a topic of their own); 0: none.
    #[arg(long, default_value_t = 2)]
    pub kafka_clients: u32,
    /// With --addr: the running server's Kafka listener (host:port); without it, no Kafka clients.
    #[arg(long, value_name = "HOST:PORT", conflicts_with = "spawn")]
    pub kafka_addr: Option<String>,
}

impl RecordArgs {
    pub fn wanted(&self) -> bool {
        self.spawn || self.addr.is_some()
    }
}

/// One queue of the run and the options it is configured with.
#[derive(Debug, Clone)]
pub struct QueueSpec {
    pub name: String,
    pub retry_limit: u32,
    /// deadLetterQueue and dlqAfterMaxRetries: dead-letters past retryLimit on its own, takes `dlq` acks.
    pub dead_letters: bool,
    pub dedup_s: u64,
}

/// The consumer groups every queue is consumed by: queue mode and one named group.
pub const GROUPS: [Option<&str>; 2] = [None, Some("g1")];

/// What every task of the run shares.
pub struct Ctx {
    pub rec: writer::Rec,
    pub client: Client,
    pub queues: Vec<QueueSpec>,
    pub partitions: u32,
    pub lease_ms: u64,
    pub stop: AtomicBool,
    /// The settle phase: clients only pop and ack (no pushes, no transactions).
    pub settling: AtomicBool,
    /// Clients that found nothing to pop, many times in a row, while settling.
    pub idle: std::sync::atomic::AtomicU32,
}

/// Record, then judge the file: `Ok(exit code)` as `--check` gives it.
pub fn run(a: &super::HistoryArgs) -> Result<i32, String> {
    let r = &a.record;
    if r.lease_ms == 0 || !r.lease_ms.is_multiple_of(1000) {
        return Err("--lease-ms must be a positive multiple of 1000 (Baton's leaseTime is whole seconds)".into());
    }
    if r.clients == 0 || r.partitions == 0 || r.duration == 0 {
        return Err("--clients, --partitions and --duration must be at least 1".into());
    }
    if !r.spawn && (r.cluster || !r.nemesis.is_empty() || r.exe.is_some() || r.faults_lib.is_some()) {
        // Checked here: clap's `requires` takes the flag's default (false) as present.
        return Err(
            "--cluster, --nemesis, --exe and --faults-lib need --spawn (only a broker we started can be killed)".into(),
        );
    }
    let faults = nemesis::parse(&r.nemesis)?;
    if let Some(f) =
        faults.iter().find(|f| f.in_cluster() != r.cluster && (r.cluster || **f == nemesis::Fault::Partition))
    {
        let kind = if r.cluster {
            "a single node's fault, not --cluster's (kill, stop, partition, clock)"
        } else {
            "a --cluster fault"
        };
        return Err(format!("--nemesis {}: {kind}", f.name()));
    }
    // Only a run that asks for a shim fault gets the shim: kill and stop need nothing in the broker.
    let shim = match (faults.iter().any(|f| f.needs_shim()), &r.faults_lib) {
        (false, _) => None,
        (true, Some(p)) if p.exists() => Some(p.clone()),
        (true, Some(p)) => {
            return Err(format!("--faults-lib {}: no such file (cargo build --release -p baton-faults)", p.display()))
        }
        (true, None) => Some(crate::broker::find_shim(&Broker::exe(r.exe.as_deref())?)?),
    };
    let out = a.out.clone().unwrap_or_else(|| std::env::temp_dir().join(format!("baton-history-{}.jsonl", a.seed)));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    // A Kafka port of our own, not :0: a restart is given the same flags, so the
    // Kafka clients find it again where they left it.
    let kafka = match (r.spawn, r.cluster) {
        (true, false) => format!("127.0.0.1:{}", crate::broker::free_port()?),
        (true, true) => String::new(),
        (false, _) => r.kafka_addr.clone().unwrap_or_default(),
    };
    let mut spawned = if r.cluster {
        // Checkpoints (each a Raft snapshot, the log purged behind it) every few seconds, and
        // a leader cut off answers unknown within 2 s rather than the default 5.
        let follow = r.member_clock_follow_ms.map(|ms| ms.to_string());
        let mut extra = vec!["--checkpoint-interval-secs", "3", "--raft-commit-timeout-ms", "2000"];
        extra.extend(follow.as_deref().map(|ms| ["--clock-follow-ms", ms]).into_iter().flatten());
        Some(Spawned::Cluster(Members::start(r.exe.as_deref(), shim.as_deref(), &extra, rt.handle())?))
    } else if r.spawn {
        let power = faults.contains(&nemesis::Fault::Power);
        let mut args = vec!["--kafka-addr", kafka.as_str()];
        if power {
            // Under power cuts: checkpoints (syncfs, renames, placed partition files) and WAL
            // segment rolls and recycling every second or so, where a cut finds the most to
            // take away; and a restart that replays and copies seconds of log, not minutes.
            args.extend(["--checkpoint-interval-secs", "1", "--wal-segment-mb", "4"]);
        }
        Some(Spawned::One(Box::new(Broker::start_with_shim_power(r.exe.as_deref(), &args, shim.as_deref(), power)?)))
    } else {
        None
    };
    let kafka = (!kafka.is_empty() && r.kafka_clients > 0).then_some(kafka);
    let url = match &spawned {
        Some(Spawned::One(b)) => b.url.clone(),
        Some(Spawned::Cluster(m)) => m.entry_url(),
        None => r.addr.clone().expect("--addr without --spawn"),
    };
    let t = Instant::now();
    let recorded = rt.block_on(record(a, &url, kafka.as_deref(), &out, &mut spawned, faults));
    drop(rt);
    let summary = match recorded {
        Ok(s) => s,
        Err(e) => {
            let kept = spawned.as_mut().and_then(Spawned::keep).map(|d| format!("; broker data kept at {d}"));
            return Err(format!(
                "recording failed: {e} (history so far: {}){}",
                out.display(),
                kept.unwrap_or_default()
            ));
        }
    };
    eprintln!(
        "recorded {} lines in {:.1} s to {} ({url}, seed {}, {} faults: {})",
        summary.lines,
        t.elapsed().as_secs_f64(),
        out.display(),
        a.seed,
        summary.faults.len(),
        summary.faults.join(" ")
    );
    for n in &summary.notes {
        eprintln!("  note: {n}");
    }
    let code = super::judge(&out, a.skew_ms, a.json)?;
    if code == 1 {
        if let Some(d) = spawned.as_mut().and_then(Spawned::keep) {
            eprintln!("VIOLATION: history kept at {}, broker data directory and log at {d}", out.display());
        }
    }
    Ok(code)
}

/// What `--spawn` started: one broker, or three members.
enum Spawned {
    One(Box<Broker>),
    Cluster(Members),
}

impl Spawned {
    /// Keeps the data directories and logs after exit; where, for the message.
    fn keep(&mut self) -> Option<String> {
        let kept: Vec<String> = match self {
            Spawned::One(b) => b.keep().into_iter().collect(),
            Spawned::Cluster(m) => m.keep(),
        }
        .iter()
        .map(|d| d.display().to_string())
        .collect();
        (!kept.is_empty()).then(|| kept.join(", "))
    }

    fn check_alive(&mut self) -> Result<(), String> {
        match self {
            Spawned::One(b) => b.check_alive(),
            Spawned::Cluster(m) => m.check_alive(),
        }
    }
}

struct Summary {
    lines: u64,
    faults: Vec<String>,
    notes: Vec<String>,
}

async fn record(
    a: &super::HistoryArgs,
    url: &str,
    kafka: Option<&str>,
    out: &Path,
    spawned: &mut Option<Spawned>,
    faults: Vec<nemesis::Fault>,
) -> Result<Summary, String> {
    let r = &a.record;
    // Long enough that a request sent into a SIGSTOP is answered after the SIGCONT
    // (an answer says more than a timeout), short enough to bound the end of the run.
    let timeout = Duration::from_millis(2 * r.lease_ms + 3000);
    let client = Client::with_options(
        url,
        Options {
            pool: r.clients as usize + 4,
            timeout,
            connect_timeout: Duration::from_secs(2),
            ..Options::default()
        },
    )
    .map_err(|e| e.to_string())?;
    client.wait_healthy(Duration::from_secs(10)).await.map_err(|e| format!("{url}: {e}"))?;
    let (rec, writer) = writer::Rec::create(out)?;
    // Fresh queues: the checker needs every write to them in the history.
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    let prefix = format!("h{:x}-{stamp:x}", a.seed);
    let queues = vec![
        QueueSpec { name: format!("{prefix}-dl"), retry_limit: 2, dead_letters: true, dedup_s: 3600 },
        QueueSpec { name: format!("{prefix}-nodl"), retry_limit: 1, dead_letters: false, dedup_s: 600 },
    ];
    let lease_s = r.lease_ms / 1000;
    for q in &queues {
        let opts = json!({"leaseTime": lease_s, "retryLimit": q.retry_limit, "deadLetterQueue": q.dead_letters,
                          "dlqAfterMaxRetries": q.dead_letters, "dedupWindowSeconds": q.dedup_s});
        client.configure(&q.name, opts).await.map_err(|e| format!("configure {}: {e}", q.name))?;
        rec.line(json!({"type": "queue", "queue": q.name, "lease_ms": r.lease_ms, "retry_limit": q.retry_limit,
                        "dead_letters": q.dead_letters, "dedup_window_ms": q.dedup_s * 1000}));
    }
    let cx = Arc::new(Ctx {
        rec: rec.clone(),
        client: client.clone(),
        queues,
        partitions: r.partitions,
        lease_ms: r.lease_ms,
        stop: AtomicBool::new(false),
        settling: AtomicBool::new(false),
        idle: std::sync::atomic::AtomicU32::new(0),
    });
    let mut notes = Vec::new();
    let ks = match kafka {
        Some(k) => Some(Arc::new(kafka_clients::setup(k, &prefix, r.partitions, timeout).await?)),
        None if r.kafka_clients > 0 => {
            notes.push("no Kafka clients: --cluster, or --addr without --kafka-addr".to_string());
            None
        }
        None => None,
    };
    let mut tasks: Vec<_> =
        (0..r.clients).map(|c| tokio::spawn(clients::client(cx.clone(), c, a.seed ^ (0x5eed + c as u64)))).collect();
    // Process ids after the HTTP clients' and the drain's.
    if let Some(k) = &ks {
        for c in 0..r.kafka_clients as u64 {
            let me = r.clients as u64 + 1 + c;
            tasks.push(tokio::spawn(kafka_clients::client(cx.clone(), k.clone(), me, a.seed ^ (0xcafe + c))));
        }
    }
    let nem_stop = Arc::new(AtomicBool::new(false));
    type Ran = (Spawned, Vec<String>, Option<String>);
    let nem: Option<std::thread::JoinHandle<Ran>> = match (spawned.take(), faults.is_empty()) {
        (Some(Spawned::One(b)), false) => {
            let n = nemesis::Nemesis {
                rec: rec.clone(),
                faults,
                interval: Duration::from_millis(r.nemesis_interval_ms),
                stop_for: Duration::from_millis(r.lease_ms + 700),
                stop: nem_stop.clone(),
                seed: a.seed,
                tear: r.power_tear,
                points: r.power_points,
            };
            Some(std::thread::spawn(move || {
                let (b, done, err) = n.run(*b);
                (Spawned::One(Box::new(b)), done, err)
            }))
        }
        (Some(Spawned::Cluster(m)), false) => {
            let n = cluster_nemesis::ClusterNemesis {
                rec: rec.clone(),
                faults,
                interval: Duration::from_millis(r.nemesis_interval_ms),
                hold: Duration::from_millis(r.lease_ms + 700),
                stop: nem_stop.clone(),
                seed: a.seed,
                skew_ms: r.clock_skew_ms,
            };
            Some(std::thread::spawn(move || {
                let (m, done, err) = n.run(m);
                (Spawned::Cluster(m), done, err)
            }))
        }
        (b, _) => {
            *spawned = b;
            None
        }
    };
    let until = Instant::now() + Duration::from_secs(r.duration);
    while Instant::now() < until && !nem.as_ref().is_some_and(|n| n.is_finished()) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The nemesis first: the end of the run is recorded against a serving broker.
    nem_stop.store(true, SeqCst);
    let mut fault_log = Vec::new();
    let mut fatal = None;
    if let Some(h) = nem {
        let (b, done, err) = tokio::task::spawn_blocking(move || h.join())
            .await
            .map_err(|e| e.to_string())?
            .map_err(|_| "the nemesis thread panicked".to_string())?;
        *spawned = Some(b);
        fault_log = done;
        fatal = err;
    }
    // Settle: consume what is waiting, so the drain's one pop of 10,000 per (partition,
    // group) reads all of it and `lost` (b) applies (a run whose pushes outran its
    // consumers ended with more than that waiting everywhere).
    if fatal.is_none() {
        cx.settling.store(true, SeqCst);
        let until = Instant::now() + Duration::from_secs(r.settle_secs.unwrap_or((r.duration / 5).min(600)));
        while Instant::now() < until && cx.idle.load(SeqCst) < r.clients {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    cx.stop.store(true, SeqCst);
    for t in tasks {
        // Each task ends within one request timeout of the stop flag.
        let _ = t.await;
    }
    if let Some(e) = fatal {
        return Err(e);
    }
    if let Some(b) = spawned.as_mut() {
        b.check_alive()?;
    }
    client.wait_healthy(Duration::from_secs(30)).await.map_err(|e| format!("broker unhealthy at the end: {e}"))?;
    if let Some(Spawned::Cluster(m)) = spawned.as_ref() {
        tokio::task::block_in_place(|| m.wait_leader(Duration::from_secs(30)))?;
    }
    final_state::read(&cx, r.clients as u64, &mut notes).await?;
    if let Some(k) = &ks {
        kafka_clients::read_final(&cx, k).await?;
    }
    if let Some(Spawned::Cluster(m)) = spawned.as_ref() {
        // Not a line of the history: the replicas of one committed log must be one.
        let n = tokio::task::block_in_place(|| m.same_files(Duration::from_secs(30)))
            .map_err(|e| format!("the members' partition files: {e}"))?;
        notes.push(format!("the three members' {n} partition segment files are the same, byte for byte"));
    }
    drop(cx);
    drop(rec);
    let w = tokio::task::spawn_blocking(move || writer.join())
        .await
        .map_err(|e| e.to_string())?
        .map_err(|_| "the writer thread panicked".to_string())??;
    Ok(Summary { lines: w.lines, faults: fault_log, notes })
}
