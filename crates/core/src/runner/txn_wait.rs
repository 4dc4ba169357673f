//! Transactions that would make more new partitions than spare directories are ready wait
//! for the provisioner to make them (D81): an HTTP transaction, and a Kafka EndTxn (or an
//! InitProducerId that fences an open transaction), whose markers go into every partition
//! of the transaction, some never written. Each is one entry planned at once (I2), so its
//! new partitions cannot be split over steps as a push's are (D80); made on the planner
//! they cost 0.1-3 ms each here, and one transaction of 1,000 held every other request
//! back for up to 3 s. Waiting, it plans nothing and holds nobody: pushes, pops and
//! transactions that find their directories ready go first. When its directories are ready
//! it is planned as a new command would be (not leading, storage failed), exactly once.
//! One short by only a few ([`DIRS_SLACK`]) does not wait: it makes those itself.
//!
//! A member that stops leading answers its waiting transactions `not_leader` at once.
//!
//! Bounds: waiting transactions count against `max_queued_requests` (past it `overloaded`),
//! and none waits longer than [`DIRS_WAIT_MAX`] (a full disk, or more wide transactions
//! than the filesystem makes directories for): it is then refused `overloaded`, nothing
//! written, rather than planned to make its files here, which would let a client that sends
//! wide transactions faster than directories are made hold the planner after all. One
//! needing more directories than the pool may hold (`--spare-partition-dirs`) does not wait.
//! A Kafka transaction's expiry defers itself the same way (ktxn_plan.rs).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{deferred, fail_cmd, PlannerLoop};
use crate::engine::Cmd;
use crate::ktxn_plan::TxnOp;
use crate::provision::{DIRS_SLACK, DIRS_WAIT_MAX};
use crate::txn::TxnOutcome;

/// How often the planner looks again while transactions wait.
pub(super) const POLL: Duration = Duration::from_millis(5);

/// Transactions (`Cmd::Txn`, `Cmd::KafkaTxn`) waiting for spare partition directories,
/// oldest first, each with the count it needed when last counted.
pub(super) type TxnWait = std::collections::VecDeque<(Instant, usize, Cmd)>;

impl PlannerLoop {
    /// A transaction as it arrives (the planner's clock already begun for it).
    pub(super) fn txn_cmd(&mut self, cmd: Cmd) {
        let need = self.dirs_needed(&cmd);
        if !self.short_of_dirs(need, DIRS_SLACK) {
            return self.txn_now(cmd);
        }
        if self.txn_wait.len() >= self.cfg.max_queued_requests {
            let e = self.overloaded(
                "too many transactions are waiting for new partition directories (max queued requests); retry shortly",
            );
            return fail_cmd(cmd, e);
        }
        self.shared.counters.txns_waited.fetch_add(1, Ordering::Relaxed);
        self.txn_wait.push_back((Instant::now(), need, cmd));
    }

    fn txn_now(&mut self, cmd: Cmd) {
        match cmd {
            Cmd::Txn(t, reply) => {
                let res = self.p.step(|p| p.transaction(t));
                if matches!(res, Ok(TxnOutcome::Committed(_))) {
                    self.shared.counters.txns.fetch_add(1, Ordering::Relaxed);
                }
                self.settle(deferred(reply, res));
            }
            Cmd::KafkaTxn(op, reply) => {
                let res = self.p.step(|p| p.kafka_txn(op));
                self.settle(deferred(reply, res));
            }
            _ => unreachable!("only transactions wait for directories"),
        }
    }

    /// The partition directories `cmd` would make: a lookup or two for each partition it
    /// names (at most `--max-transaction-partitions` or `--kafka-max-transaction-partitions`).
    fn dirs_needed(&self, cmd: &Cmd) -> usize {
        let state = &self.p.state;
        match cmd {
            Cmd::Txn(t, _) => t.pushes.iter().filter(|g| state.needs_directory(&g.queue, &g.partition)).count(),
            Cmd::KafkaTxn(TxnOp::End { tid, .. } | TxnOp::Init { tid, .. }, _) => state.txn_new_directories(tid),
            _ => 0,
        }
    }

    /// Whether work making `need` partition directories should wait: see
    /// [`crate::provision::Provisioner::short_of`] (which asks the pool for them).
    fn short_of_dirs(&self, need: usize, slack: usize) -> bool {
        self.p.state.storage.provisioner.as_deref().is_some_and(|p| p.short_of(need, slack))
    }

    /// Plans the waiting transactions whose directories are ready, and refuses those that
    /// waited [`DIRS_WAIT_MAX`]; plans every one of them when `all` (shutting down). A
    /// waiting transaction is counted again only once as many directories are ready as it
    /// last needed (or its wait is over): a pass over many waiting costs a comparison each,
    /// not a lookup per partition nor a message to the provisioner.
    pub(super) fn run_waiting_txns(&mut self, all: bool) {
        // A member that stopped leading answers them at once (`not_leader`: the client goes
        // to the new leader) rather than after their wait: none of them was planned.
        if !self.txn_wait.is_empty() && !self.shared.writable.load(Ordering::Acquire) {
            for (_, _, cmd) in std::mem::take(&mut self.txn_wait) {
                self.follow_cmd(cmd);
            }
            return;
        }
        let ready = self.p.state.storage.provisioner.as_deref().map_or(usize::MAX, |p| p.dirs_ready());
        let mut i = 0;
        while i < self.txn_wait.len() {
            let (since, need, cmd) = &self.txn_wait[i];
            let waited = since.elapsed();
            if !all && *need > ready && waited < DIRS_WAIT_MAX {
                i += 1;
                continue;
            }
            let need = self.dirs_needed(cmd);
            self.shared.counters.txn_wait_recounts.fetch_add(1, Ordering::Relaxed);
            if !all && self.short_of_dirs(need, 0) {
                if waited < DIRS_WAIT_MAX {
                    self.txn_wait[i].1 = need;
                    i += 1;
                    continue;
                }
                let (_, _, cmd) = self.txn_wait.remove(i).expect("index in range");
                let e = self.overloaded(format!(
                    "the transaction waited {} s for its new partitions' directories; nothing was written, retry",
                    waited.as_secs()
                ));
                fail_cmd(cmd, e);
                continue;
            }
            let (_, _, cmd) = self.txn_wait.remove(i).expect("index in range");
            if let Some(cmd) = self.recheck(cmd) {
                self.txn_now(cmd);
            }
        }
    }
}
