//! `baton bench storage <scenario>`: how Baton's storage scales with what it
//! holds (issue 18). Each scenario starts its own server process(es) from
//! `--exe` (default: this executable) on a free loopback port with its own data
//! directory, so one command measures an old and a new build alike:
//!
//! * `fill` ([`fill`]): RSS and disk at every 10 % of N stored messages, and the
//!   RSS slope in bytes per stored message.
//! * `checkpoint` ([`checkpoint`]): bytes written per checkpoint under a steady
//!   open-loop push with consumers acking.
//! * `restart` ([`restart`]): time from start to /health 200 and to a first
//!   popped message after SIGTERM and after SIGKILL, medians of `--runs`.
//! * `partitions` ([`partitions`]): P partitions created with one push and one
//!   pop + ack each, then steady load across them, against the same on 200.
//!
//! Each prints a table (stdout, or stderr with `--json`, which prints one JSON
//! object on stdout) with "target met / missed" beside each figure of the issue.
//! Owns the process probes (/proc RSS and I/O, data-dir sizes) and the report.
//! Must never fail a run because a target was missed: it fails (non-zero exit)
//! only when the run itself failed (a server died or a request errored), and
//! must never leave a server running or delete a data directory it was given.

pub mod checkpoint;
pub mod fill;
pub mod partitions;
pub mod restart;

use crate::spawn::Spawned;
use baton_client::Client;
use clap::{Args, Subcommand};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Args, Debug, Clone)]
pub struct StorageArgs {
    #[command(subcommand)]
    pub scenario: Scenario,
}

#[derive(Subcommand, Debug, Clone)]
pub enum Scenario {
    /// Push N messages across P partitions; RSS and disk at every 10 %; RSS bytes per stored message.
    Fill(fill::FillArgs),
    /// Steady open-loop push with consumers acking; bytes written per checkpoint.
    Checkpoint(checkpoint::CheckpointArgs),
    /// Restart after SIGTERM and after kill -9: time to /health and to a first popped message.
    Restart(restart::RestartArgs),
    /// P partitions (one push, one pop + ack each), then steady load; the same on 200; p99 ratio, RSS per partition.
    Partitions(partitions::PartitionsArgs),
}

/// Flags every scenario takes.
#[derive(Args, Debug, Clone)]
pub struct Common {
    /// Baton binary whose `serve` is measured (default: this executable).
    #[arg(long)]
    pub exe: Option<PathBuf>,
    /// Print one JSON object on stdout; the table goes to stderr.
    #[arg(long)]
    pub json: bool,
    /// One more argument for `serve`, repeatable: --server-arg=--wal-segment-mb --server-arg=16.
    #[arg(long = "server-arg", allow_hyphen_values = true)]
    pub server_args: Vec<String>,
    /// Queue the scenario writes.
    #[arg(long, default_value = "storage")]
    pub queue: String,
    /// Seconds a started server may take to answer /health (its recovery included).
    #[arg(long, default_value_t = 300)]
    pub ready_timeout_secs: u64,
    /// No progress lines on stderr.
    #[arg(long)]
    pub no_progress: bool,
}

/// What a scenario reports: a table for people, a JSON object, and whether the run failed.
pub struct Report {
    pub table: String,
    pub json: Value,
    pub failure: Option<String>,
}

pub fn run(a: StorageArgs) -> Result<(), String> {
    let common = match &a.scenario {
        Scenario::Fill(f) => &f.common,
        Scenario::Checkpoint(c) => &c.common,
        Scenario::Restart(r) => &r.common,
        Scenario::Partitions(p) => &p.common,
    };
    report(common, |_| async {
        match &a.scenario {
            Scenario::Fill(f) => fill::run(f).await,
            Scenario::Checkpoint(c) => checkpoint::run(c).await,
            Scenario::Restart(r) => restart::run(r).await,
            Scenario::Partitions(p) => partitions::run(p).await,
        }
    })
}

/// Runs one scenario on a runtime of its own and prints its report: the table (on stderr
/// with `--json`, which prints the JSON object on stdout). Fails only if the run failed.
pub fn report<F, Fut>(common: &Common, scenario: F) -> Result<(), String>
where
    F: FnOnce(&Common) -> Fut,
    Fut: std::future::Future<Output = Result<Report, String>>,
{
    let rt =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| format!("tokio runtime: {e}"))?;
    let res = rt.block_on(scenario(common));
    rt.shutdown_timeout(Duration::from_secs(5));
    let r = res?;
    if common.json {
        eprintln!("{}", r.table);
        println!("{}", r.json);
    } else {
        println!("{}", r.table);
    }
    r.failure.map_or(Ok(()), Err)
}

/// A spawned server and a client of it.
pub struct Node {
    pub s: Spawned,
    pub client: Client,
    /// From the spawn to the first /health 200.
    pub ready: Duration,
    pub started: Instant,
}

