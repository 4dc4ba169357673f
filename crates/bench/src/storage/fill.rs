//! `storage fill`: push N messages of S bytes across P partitions of one
//! queue (batched pushes from a few closed-loop workers) and sample the
//! server's RSS and the data directory's disk bytes at every 10 % of N.
//!
//! Issue 18's target: 100M messages in 1,000 partitions in at most 300 MB of
//! RSS, flat from 10M to 100M. Owns the fill and its samples ([`fill_into`]
//! is reused by `restart`); must never fill a data directory that already
//! holds data (its counts would be wrong) nor delete one it was given.

use super::{dir_usage, exe_name, mb, verdict, Common, DataDir, Node, Report};
use crate::baton::BatonHttp;
use crate::target::Target;
use crate::workload::{self, Stop};
use clap::Args;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// RSS the issue allows with 100M stored messages.
pub const TARGET_RSS: u64 = 300_000_000;

#[derive(Args, Debug, Clone)]
pub struct FillArgs {
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub fill: FillParams,
    /// Fill this data directory (absent or empty) and keep it, for `restart --data`;
    /// by default a temp dir, deleted at the end.
    #[arg(long)]
    pub data: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
pub struct FillParams {
    /// Messages to store.
    #[arg(long, default_value_t = 100_000)]
    pub count: u64,
    /// Payload bytes per message.
    #[arg(long, default_value_t = 256)]
    pub size: usize,
    /// Partitions of the queue ("p0".."pN-1"), written round-robin.
    #[arg(long, default_value_t = 10)]
    pub partitions: u32,
    /// Concurrent push workers, one connection each.
    #[arg(long, default_value_t = 4)]
    pub workers: usize,
    /// Messages per push request.
    #[arg(long, default_value_t = 100)]
    pub batch: u64,
    /// Set the queue's `dedupWindowSeconds` before filling (the pushes carry transaction ids,
    /// so with the default window of an hour every message of a fill shorter than that is
    /// in the dedup window, ~60 bytes of memory each; 0 measures storage alone).
    #[arg(long)]
    pub dedup_window_secs: Option<u64>,
}

impl FillParams {
    pub fn check(&self) -> Result<(), String> {
        if self.count < 10 || self.size == 0 || self.partitions == 0 || self.workers == 0 || self.batch == 0 {
            return Err("--count must be at least 10; --size, --partitions, --workers and --batch positive".into());
        }
        Ok(())
    }
}

/// One sample of a fill.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Sample {
    pub stored: u64,
    pub rss_bytes: u64,
    pub disk_bytes: u64,
    pub secs: f64,
}

pub struct Filled {
    pub samples: Vec<Sample>,
    pub pushed: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    pub secs: f64,
    /// The queue's depth as the server counts it after the fill.
    pub depth: Option<u64>,
}

