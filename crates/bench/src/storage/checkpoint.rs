//! `storage checkpoint`: a steady open-loop push at R msg/s for D seconds
//! with consumers popping and acking, while a sampler watches the server's
//! `baton_checkpoints_total`; at each new checkpoint it records what the
//! checkpoint wrote. Issue 18's target: ≤ 10 MB written per checkpoint at a
//! steady 10,000 msg/s.
//!
//! "Written by a checkpoint" is counted as the whole size of every file of
//! the data directory, other than WAL segments (`wal/`) and partition segments
//! (`*.seg`, `.spare/`, `.spare-parts/`), that is new or changed (length, mtime or inode) since
//! the previous checkpoint: exact for files rewritten whole (`checkpoint.bin`,
//! renamed over); for a file that is the same inode and only grew, its growth
//! (the `.idx`/`.txid` index files are only appended to, D29); an upper bound
//! for any other change in place.
//! Beside it the process's own write_bytes (/proc/<pid>/io) per interval, the
//! WAL's bytes (`baton_wal_bytes_total`) and the partition segments' growth, so a
//! checkpoint that writes elsewhere still shows. The server runs with
//! `--wal-preallocate false` so zero-filled WAL segments do not swamp the process
//! figure. Owns the sampler; must never take part in the load it measures.

use super::{dir_usage, exe_name, io_write_bytes, mb, median, metric, verdict, Common, Node, Report};
use crate::baton::BatonHttp;
use crate::target::Target;
use crate::workload;
use clap::Args;
use serde_json::json;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const TARGET_BYTES: u64 = 10_000_000;

#[derive(Args, Debug, Clone)]
pub struct CheckpointArgs {
    #[command(flatten)]
    pub common: Common,
    /// Offered push rate, msg/s (open loop).
    #[arg(long, default_value_t = 10_000)]
    pub rate: u64,
    /// Seconds of load.
    #[arg(long, default_value_t = 60.0)]
    pub duration: f64,
    /// The server's --checkpoint-interval-secs.
    #[arg(long, default_value_t = 10)]
    pub checkpoint_interval_secs: u64,
    /// Partitions pushed to, round-robin.
    #[arg(long, default_value_t = 8)]
    pub partitions: u32,
    /// Messages per push request.
    #[arg(long, default_value_t = 10)]
    pub batch: u64,
    /// Payload bytes per message.
    #[arg(long, default_value_t = 256)]
    pub size: usize,
    /// Push connections of the open loop.
    #[arg(long, default_value_t = 64)]
    pub workers: usize,
    /// Consumers (closed loop: pop up to --consume-batch, ack them, again).
    #[arg(long, default_value_t = 4)]
    pub consumers: usize,
    #[arg(long, default_value_t = 100)]
    pub consume_batch: u64,
}

/// Files a checkpoint may write: all but the WAL and partition segment data.
fn state_files(root: &Path) -> HashMap<PathBuf, (u64, i64, i64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = HashMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            let name = e.file_name();
            let name = name.to_string_lossy();
            let Ok(m) = e.metadata() else { continue };
            let top = d == root;
            if m.is_dir() {
                let data = (top && name == "wal") || name == ".spare" || name == ".spare-parts";
                if !data {
                    stack.push(p);
                }
            } else {
                let skip = name.ends_with(".seg") || (top && name == "LOCK");
                if !skip {
                    out.insert(p, (m.len(), m.mtime(), m.mtime_nsec(), m.ino()));
                }
            }
        }
    }
    out
}

