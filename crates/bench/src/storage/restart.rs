//! `storage restart`: with a filled data directory (`--data DIR` from
//! `storage fill --data DIR`, or filled here first), stop the server with
//! SIGTERM and start it again, timing the start until /health answers 200 and
//! until a pop returns a message; then the same after SIGKILL (kill -9).
//! Medians of `--runs`. Issue 18's target: ready within 5 s with 25 GB stored.
//!
//! Owns the stop / start cycle. Must never run two servers on one data
//! directory (each stop is reaped before the next start) and never delete a
//! directory it was given. What it pops it acks once timed: a queue-mode pop
//! leases the message's partition, and a later pop (after the next restart)
//! would wait out that lease once every partition is held. So each restart
//! consumes one message of the fill.

use super::fill::{fill_into, FillParams};
use super::{dir_usage, exe_name, mb, median, verdict, Common, DataDir, Node, Report};
use baton_client::Ack;
use clap::{Args, ValueEnum};
use serde_json::json;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Seconds the issue allows from start to ready.
pub const TARGET_SECS: f64 = 5.0;

#[derive(Args, Debug, Clone)]
pub struct RestartArgs {
    #[command(flatten)]
    pub common: Common,
    /// A data directory filled before (`storage fill --data DIR`, same --queue); without it,
    /// a temp dir is filled first with the fill flags below.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Restarts of each kind; medians are reported.
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    /// Seconds a pop may keep finding nothing after /health before the run fails.
    #[arg(long, default_value_t = 120)]
    pub pop_timeout_secs: u64,
    #[command(flatten)]
    pub fill: FillParams,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum How {
    Sigterm,
    Sigkill,
}

#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Restart {
    pub how: How,
    /// From the signal to the process's exit.
    pub stop_secs: f64,
    /// From the spawn to /health 200.
    pub health_secs: f64,
    /// From the spawn to a pop that returned a message.
    pub pop_secs: f64,
    pub rss_bytes: u64,
}

/// Pop (no wait) until a message comes, every 5 ms, for at most `limit`; the time
/// it came (since `node` was spawned). Then ack it, untimed.
async fn first_pop(node: &mut Node, queue: &str, limit: Duration) -> Result<Duration, String> {
    let t0 = Instant::now();
    let mut last_err = String::from("the queue was empty");
    while t0.elapsed() < limit {
        match node.client.pop(queue, None, 1, None).await {
            Ok(Some(p)) => {
                let at = node.started.elapsed();
                let acks: Vec<Ack> = p.messages.iter().map(|m| Ack::completed(m, p.lease_id.as_deref())).collect();
                match node.client.ack_batch(&acks).await {
                    Ok(r) if r.iter().all(|r| r.success) => return Ok(at),
                    Ok(r) => return Err(format!("ack after the first pop refused: {r:?}")),
                    Err(e) => return Err(node.explain(format!("ack after the first pop: {e}"))),
                }
            }
            Ok(None) => {}
            Err(e) => last_err = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Err(node.explain(format!("no message popped within {limit:?} of /health: {last_err}")))
}

pub async fn run(a: &RestartArgs) -> Result<Report, String> {
    if a.runs == 0 {
        return Err("--runs must be positive".into());
    }
    let c = &a.common;
    let dir = DataDir::new(a.data.as_deref())?;
    let mut filled = None;
    let mut node = if a.data.is_none() {
        a.fill.check()?;
        let node = Node::start(c, Some(&dir.path), &[]).await?;
        let f = fill_into(&node, &c.queue, &a.fill, !c.no_progress).await?;
        if f.errors > 0 {
            return Err(format!("fill: {} errors, first: {}", f.errors, f.first_error.unwrap_or_default()));
        }
        filled = Some(f.pushed);
        node
    } else {
        if !dir.path.join("checkpoint.bin").exists() && !dir.path.join("wal").exists() {
            return Err(format!("--data {}: no Baton data here (no checkpoint.bin, no wal/)", dir.path.display()));
        }
        // The first start after a fill in another process is not timed: it warms the page cache
        // as the later ones find it, so every timed start sees the same.
        Node::start(c, Some(&dir.path), &[]).await?
    };
    let limit = Duration::from_secs(a.pop_timeout_secs);
    first_pop(&mut node, &c.queue, limit).await?;
    let disk = dir_usage(&dir.path);
    let mut runs = Vec::new();
    for r in 0..a.runs {
        for how in [How::Sigterm, How::Sigkill] {
            let stop = match how {
                How::Sigterm => node.stop()?,
                How::Sigkill => node.s.kill9()?,
            };
            node = Node::start(c, Some(&dir.path), &[]).await?;
            let health = node.ready;
            let pop = first_pop(&mut node, &c.queue, limit).await?;
            let x = Restart {
                how,
                stop_secs: stop.as_secs_f64(),
                health_secs: health.as_secs_f64(),
                pop_secs: pop.as_secs_f64(),
                rss_bytes: node.rss()?,
            };
            if !c.no_progress {
                eprintln!(
                    "restart {}/{} {how:?}: stop {:.2} s, /health {:.2} s, first pop {:.2} s",
                    r + 1,
                    a.runs,
                    x.stop_secs,
                    x.health_secs,
                    x.pop_secs
                );
            }
            runs.push(x);
        }
    }
    node.stop()?;
    Ok(report(a, &runs, disk, filled))
}

fn report(a: &RestartArgs, runs: &[Restart], disk: super::DirUsage, filled: Option<u64>) -> Report {
    let of = |how: How, f: fn(&Restart) -> f64| median(runs.iter().filter(|r| r.how == how).map(f).collect());
    let mut t = format!(
        "storage restart: {} runs of each, data {} MB on disk ({} MB of files){}, {}\n\n",
        a.runs,
        mb(disk.allocated as f64),
        mb(disk.apparent as f64),
        filled.map_or(String::new(), |n| format!(", {n} messages filled here")),
        exe_name(&a.common)
    );
    let mut rows = Vec::new();
    let mut summary = serde_json::Map::new();
    for how in [How::Sigterm, How::Sigkill] {
        let (stop, health, pop) = (of(how, |r| r.stop_secs), of(how, |r| r.health_secs), of(how, |r| r.pop_secs));
        let rss = of(how, |r| r.rss_bytes as f64);
        rows.push(vec![
            format!("{how:?}").to_lowercase(),
            format!("{stop:.2}"),
            format!("{health:.2}"),
            format!("{pop:.2}"),
            mb(rss),
            format!("{} (≤ {TARGET_SECS} s with 25 GB stored)", verdict(pop <= TARGET_SECS)),
        ]);
        summary.insert(
            format!("{how:?}").to_lowercase(),
            json!({"stop_secs": stop, "health_secs": health, "pop_secs": pop, "rss_bytes": rss,
                   "met": pop <= TARGET_SECS}),
        );
    }
    t += &super::table(
        &["stopped by", "stop s", "start → /health s", "start → first pop s", "RSS MB after", "target"],
        &rows,
    );
    t += "\n(medians; the start is timed from the spawn of the new process)\n";
    let json = json!({
        "scenario": "restart",
        "exe": exe_name(&a.common),
        "runs": a.runs,
        "data_disk_bytes": disk.allocated,
        "data_file_bytes": disk.apparent,
        "filled": filled,
        "median": summary,
        "all": runs,
        "target_secs": TARGET_SECS,
    });
    Report { table: t, json, failure: None }
}