impl Node {
    /// Start `--exe serve` on `data` (a temp dir when None) with `extra` and
    /// `--server-arg`s; wait for /health 200 (at most --ready-timeout-secs).
    pub async fn start(c: &Common, data: Option<&Path>, extra: &[String]) -> Result<Node, String> {
        // A Kafka listener on an ephemeral port: the default 9092 may be another server's.
        let mut args = vec!["--kafka-addr".to_string(), "127.0.0.1:0".to_string()];
        args.extend(extra.iter().cloned());
        args.extend(c.server_args.iter().cloned());
        let started = Instant::now();
        let mut s = Spawned::start_with(c.exe.as_deref(), data, &args)?;
        let client = crate::baton::BatonHttp::client(&s.url, 64)?;
        let limit = Duration::from_secs(c.ready_timeout_secs);
        loop {
            s.check_alive()?;
            if client.health().await.is_ok() {
                break;
            }
            if started.elapsed() >= limit {
                return Err(format!("{} did not answer /health within {limit:?}; log:\n{}", s.url, s.log_tail(4000)));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(Node { ready: started.elapsed(), started, s, client })
    }

    pub fn rss(&self) -> Result<u64, String> {
        rss_bytes(self.s.pid())
    }

    /// SIGTERM and wait (a clean stop checkpoints); the time it took.
    pub fn stop(&mut self) -> Result<Duration, String> {
        let (st, d) = self.s.terminate(Duration::from_secs(120))?;
        if !st.success() {
            return Err(format!("baton exited with {st} after SIGTERM; log:\n{}", self.s.log_tail(4000)));
        }
        Ok(d)
    }

    /// An error with the server's state: its exit and log tail when it died.
    pub fn explain(&mut self, e: impl std::fmt::Display) -> String {
        match self.s.check_alive() {
            Err(dead) => format!("{e}; {dead}"),
            Ok(()) => e.to_string(),
        }
    }
}

/// Resident set size of `pid` (VmRSS of /proc/<pid>/status), bytes.
pub fn rss_bytes(pid: u32) -> Result<u64, String> {
    let p = format!("/proc/{pid}/status");
    let s = std::fs::read_to_string(&p).map_err(|e| format!("{p}: {e}"))?;
    proc_field(&s, "VmRSS:").map(|kb| kb * 1024).ok_or_else(|| format!("{p}: no VmRSS line"))
}

/// Bytes `pid` caused to be written to storage (write_bytes of /proc/<pid>/io).
pub fn io_write_bytes(pid: u32) -> Result<u64, String> {
    let p = format!("/proc/{pid}/io");
    let s = std::fs::read_to_string(&p).map_err(|e| format!("{p}: {e}"))?;
    proc_field(&s, "write_bytes:").ok_or_else(|| format!("{p}: no write_bytes line"))
}

/// The number after `key` on the line that starts with it.
fn proc_field(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    line[key.len()..].split_whitespace().next()?.parse().ok()
}

/// The value of an unlabelled Prometheus sample `name` in `text`.
pub fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// Sizes of a directory tree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirUsage {
    /// Sum of file lengths.
    pub apparent: u64,
    /// Blocks allocated (what `du` counts; preallocated WAL segments included).
    pub allocated: u64,
    pub files: u64,
}

/// Walk `root` (files that vanish during the walk are skipped: the server keeps writing).
pub fn dir_usage(root: &Path) -> DirUsage {
    use std::os::unix::fs::MetadataExt;
    let mut u = DirUsage::default();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                stack.push(e.path());
            } else {
                u.apparent += m.len();
                u.allocated += m.blocks() * 512;
                u.files += 1;
            }
        }
    }
    u
}

/// A data directory for a scenario: `given` (created if absent), or a temp one deleted on drop.
pub struct DataDir {
    pub path: PathBuf,
    _temp: Option<tempfile::TempDir>,
}

impl DataDir {
    pub fn new(given: Option<&Path>) -> Result<DataDir, String> {
        match given {
            Some(p) => Ok(DataDir { path: p.to_path_buf(), _temp: None }),
            None => {
                let t = tempfile::Builder::new()
                    .prefix("baton-storage-")
                    .tempdir()
                    .map_err(|e| format!("temp dir: {e}"))?;
                Ok(DataDir { path: t.path().join("data"), _temp: Some(t) })
            }
        }
    }
}

pub fn mb(bytes: f64) -> String {
    format!("{:.1}", bytes / 1e6)
}

pub fn ms(us: u64) -> String {
    format!("{:.2}", us as f64 / 1000.0)
}

pub fn verdict(met: bool) -> &'static str {
    if met {
        "target met"
    } else {
        "target missed"
    }
}

/// Median of `v` (mean of the middle two when even); 0 when empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A markdown table.
pub fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = format!("| {} |\n|{}\n", head.join(" | "), "---|".repeat(head.len()));
    for r in rows {
        s.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    s
}

/// The binary measured, for the report.
pub fn exe_name(c: &Common) -> String {
    crate::spawn::exe(c.exe.as_deref()).map_or_else(|_| "?".into(), |p| p.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_fields_and_metrics_parse() {
        let status = "Name:\tbaton\nVmPeak:\t  9 kB\nVmRSS:\t   38948 kB\n";
        assert_eq!(proc_field(status, "VmRSS:"), Some(38948));
        assert_eq!(proc_field(status, "VmHWM:"), None);
        let m = "# HELP baton_checkpoints_total x\nbaton_checkpoints_total 3\nbaton_checkpoints_total_x 9\n\
                 baton_wal_bytes_total{a=\"b\"} 5\nbaton_wal_bytes_total 329\n";
        assert_eq!(metric(m, "baton_checkpoints_total"), Some(3.0));
        assert_eq!(metric(m, "baton_wal_bytes_total"), Some(329.0));
        assert_eq!(metric(m, "baton_nope"), None);
    }

    #[test]
    fn medians_and_rss_of_this_process() {
        assert_eq!(median(vec![]), 0.0);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(rss_bytes(std::process::id()).unwrap() > 0);
    }

    #[test]
    fn dir_usage_counts_files_below() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("a")).unwrap();
        std::fs::write(d.path().join("a/x"), [0u8; 1000]).unwrap();
        std::fs::write(d.path().join("y"), [0u8; 24]).unwrap();
        let u = dir_usage(d.path());
        assert_eq!((u.apparent, u.files), (1024, 2));
        assert!(u.allocated >= 1024);
        assert_eq!(dir_usage(&d.path().join("absent")), DirUsage::default());
    }
}