fn seg_bytes(root: &Path) -> u64 {
    dir_usage(&root.join("partitions")).apparent
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Ckpt {
    pub at_secs: f64,
    /// Checkpoints counted by the server up to this one (several between two samples show as one).
    pub counter: u64,
    pub checkpoint_bin_bytes: u64,
    /// Bytes of new or changed state files since the previous checkpoint.
    pub state_written_bytes: u64,
    pub changed_files: u64,
    pub process_written_bytes: u64,
    pub wal_bytes: u64,
    pub segment_growth_bytes: u64,
    pub rss_bytes: u64,
}

struct Base {
    files: HashMap<PathBuf, (u64, i64, i64, u64)>,
    io: u64,
    wal: u64,
    seg: u64,
}

/// Poll /metrics every 100 ms until `stop`; one [`Ckpt`] per increase of the counter.
async fn sample(node: &Node, stop: Arc<AtomicBool>, t0: Instant) -> Result<Vec<Ckpt>, String> {
    let dir = node.s.data_dir().to_path_buf();
    let pid = node.s.pid();
    let read = |text: &str, name: &str| metric(text, name).map(|v| v as u64);
    let m = node.client.metrics().await.map_err(|e| format!("metrics: {e}"))?;
    let mut count = read(&m, "baton_checkpoints_total").ok_or("no baton_checkpoints_total in /metrics")?;
    let mut base = Base {
        files: state_files(&dir),
        io: io_write_bytes(pid)?,
        wal: read(&m, "baton_wal_bytes_total").unwrap_or(0),
        seg: seg_bytes(&dir),
    };
    let mut out = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let Ok(m) = node.client.metrics().await else { continue };
        let Some(n) = read(&m, "baton_checkpoints_total") else { continue };
        if n <= count {
            continue;
        }
        count = n;
        let files = state_files(&dir);
        let (mut written, mut changed) = (0, 0);
        for (p, v) in &files {
            match base.files.get(p) {
                Some(old) if old == v => {}
                // The same file, only longer: appended to (the `.idx`/`.txid` index files
                // beside each segment, D29, are only ever appended at their end).
                Some(old) if old.3 == v.3 && v.0 >= old.0 => {
                    written += v.0 - old.0;
                    changed += 1;
                }
                _ => {
                    written += v.0;
                    changed += 1;
                }
            }
        }
        let (io, wal, seg) = (io_write_bytes(pid)?, read(&m, "baton_wal_bytes_total").unwrap_or(0), seg_bytes(&dir));
        out.push(Ckpt {
            at_secs: t0.elapsed().as_secs_f64(),
            counter: n,
            checkpoint_bin_bytes: std::fs::metadata(dir.join("checkpoint.bin")).map_or(0, |m| m.len()),
            state_written_bytes: written,
            changed_files: changed,
            process_written_bytes: io.saturating_sub(base.io),
            wal_bytes: wal.saturating_sub(base.wal),
            segment_growth_bytes: seg.saturating_sub(base.seg),
            rss_bytes: node.rss().unwrap_or(0),
        });
        base = Base { files, io, wal, seg };
    }
    Ok(out)
}

