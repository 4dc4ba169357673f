//! `baton check history`: judge a recorded history of lease-queue (and Kafka)
//! operations against the sequential model of a lease queue, with interval
//! reasoning as porcupine does: an operation took effect at one instant
//! between its invocation and its completion, a failed one not at all, an
//! unknown one maybe, at any instant after its invocation.
//!
//! - `event`: one JSONL line (the format, docs/check.md);
//! - `model`: the history read and interned, the streaming reader;
//! - `index`: the lookups the rules share (attribution of acks and log entries);
//! - `writes`: lost, phantom, rolled back, torn transactions, dedup, Kafka duplicates;
//! - `leases`: redelivery after ack, double leases, stale acks, order, unsettled losses;
//! - `kafka`: committed offsets as a register;
//! - `verdict`: OK / VIOLATION / UNKNOWN and the report;
//! - `generate`: a correct lease queue simulated, with injectable bugs (the
//!   checker's own tests and the `--generate` benchmark input);
//! - `record`: `--spawn` / `--addr`: real clients against a real broker, a
//!   nemesis, the final state read, written in this format and judged.
//!
//! [`check`] is pure: no I/O, no clock. Every rule is conservative: it flags
//! only what no placement of the operations inside their intervals allows,
//! and where the history cannot decide it says UNKNOWN.

mod event;
pub mod generate;
mod index;
mod kafka;
mod leases;
pub mod model;
pub mod record;
pub mod verdict;
mod writes;

#[cfg(test)]
mod sim_tests;
#[cfg(test)]
mod tests;

pub use model::{parse_str, read, History, Time};
pub use verdict::{Kind, Status, Verdict, Why};

use clap::Args;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, BufWriter, Write as _};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Debug, Clone, Copy)]
pub struct Params {
    /// How far the broker's lease clock may run ahead of or behind the recorder's
    /// over one lease: subtracted from every "certainly live", added to every
    /// "certainly over".
    pub skew_us: Time,
}

impl Default for Params {
    fn default() -> Self {
        Params { skew_us: 100_000 }
    }
}

/// Judge a history.
pub fn check(h: &History, p: &Params) -> Verdict {
    let mut v = Verdict {
        lines: h.lines,
        partitions: h.parts.len() as u64,
        faults: h.faults.len() as u64,
        ..Default::default()
    };
    for name in model::OP_NAMES {
        v.ops.insert(name, Default::default());
    }
    for op in &h.ops {
        let c = v.ops.get_mut(op.call.name()).expect("every op name is listed");
        match op.outcome {
            model::Outcome::Ok => c.ok += 1,
            model::Outcome::Failed => c.failed += 1,
            model::Outcome::Unknown => c.unknown += 1,
        }
        if let model::Call::Pop { got: Some(g), .. } = &op.call {
            v.deliveries += g.msgs.len() as u64;
        }
    }
    v.ops.retain(|_, c| c.ok + c.failed + c.unknown > 0);
    v.messages = h.logs.values().map(|l| l.entries.iter().filter(|e| e.line != 0).count() as u64).sum();
    let ix = index::Ix::build(h, &mut v);
    writes::check(h, &ix, p.skew_us, &mut v);
    leases::check(h, &ix, p.skew_us, &mut v);
    kafka::check(h, &mut v);
    v.conclude();
    v
}

#[derive(Args, Debug, Clone)]
pub struct HistoryArgs {
    /// The history to judge: JSONL, one operation invocation or completion, fault or
    /// final-state section per line (docs/check.md). Or record one: --spawn / --addr.
    #[arg(long, value_name = "FILE", required_unless_present_any = ["generate", "spawn", "addr"])]
    pub check: Option<PathBuf>,
    /// Clock skew margin between the broker's lease clock and the recorder's, in ms.
    #[arg(long, default_value_t = 100)]
    pub skew_ms: u64,
    /// Print the verdict as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Write a synthetic, correct history of N messages to --out and exit (benchmark input).
    #[arg(long, value_name = "N", requires = "out", conflicts_with = "check")]
    pub generate: Option<u64>,
    /// Where --generate, --spawn and --addr write the history (default for a recording:
    /// baton-history-SEED.jsonl in the temp directory).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Seed of --generate and of a recording's clients and nemesis.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub record: record::RecordArgs,
}

