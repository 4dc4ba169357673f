//! `baton check`: Baton's proofs.
//!
//! - `pipeline`: the exactly-once pipeline verifier. A feeder pushes unique
//!   ids into an input queue, workers pop under a lease and commit one
//!   transaction per batch (ack the inputs + push the outputs), readers
//!   consume the output; at the end the whole logs are read back and judged
//!   ([`history::check`]). Optional fault injection: SIGKILL and restart the
//!   broker, abandon batches, commit on an expired lease.
//!
//! - `history`: `baton check history --check FILE`, the lease-queue history
//!   checker ([`lease::check`]): a recorded history of pushes, pops, acks,
//!   extends, transactions and Kafka operations with their intervals, faults
//!   and the final state, judged OK, VIOLATION or UNKNOWN (docs/check.md);
//!   `--spawn` / `--addr` record such a history first ([`lease::record`]).
//!
//! - `data`: `baton check data DIR`, a read-only check of a stopped node's data
//!   directory against docs/storage.md (`parts`: the partition files, `index`: the
//!   files beside a segment).
//!
//! Baton is spoken to through `baton-client` (crates/client), the one client
//! the bench and the CLI use too.

mod actors;
pub mod broker;
pub mod data;
pub mod history;
pub mod index;
pub mod lease;
pub mod members;
mod parts;
pub mod pipeline;
pub mod proxy;

use clap::{Args, Subcommand};

#[derive(Args, Debug)]
pub struct CheckArgs {
    #[command(subcommand)]
    pub cmd: CheckCmd,
}

#[derive(Subcommand, Debug)]
pub enum CheckCmd {
    /// Exactly-once pipeline: feed, pop + transform + commit one transaction per
    /// batch, read the output; then verify no loss, no duplicate, order kept,
    /// no rolled-back output. Exits non-zero on any violation.
    Pipeline(pipeline::PipelineArgs),
    /// A stopped node's data directory: checkpoint, log, partition files and their
    /// indexes, read without changing anything. One line per finding (damage, torn,
    /// stale, orphan); exits non-zero on damage. Refuses a directory a server holds.
    Data(data::DataArgs),
    /// A recorded history (JSONL, docs/check.md) against the lease-queue model: lost,
    /// phantom, redelivered after ack, double lease, stale ack, order, torn or rolled-back
    /// transactions, dedup, Kafka commits and idempotence. Exit 0 OK, 1 VIOLATION,
    /// 2 UNKNOWN, 3 unreadable. --spawn / --addr record one first: real clients against
    /// a real server, with a nemesis (kill, stop) under --spawn.
    History(lease::HistoryArgs),
}

/// Run a check; `Err` (exit status 1) on any violation or if the run could not be made.
pub fn run(a: CheckArgs) -> Result<(), String> {
    match a.cmd {
        CheckCmd::Pipeline(p) => {
            let report = pipeline::run(p)?;
            if report.verdict.ok() {
                Ok(())
            } else {
                Err(format!("check pipeline: {} violation(s)", report.verdict.total_violations()))
            }
        }
        CheckCmd::Data(d) => data::run(d),
        CheckCmd::History(h) => {
            // The verdict is the exit code (0 OK, 1 VIOLATION, 2 UNKNOWN), and the
            // binary's `Err` path can only say 1: exit here, after the report is out.
            let code = match lease::run(h) {
                Ok(code) => code,
                Err(e) => {
                    eprintln!("baton: check history: {e}");
                    3
                }
            };
            use std::io::Write as _;
            let _ = std::io::stdout().flush();
            std::process::exit(code)
        }
    }
}
