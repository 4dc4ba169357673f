//! HTTP transactions that would make more new partitions than spare directories are ready
//! wait for the provisioner to make them (D81). A transaction is one entry planned at once
//! (I2), so its new partitions cannot be split over steps as a push's are (D80); made on the
//! planner they cost 0.1-3 ms each here, and one transaction of 1,000 held every other
//! request back for up to 3 s. Waiting, it plans nothing and holds nobody: pushes, pops and
//! transactions that find their directories ready go first. When its directories are ready
//! it is planned as a new command would be (not leading, storage failed), exactly once.
//! A transaction short by only a few ([`SHORT_BY`]) does not wait: it makes those itself.
//!
//! Bounds: waiting transactions count against `max_queued_requests` (past it `overloaded`),
//! and none waits longer than [`WAIT_MAX`] (a full disk, or more wide transactions than the
//! filesystem makes directories for): it is then refused `overloaded`, nothing written,
//! rather than planned to make its files here, which would let a client that sends wide
//! transactions faster than directories are made hold the planner after all. A transaction
//! needing more directories than the pool may hold (`--spare-partition-dirs`) does not wait.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::{deferred, PlannerLoop};
use crate::command::CoreError;
use crate::engine::Cmd;
use crate::txn::{TxnOutcome, TxnRequest};

type TxnReply = oneshot::Sender<Result<TxnOutcome, CoreError>>;

/// Longest a transaction waits for spare directories before it is refused.
pub(super) const WAIT_MAX: Duration = Duration::from_secs(10);

/// A transaction short of at most this many directories does not start to wait: making
/// them here costs at most a few tens of ms, about one push step (D80), and a workload that
/// makes a partition or two per transaction faster than the provisioner refills keeps its
/// latency. Once waiting, a transaction waits for all of its directories.
pub(super) const SHORT_BY: usize = 16;

/// How often the planner looks again while transactions wait.
pub(super) const POLL: Duration = Duration::from_millis(5);

/// Transactions waiting for spare partition directories, oldest first.
pub(super) type TxnWait = std::collections::VecDeque<(Instant, TxnRequest, TxnReply)>;

impl PlannerLoop {
    /// An HTTP transaction as it arrives (the planner's clock already begun for it).
    pub(super) fn txn_cmd(&mut self, t: TxnRequest, reply: TxnReply) {
        if !self.needs_dirs(&t, SHORT_BY) {
            return self.txn_now(t, reply);
        }
        if self.txn_wait.len() >= self.cfg.max_queued_requests {
            let _ = reply.send(Err(self.overloaded(
                "too many transactions are waiting for new partition directories (max queued requests); retry shortly",
            )));
            return;
        }
        self.shared.counters.txns_waited.fetch_add(1, Ordering::Relaxed);
        self.txn_wait.push_back((Instant::now(), t, reply));
    }

    fn txn_now(&mut self, t: TxnRequest, reply: TxnReply) {
        let res = self.p.step(|p| p.transaction(t));
        if matches!(res, Ok(TxnOutcome::Committed(_))) {
            self.shared.counters.txns.fetch_add(1, Ordering::Relaxed);
        }
        self.settle(deferred(reply, res));
    }

    /// Whether `t` would make more partition directories than are ready, by more than
    /// `slack`, and the pool could hold them all: it then asks the provisioner for them.
    fn needs_dirs(&self, t: &TxnRequest, slack: usize) -> bool {
        let Some(prov) = self.p.state.storage.provisioner.as_deref() else { return false };
        // At most --max-transaction-partitions groups, a lookup or two each.
        let need = t.pushes.iter().filter(|g| self.p.state.needs_directory(&g.queue, &g.partition)).count();
        if need <= prov.dirs_ready().saturating_add(slack) {
            return false;
        }
        if need > prov.dirs_max() {
            return false;
        }
        prov.want_dirs(need);
        true
    }

    /// Plans the waiting transactions whose directories are ready, and refuses those that
    /// waited [`WAIT_MAX`]; plans every one of them when `all` (shutting down).
    pub(super) fn run_waiting_txns(&mut self, all: bool) {
        let mut i = 0;
        while i < self.txn_wait.len() {
            let (since, t, _) = &self.txn_wait[i];
            let waited = since.elapsed();
            if !all && self.needs_dirs(t, 0) {
                if waited < WAIT_MAX {
                    i += 1;
                    continue;
                }
                let (_, _, reply) = self.txn_wait.remove(i).expect("index in range");
                let _ = reply.send(Err(self.overloaded(format!(
                    "the transaction waited {} s for its new partitions' directories; nothing was written, retry",
                    waited.as_secs()
                ))));
                continue;
            }
            let (_, t, reply) = self.txn_wait.remove(i).expect("index in range");
            if let Some(Cmd::Txn(t, reply)) = self.recheck(Cmd::Txn(t, reply)) {
                self.txn_now(t, reply);
            }
        }
    }
}