/// Fill `queue` on `node` as `p` says, sampling at 0 and every 10 %. Stops at the first
/// tenth that had errors (the rest would measure a failing server).
pub async fn fill_into(node: &Node, queue: &str, p: &FillParams, progress: bool) -> Result<Filled, String> {
    let target = Arc::new(BatonHttp::new(&node.s.url, p.workers.max(8), 1000)?);
    target.setup(queue, p.partitions).await?;
    if let Some(w) = p.dedup_window_secs {
        node.client
            .configure(queue, serde_json::json!({ "dedupWindowSeconds": w }))
            .await
            .map_err(|e| format!("configure {queue}: {e}"))?;
    }
    let sample = |stored: u64, t0: Instant| -> Result<Sample, String> {
        Ok(Sample {
            stored,
            rss_bytes: node.rss()?,
            disk_bytes: dir_usage(node.s.data_dir()).allocated,
            secs: t0.elapsed().as_secs_f64(),
        })
    };
    let t0 = Instant::now();
    let mut samples = vec![sample(0, t0)?];
    let (mut pushed, mut errors, mut first_error) = (0u64, 0u64, None);
    for tenth in 1..=10u64 {
        let upto = p.count * tenth / 10;
        let m = workload::produce(
            target.clone(),
            p.workers,
            p.size,
            p.batch,
            p.partitions,
            Stop::Count(upto - pushed),
            false,
        )
        .await;
        pushed += m.msgs;
        errors += m.errors;
        if first_error.is_none() {
            first_error = m.first_error;
        }
        let s = sample(pushed, t0)?;
        if progress {
            eprintln!(
                "fill: {:>3} %  {pushed:>11} stored  RSS {:>8} MB  disk {:>9} MB  {:>7.1} s",
                tenth * 10,
                mb(s.rss_bytes as f64),
                mb(s.disk_bytes as f64),
                s.secs
            );
        }
        samples.push(s);
        if errors > 0 {
            break;
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    let depth = node.client.depth(queue).await.ok().and_then(|v| v["depth"].as_u64());
    Ok(Filled { samples, pushed, errors, first_error, secs, depth })
}

/// RSS bytes per stored message between the 10 % and the last sample.
pub fn slope(samples: &[Sample]) -> Option<f64> {
    let (a, b) = (samples.get(1)?, samples.last()?);
    (b.stored > a.stored).then(|| (b.rss_bytes as f64 - a.rss_bytes as f64) / (b.stored - a.stored) as f64)
}

/// "Flat": RSS grew from the 10 % sample to the last by at most a tenth of the
/// 10 % sample, or 16 MB, whichever is more (allocator arenas, page-cache noise).
pub fn flat(samples: &[Sample]) -> bool {
    match (samples.get(1), samples.last()) {
        (Some(a), Some(b)) => b.rss_bytes.saturating_sub(a.rss_bytes) <= (a.rss_bytes / 10).max(16_000_000),
        _ => false,
    }
}

pub async fn run(a: &FillArgs) -> Result<Report, String> {
    a.fill.check()?;
    if let Some(d) = &a.data {
        if std::fs::read_dir(d).is_ok_and(|mut r| r.next().is_some()) {
            return Err(format!(
                "--data {}: not empty; fill counts from zero (to measure a filled directory use `restart --data`)",
                d.display()
            ));
        }
    }
    let dir = DataDir::new(a.data.as_deref())?;
    let mut node = Node::start(&a.common, Some(&dir.path), &[]).await?;
    let res = fill_into(&node, &a.common.queue, &a.fill, !a.common.no_progress).await;
    let f = match res {
        Ok(f) => f,
        Err(e) => return Err(node.explain(e)),
    };
    let alive = node.s.check_alive();
    let stop_secs = match alive {
        Ok(()) => Some(node.stop()?.as_secs_f64()),
        Err(_) => None,
    };
    Ok(report(a, &f, stop_secs, alive.err().map(|e| e.0)))
}

fn report(a: &FillArgs, f: &Filled, stop_secs: Option<f64>, died: Option<String>) -> Report {
    let p = &a.fill;
    let rows: Vec<Vec<String>> = f
        .samples
        .iter()
        .map(|s| {
            vec![
                s.stored.to_string(),
                mb(s.rss_bytes as f64),
                mb(s.disk_bytes as f64),
                if s.stored > 0 { format!("{:.0}", s.disk_bytes as f64 / s.stored as f64) } else { "-".into() },
                format!("{:.1}", s.secs),
            ]
        })
        .collect();
    let mut t = format!(
        "storage fill: {} messages of {} B in {} partitions ({} workers, {} per push), {}\n\n",
        p.count,
        p.size,
        p.partitions,
        p.workers,
        p.batch,
        exe_name(&a.common)
    );
    t += &super::table(&["stored messages", "RSS MB", "disk MB", "disk B/msg", "at s"], &rows);
    let last = f.samples.last().copied();
    let rss = last.map_or(0, |s| s.rss_bytes);
    let slope = slope(&f.samples);
    let flat = flat(&f.samples);
    let rate = if f.secs > 0.0 { f.pushed as f64 / f.secs } else { 0.0 };
    t += &format!(
        "\npushed {} in {:.1} s ({rate:.0} msg/s), {} errors; the server's depth: {}\n",
        f.pushed,
        f.secs,
        f.errors,
        f.depth.map_or("?".into(), |d| d.to_string())
    );
    t += &format!(
        "RSS slope (10 % → 100 %): {} bytes per stored message\n",
        slope.map_or("-".into(), |s| format!("{s:.2}"))
    );
    t += &format!(
        "RSS at the end {} MB; ≤ 300 MB (issue target at 100M in 1,000 partitions): {}; flat from 10 % to 100 %: {}\n",
        mb(rss as f64),
        verdict(rss <= TARGET_RSS),
        verdict(flat)
    );
    if let Some(s) = stop_secs {
        t += &format!("clean stop (SIGTERM → exit): {s:.2} s\n");
    }
    let mut problems = Vec::new();
    if f.errors > 0 {
        problems.push(format!("{} push errors, first: {}", f.errors, f.first_error.clone().unwrap_or_default()));
    }
    if f.pushed != p.count && f.errors == 0 {
        problems.push(format!("pushed {} of {}", f.pushed, p.count));
    }
    if let Some(d) = &died {
        problems.push(format!("the server died: {d}"));
    }
    let json = json!({
        "scenario": "fill",
        "exe": exe_name(&a.common),
        "count": p.count, "size": p.size, "partitions": p.partitions, "workers": p.workers, "batch": p.batch,
        "pushed": f.pushed, "errors": f.errors, "first_error": f.first_error, "depth": f.depth,
        "secs": f.secs, "rate": rate,
        "samples": f.samples,
        "rss_bytes": rss,
        "disk_bytes": last.map_or(0, |s| s.disk_bytes),
        "rss_slope_bytes_per_msg": slope,
        "stop_secs": stop_secs,
        "target": {"rss_max_bytes": TARGET_RSS, "rss_met": rss <= TARGET_RSS, "flat": flat},
    });
    Report { table: t, json, failure: (!problems.is_empty()).then(|| format!("storage fill: {}", problems.join("; "))) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(stored: u64, rss: u64) -> Sample {
        Sample { stored, rss_bytes: rss, disk_bytes: 0, secs: 0.0 }
    }

    #[test]
    fn slope_is_from_the_tenth_to_the_end() {
        let v = [s(0, 10_000_000), s(100, 50_000_000), s(1000, 50_000_900)];
        assert_eq!(slope(&v), Some(1.0));
        assert!(flat(&v));
        assert_eq!(slope(&v[..1]), None);
        let grew = [s(0, 0), s(100, 100_000_000), s(1000, 150_000_000)];
        assert!(!flat(&grew));
    }
}