/// Run the CLI; `Ok(exit code)`: 0 OK, 1 VIOLATION, 2 UNKNOWN. `Err` (exit 3): the
/// history could not be read, or --generate could not write.
pub fn run(a: HistoryArgs) -> Result<i32, String> {
    if let Some(n) = a.generate {
        let out = a.out.expect("clap requires --out");
        let f = std::fs::File::create(&out).map_err(|e| format!("{}: {e}", out.display()))?;
        let t = Instant::now();
        let mut w = BufWriter::with_capacity(1 << 20, f);
        let cfg = generate::Config::bench(n, a.seed);
        let stats = generate::run(&cfg, &mut w).map_err(|e| format!("{}: {e}", out.display()))?;
        w.flush().map_err(|e| format!("{}: {e}", out.display()))?;
        eprintln!(
            "wrote {} lines ({} messages) to {} in {:.1} s",
            stats.lines,
            stats.messages,
            out.display(),
            t.elapsed().as_secs_f64()
        );
        return Ok(0);
    }
    if a.record.wanted() {
        return record::run(&a);
    }
    let path = a.check.expect("clap requires --check without --generate, --spawn or --addr");
    judge(&path, a.skew_ms, a.json)
}

/// Read, judge and print the verdict of the history at `path`; `Ok(exit code)`.
fn judge(path: &std::path::Path, skew_ms: u64, json: bool) -> Result<i32, String> {
    let open = || std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()));
    let t0 = Instant::now();
    let h = read(BufReader::with_capacity(1 << 20, open()?)).map_err(|e| format!("{}: {e}", path.display()))?;
    let t1 = Instant::now();
    let v = check(&h, &Params { skew_us: skew_ms.saturating_mul(1000) });
    let t2 = Instant::now();
    drop(h);
    let excerpt = excerpts(open()?, &v)?;
    let (read_s, check_s) = ((t1 - t0).as_secs_f64(), (t2 - t1).as_secs_f64());
    let rate = v.messages as f64 / (read_s + check_s).max(1e-9);
    if json {
        let mut j = serde_json::to_value(&v).map_err(|e| e.to_string())?;
        j["excerpts"] = serde_json::to_value(&excerpt).map_err(|e| e.to_string())?;
        j["read_s"] = read_s.into();
        j["check_s"] = check_s.into();
        j["messages_per_s"] = rate.into();
        println!("{}", serde_json::to_string(&j).map_err(|e| e.to_string())?);
    } else {
        print!("{}", v.render(&|l| excerpt.get(&l).cloned()));
        println!("\nelapsed               read {read_s:.2} s + check {check_s:.2} s ({rate:.0} messages/s)");
    }
    Ok(v.status.exit_code())
}

/// The text of every line a finding names, read back from the file.
fn excerpts(f: std::fs::File, v: &Verdict) -> Result<BTreeMap<u32, String>, String> {
    let mut want: Vec<u32> = v
        .violations
        .iter()
        .flat_map(|x| x.lines.iter())
        .chain(v.unknowns.iter().flat_map(|u| u.lines.iter()))
        .copied()
        .collect();
    want.sort_unstable();
    want.dedup();
    let mut out = BTreeMap::new();
    if want.is_empty() {
        return Ok(out);
    }
    let mut r = BufReader::with_capacity(1 << 20, f);
    let mut line = String::new();
    let mut no = 0u32;
    let mut next = want.iter().peekable();
    while let Some(&&w) = next.peek() {
        line.clear();
        if r.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
            break;
        }
        no += 1;
        if no == w {
            out.insert(no, line.trim_end().to_owned());
            next.next();
        }
    }
    Ok(out)
}