pub async fn run(a: &CheckpointArgs) -> Result<Report, String> {
    if a.rate == 0 || a.partitions == 0 || a.batch == 0 || a.size == 0 || a.workers == 0 || a.consumers == 0 {
        return Err("--rate, --partitions, --batch, --size, --workers and --consumers must be positive".into());
    }
    if !(a.duration > 0.0 && a.duration <= 86_400.0) || a.checkpoint_interval_secs == 0 {
        return Err("--duration must be in (0, 86400] seconds, --checkpoint-interval-secs positive".into());
    }
    let c = &a.common;
    let extra = [
        "--checkpoint-interval-secs".to_string(),
        a.checkpoint_interval_secs.to_string(),
        "--wal-preallocate".into(),
        "false".into(),
    ];
    let mut node = Node::start(c, None, &extra).await?;
    let target = Arc::new(BatonHttp::new(&node.s.url, a.workers + a.consumers, 2000)?);
    target.setup(&c.queue, a.partitions).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let progress = !c.no_progress;
    let load = async {
        let push = workload::open_loop(
            target.clone(),
            a.workers,
            a.size,
            a.batch,
            a.partitions,
            a.rate,
            Duration::from_secs_f64(a.duration),
            Duration::from_secs(1),
            Duration::from_secs(5),
            progress,
        );
        let pop = workload::consume(target.clone(), a.consumers, a.consume_batch, None, Duration::from_secs(5), false);
        let r = tokio::join!(push, pop);
        stop.store(true, Ordering::Relaxed);
        r
    };
    let (ckpts, (pushed, popped)) = tokio::join!(sample(&node, stop.clone(), t0), load);
    let secs = t0.elapsed().as_secs_f64();
    let ckpts = ckpts.map_err(|e| node.explain(e))?;
    let died = node.s.check_alive().err().map(|e| e.0);
    if died.is_none() {
        node.stop()?;
    }
    let mut problems = Vec::new();
    if pushed.errors + popped.errors > 0 {
        problems.push(format!(
            "{} push and {} pop/ack errors, first: {}",
            pushed.errors,
            popped.errors,
            pushed.first_error.clone().or(popped.first_error.clone()).unwrap_or_default()
        ));
    }
    if let Some(d) = died {
        problems.push(format!("the server died: {d}"));
    }
    let rows: Vec<Vec<String>> = ckpts
        .iter()
        .map(|k| {
            vec![
                k.counter.to_string(),
                format!("{:.1}", k.at_secs),
                mb(k.checkpoint_bin_bytes as f64),
                format!("{} ({} files)", mb(k.state_written_bytes as f64), k.changed_files),
                mb(k.process_written_bytes as f64),
                mb(k.wal_bytes as f64),
                mb(k.segment_growth_bytes as f64),
                mb(k.rss_bytes as f64),
            ]
        })
        .collect();
    let mut t = format!(
        "storage checkpoint: {} msg/s offered for {} s ({} B, {} per push, {} partitions), {} consumers acking, \
         checkpoint every {} s, {}\n\n",
        a.rate,
        a.duration,
        a.size,
        a.batch,
        a.partitions,
        a.consumers,
        a.checkpoint_interval_secs,
        exe_name(c)
    );
    t += &super::table(
        &[
            "checkpoint",
            "at s",
            "checkpoint.bin MB",
            "state files written MB",
            "process writes MB (interval)",
            "WAL MB (interval)",
            "segments grew MB",
            "RSS MB",
        ],
        &rows,
    );
    let written: Vec<f64> = ckpts.iter().map(|k| k.state_written_bytes as f64).collect();
    let max = written.iter().copied().fold(0.0, f64::max);
    let med = median(written.clone());
    t += &format!(
        "\npushed {} of {} offered ({:.0} msg/s), popped and acked {}; {} checkpoints in {secs:.1} s\n",
        pushed.delivered + pushed.answered_late,
        pushed.offered,
        (pushed.delivered + pushed.answered_late) as f64 / pushed.secs.max(1e-9),
        popped.msgs,
        ckpts.len()
    );
    t += &format!(
        "written per checkpoint: median {} MB, max {} MB: {} (≤ 10 MB)\n",
        mb(med),
        mb(max),
        if ckpts.is_empty() { "no checkpoint seen".to_string() } else { verdict(max <= TARGET_BYTES as f64).into() }
    );
    let json = json!({
        "scenario": "checkpoint",
        "exe": exe_name(c),
        "rate": a.rate, "duration_secs": a.duration, "checkpoint_interval_secs": a.checkpoint_interval_secs,
        "partitions": a.partitions, "batch": a.batch, "size": a.size, "workers": a.workers, "consumers": a.consumers,
        "offered": pushed.offered, "pushed": pushed.delivered + pushed.answered_late, "push_errors": pushed.errors,
        "popped": popped.msgs, "pop_errors": popped.errors,
        "push_p99_us": pushed.latency.summary().p99_us,
        "checkpoints": ckpts,
        "median_written_bytes": med, "max_written_bytes": max,
        "target": {"max_bytes": TARGET_BYTES, "met": !ckpts.is_empty() && max <= TARGET_BYTES as f64},
    });
    Ok(Report {
        table: t,
        json,
        failure: (!problems.is_empty()).then(|| format!("storage checkpoint: {}", problems.join("; "))),
    })
}
