//! The planner thread: drains commands, plans them into entries, hands each
//! batch to the WAL as one frame, and answers from the frame's completion.
//!
//! I3 is enforced here: a request's answer is sent from the completion of the
//! frame holding its entry, after its fdatasync and after its batches are in
//! the partition files (the appender, D18); frames complete in order. A
//! request that changed nothing still waits for every frame planned before it,
//! because what it saw (a duplicate, say) may rest on those. Must never answer
//! success from a failed or latched WAL or appender: those answers are 503
//! with the reason. Never blocks on disk while it has anything else to plan:
//! the WAL writer, the appender and the checkpoint thread do. With nothing
//! else to plan it may write and sync its frame itself (D84).
//!
//! The log numbers frames (`baton_log::Log`), never the planner. A frame is
//! bounded by `Limits::max_frame_bytes` (plus the one entry that crossed it),
//! so a batch of large requests can never make a frame the log must refuse.
//! I2 is enforced here too: a request the planner refused after it emitted an
//! effect (a partial plan) is never logged; the node latches instead, since
//! its in-memory state already holds the half that was applied (D1).

mod checkpointing;
#[cfg(test)]
mod hold_tests;
mod member;
mod produce_steps;
mod push_steps;
mod txn_wait;

use crate::appender::{Appender, Join, Joined};
use crate::command::*;
use crate::engine::{wall_micros, Cmd, EngineConfig, Reply, Shared};
use crate::entry::{encode_entries, Entry};
use crate::model::*;
use crate::plan::Planner;
use crate::query;
use baton_log::{Log, WalError, WalItem};
use crossbeam_channel::{Receiver, RecvTimeoutError};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// How long a frame may be held back for a log's backlog (D75), and how often the backlog
/// is looked at meanwhile.
pub(super) const MAX_HOLD: Duration = Duration::from_millis(2);
pub(super) const HOLD_POLL: Duration = Duration::from_micros(100);

/// One group-commit frame: the entries of one planner batch and who waits on them.
struct Frame {
    entries: Vec<Entry>,
    replies: Vec<Reply>,
    marks: Vec<(Arc<AtomicU64>, u64)>,
    /// Queues that got messages (or a released lease) in this frame, and how many of their
    /// partitions did: their waiters are woken when the frame is durable.
    woken: Vec<(String, usize)>,
    shared: Arc<Shared>,
    /// Set when the frame's batches go to partition files on the appender (D18):
    /// the frame completes when both the WAL and the appender are done.
    join: Option<Arc<Join>>,
    /// The state it was planned on (D40): its failure latches only that state.
    epoch: u64,
}

impl WalItem for Frame {
    fn encode(&self, buf: &mut Vec<u8>) {
        encode_entries(&self.entries, buf);
    }

    fn complete(mut self: Box<Self>, result: Result<u64, WalError>) {
        let result = result.map_err(|e| e.to_string());
        match self.join.take() {
            Some(j) => j.wal_done(self, result),
            None => self.finish(result),
        }
    }
}

impl Joined for Frame {
    fn finish(self: Box<Self>, result: Result<u64, String>) {
        match result {
            Ok(idx) => {
                for (m, v) in &self.marks {
                    m.fetch_max(*v, Ordering::AcqRel);
                }
                for r in self.replies {
                    r(Ok(()));
                }
                self.shared.on_durable(idx);
                for (queue, parts) in &self.woken {
                    self.shared.wake(queue, *parts);
                }
            }
            Err(e) => {
                self.shared.latch_epoch(self.epoch, e.clone());
                for r in self.replies {
                    r(Err(CoreError::outcome_unknown(format!("not durable: {e}"))));
                }
            }
        }
    }
}

pub(crate) struct PlannerLoop {
    p: Planner,
    log: Arc<dyn Log>,
    appender: Appender,
    shared: Arc<Shared>,
    cfg: EngineConfig,
    /// Index of the last frame handed to the WAL.
    submitted: u64,
    last_checkpoint: Instant,
    last_writeback: Instant,
    /// Partition files whose writeback a background thread should start.
    writeback: std::sync::mpsc::Sender<Writeback>,
    checkpointed_index: u64,
    checkpoint_busy: Arc<std::sync::atomic::AtomicBool>,
    /// (time, queue) at which long polls of the queue should look again: lease expiries, delayed messages.
    /// When to look again: a lease's expiry (with its partition) or a delayed message's
    /// due time (no partition: only the queue's waiters are woken).
    lease_expiries: BinaryHeap<Reverse<(Micros, QueueId, Option<PartId>)>>,
    frame_entries: Vec<Entry>,
    frame_replies: Vec<Reply>,
    /// `approx_bytes` of `frame_entries`.
    frame_bytes: usize,
    /// Replies of requests that changed nothing; they wait for `submitted` at the time.
    parked: Vec<Reply>,
    /// Since when the open frame is held back while the log has a backlog (D75).
    holding: Option<Instant>,
    /// Where the expired-KV sweep goes on at the next tick.
    kv_sweep: crate::kv::SweepCursor,
    last_prune: Instant,
    /// This state planned (led) since it was loaded: it may hold what Raft never commits,
    /// so it answers no read until it is rebuilt (D42).
    planned: bool,
    /// Pushes with groups still to plan, oldest first (D80): one step of the oldest runs
    /// after each batch of commands.
    continued: std::collections::VecDeque<push_steps::PushRest>,
    /// Kafka produces waiting for a pass with planner time left for new files (D80).
    waiting: produce_steps::Waiting,
    /// Transactions (HTTP, and Kafka ends) waiting for spare partition directories (D81, D82).
    txn_wait: txn_wait::TxnWait,
}

impl PlannerLoop {
    pub(crate) fn new(
        p: Planner,
        log: Arc<dyn Log>,
        appender: Appender,
        shared: Arc<Shared>,
        cfg: EngineConfig,
        submitted: u64,
    ) -> Self {
        let lease_expiries = restored_leases(&p.state);
        let writeback = spawn_writeback(p.state.storage.store.clone());
        PlannerLoop {
            checkpointed_index: p.state.applied_index,
            checkpoint_busy: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            p,
            log,
            appender,
            shared,
            cfg,
            submitted,
            last_checkpoint: Instant::now(),
            last_writeback: Instant::now(),
            writeback,
            lease_expiries,
            frame_entries: Vec::new(),
            frame_replies: Vec::new(),
            frame_bytes: 0,
            holding: None,
            parked: Vec::new(),
            kv_sweep: None,
            last_prune: Instant::now(),
            planned: false,
            continued: Default::default(),
            waiting: Default::default(),
            txn_wait: Default::default(),
        }
    }

    pub(crate) fn run(mut self, rx: Receiver<Cmd>) {
        // A cluster member plans nothing until it leads (D40): it chooses the key then.
        if self.shared.writable.load(Ordering::Acquire) {
            self.ensure_hash_key();
        }
        let tick = Duration::from_millis(100);
        let mut next_tick = Instant::now() + tick;
        loop {
            let mut timeout = next_tick.saturating_duration_since(Instant::now());
            if self.holding.is_some() {
                timeout = timeout.min(HOLD_POLL);
            }
            if !self.txn_wait.is_empty() {
                timeout = timeout.min(txn_wait::POLL);
            }
            if !self.continued.is_empty() || !self.waiting.is_empty() {
                timeout = Duration::ZERO;
            }
            self.waiting.new_pass();
            let first = match rx.recv_timeout(timeout) {
                Ok(c) => Some(c),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => break,
            };
            let mut stop = None;
            if let Some(c) = first {
                let mut cmd = Some(c);
                let mut n = 0;
                while let Some(c) = cmd.take() {
                    if let Cmd::Shutdown(done) = c {
                        stop = Some(done);
                        break;
                    }
                    self.handle(c);
                    n += 1;
                    self.shared.counters.commands.fetch_add(1, Ordering::Relaxed);
                    if n >= 4096 {
                        break;
                    }
                    cmd = rx.try_recv().ok();
                }
            }
            self.run_waiting_produces(stop.is_some());
            self.run_waiting_txns(stop.is_some());
            if stop.is_some() {
                // Shutting down: every push in steps is finished, and answered by the last flush.
                while !self.continued.is_empty() {
                    self.continue_push();
                }
            } else {
                self.continue_push();
            }
            if Instant::now() >= next_tick {
                self.on_tick();
                next_tick = Instant::now() + tick;
            }
            if self.hold_frame(stop.is_some()) {
                continue;
            }
            // Nothing else to plan: the log may write this frame on this thread (D84).
            let idle = stop.is_none() && rx.is_empty() && self.continued.is_empty() && self.waiting.is_empty();
            self.flush(idle);
            if let Some(done) = stop {
                self.log.shutdown();
                if let Err(e) = self.checkpoint(true) {
                    tracing::error!(error = %e, "final checkpoint failed");
                }
                let _ = done.send(());
                return;
            }
        }
        self.log.shutdown();
    }

    fn ensure_hash_key(&mut self) {
        self.p.begin(wall_micros());
        let keyed = self.p.step(|p| p.ensure_hash_key());
        if let Err(e) = keyed {
            self.shared.latch(format!("choosing the transaction-id key: {e}"));
        }
        self.settle(Box::new(|_| {}));
    }

    /// Whether to keep adding to the open frame instead of handing it over now: while the
    /// log has a frame it has not begun to write (D75), one more frame would only queue
    /// behind it and cost a write of its own, since openraft writes a cluster member's
    /// proposals one at a time and waits for each one's sync. At most `MAX_HOLD`, and never
    /// past half a frame.
    fn hold_frame(&mut self, stopping: bool) -> bool {
        let hold = !stopping
            && !self.frame_entries.is_empty()
            && self.frame_bytes < self.p.limits.max_frame_bytes / 2
            && self.log.backlog();
        match (hold, self.holding) {
            (true, None) => {
                self.holding = Some(Instant::now());
                self.shared.counters.frames_held.fetch_add(1, Ordering::Relaxed);
                true
            }
            (true, Some(since)) if since.elapsed() < MAX_HOLD => true,
            (true, Some(_)) => {
                self.shared.counters.holds_timed_out.fetch_add(1, Ordering::Relaxed);
                false
            }
            (false, _) => false,
        }
    }

    /// Hand the planned entries to the WAL as one frame; park answers that need no entry.
    /// `idle`: nothing else waits to be planned, so the log may make the frame durable on
    /// this thread before it returns, saving the hand-off to its writer (D84).
    fn flush(&mut self, idle: bool) {
        self.holding = None;
        let parked = std::mem::take(&mut self.parked);
        if !self.frame_entries.is_empty() {
            let mut marks = Vec::new();
            let mut woken = Vec::new();
            for (q, pushed) in self.p.pushed_queues.drain() {
                if let Some(queue) = self.p.state.queues.get(&q) {
                    let mut grown = 0;
                    for part in pushed.iter().filter_map(|pid| self.p.state.parts.get(pid)) {
                        // The stable end first: a reader that sees the new durable end
                        // then finds a stable end at least as new (D48).
                        marks.push((part.stable.clone(), part.planned_stable()));
                        if part.durable_end() < part.end {
                            marks.push((part.durable.clone(), part.end));
                            grown += 1;
                        }
                    }
                    // A released lease opens one partition even when nothing was pushed.
                    woken.push((queue.name.clone(), grown.max(1)));
                }
            }
            let writes = std::mem::take(&mut self.p.state.pending_writes);
            let join = self.appender.begin(writes).join(&self.shared.counters.frames_written_inline);
            self.frame_bytes = 0;
            let frame = Frame {
                entries: std::mem::take(&mut self.frame_entries),
                replies: std::mem::take(&mut self.frame_replies),
                marks,
                woken,
                shared: self.shared.clone(),
                join,
                epoch: self.shared.epoch.load(Ordering::Acquire),
            };
            self.shared.counters.entries.fetch_add(frame.entries.len() as u64, Ordering::Relaxed);
            self.submitted = match idle {
                true => self.log.append_idle(Box::new(frame)),
                false => self.log.append(Box::new(frame)),
            };
            self.p.state.applied_index = self.submitted;
        }
        if parked.is_empty() {
            return;
        }
        let mut d = self.shared.durable.lock();
        // Checked under the waiters' lock: a latch after this drains what is parked here.
        if let Some(e) = self.failed() {
            drop(d);
            for r in parked {
                r(Err(e.clone()));
            }
        } else if d.0 >= self.submitted {
            drop(d);
            for r in parked {
                r(Ok(()));
            }
        } else {
            for r in parked {
                d.1.push_back((self.submitted, r));
            }
        }
    }

    /// Counts a pop's messages and schedules its lease's expiry.
    fn popped(&mut self, res: &Result<Option<PopResult>, CoreError>) {
        if let Ok(Some(r)) = res {
            self.shared.counters.popped.fetch_add(r.messages.len() as u64, Ordering::Relaxed);
            if let (Some(_), Some(q)) = (r.lease, self.p.state.queue_ids.get(&r.queue)) {
                self.lease_expiries.push(Reverse((r.lease_expires, *q, Some(r.part))));
            }
        }
    }

    /// Record the result of planning one request: its entry joins the frame and
    /// its answer waits for that frame; no entry means it waits for what came before.
    fn settle(&mut self, reply: Reply) {
        for (t, q) in self.p.wakeups.drain(..) {
            self.lease_expiries.push(Reverse((t, q, None)));
        }
        match self.p.finish() {
            Ok(Some(e)) => {
                self.frame_bytes += e.approx_bytes();
                self.frame_entries.push(e);
                self.frame_replies.push(reply);
                if self.frame_bytes >= self.p.limits.max_frame_bytes {
                    self.flush(false);
                }
            }
            Ok(None) => self.parked.push(reply),
            Err(broken) => {
                // Its effects are already in the state but must never reach the log: stop
                // taking writes; a restart rebuilds from the log without them.
                self.shared.latch(format!("planner refused a request after planning part of it: {broken}"));
                reply(Err(CoreError::unavailable(format!("not applied: {broken}"))));
            }
        }
    }

    /// A command that waited (D80, D81) is checked as `handle` checks a new one, since nothing
    /// of it was planned yet. Returned when it may be planned now (the clock begun for it);
    /// otherwise it was sent to the leader or refused, exactly once.
    fn recheck(&mut self, cmd: Cmd) -> Option<Cmd> {
        if !self.shared.writable.load(Ordering::Acquire) {
            self.follow_cmd(cmd);
            return None;
        }
        if let Some(e) = self.failed() {
            fail_cmd(cmd, e);
            return None;
        }
        self.p.begin(wall_micros());
        Some(cmd)
    }

    /// Work refused because waiting work is at its bound (`overloaded`, 429): counted as the
    /// planner queue's own refusals are.
    fn overloaded(&self, why: impl Into<String>) -> CoreError {
        self.shared.counters.overloaded.fetch_add(1, Ordering::Relaxed);
        CoreError::new(ErrorKind::Overloaded, "overloaded", why)
    }

    fn failed(&self) -> Option<CoreError> {
        self.shared
            .failed
            .lock()
            .as_ref()
            .map(|r| CoreError::unavailable(format!("storage failed, refusing writes: {r}")))
    }

    fn handle(&mut self, cmd: Cmd) {
        let Some(cmd) = self.member_cmd(cmd) else { return };
        if !self.shared.writable.load(Ordering::Acquire) {
            return self.follow_cmd(cmd);
        }
        let writes = !matches!(cmd, Cmd::Query(..) | Cmd::Fetch(..));
        if writes {
            if let Some(e) = self.failed() {
                return fail_cmd(cmd, e);
            }
        }
        self.p.begin(wall_micros());
        match cmd {
            Cmd::Push(groups, reply) => self.push_cmd(groups, reply),
            Cmd::Pop(req, reply) => {
                let res = self.p.step(|p| p.pop(&req));
                self.popped(&res);
                self.settle(deferred(reply, res));
            }
            Cmd::PopAny(req, queues, reply) => {
                let res = self.p.step(|p| p.pop_any(&req, &queues));
                self.popped(&res);
                self.settle(deferred(reply, res));
            }
            Cmd::Ack(group, items, reply) => {
                let res = self.p.ack(group.as_deref(), &items);
                let n = res.iter().filter(|r| r.is_ok()).count();
                self.shared.counters.acked.fetch_add(n as u64, Ordering::Relaxed);
                self.settle(deferred(reply, Ok(res)));
            }
            Cmd::Extend(lease, secs, reply) => {
                let res = self.p.step(|p| p.extend(lease, secs));
                if let (Ok(exp), Some((part, _))) = (&res, self.p.state.leases.get(&lease)) {
                    if let Some(p) = self.p.state.parts.get(part) {
                        self.lease_expiries.push(Reverse((*exp, p.queue, Some(*part))));
                    }
                }
                self.settle(deferred(reply, res));
            }
            Cmd::Configure(queue, patch, mode, reply) => {
                let current = self.p.state.queue(&queue).map(|q| q.options.clone());
                let base = match (mode, current) {
                    (ConfigureMode::Merge, Some(c)) => c,
                    _ => QueueOptions::default(),
                };
                let opts = patch.apply_to(base);
                let res = self.p.step(|p| p.configure(&queue, opts.clone())).map(|_| opts);
                self.settle(deferred(reply, res));
            }
            Cmd::Seek { group, queue, partition, to_ts, to_end, reply } => {
                let res = reserved(&group)
                    .and_then(|_| self.p.step(|p| p.seek(&group, &queue, partition.as_deref(), to_ts, to_end)));
                self.settle(deferred(reply, res));
            }
            Cmd::DeleteMessage(part, txid, offset, reply) => {
                let res = self.p.step(|p| p.delete_message(part, &txid, offset));
                self.settle(deferred(reply, res));
            }
            Cmd::RetryMessage(part, txid, offset, reply) => {
                let res = self.p.step(|p| p.retry_message(part, &txid, offset));
                self.settle(deferred(reply, res));
            }
            Cmd::DeleteGroupOnQueue(g, q, reply) => {
                let res = reserved(&g).and_then(|_| self.p.step(|p| p.delete_group_on_queue(&g, &q)));
                self.settle(deferred(reply, res));
            }
            Cmd::DeleteGroup(g, reply) => {
                let res = reserved(&g).and_then(|_| self.p.step(|p| p.delete_group(&g)));
                self.settle(deferred(reply, res));
            }
            Cmd::DeleteQueue(q, reply) => {
                let res = self.p.step(|p| p.delete_queue(&q));
                self.settle(deferred(reply, res));
            }
            c @ (Cmd::Txn(..) | Cmd::KafkaTxn(..)) => self.txn_cmd(c),
            Cmd::Produce(r, reply) => self.produce_cmd(r, reply),
            Cmd::CreateTopic(t, n, configs, reply) => {
                let res = self.p.step(|p| {
                    let made = p.create_topic(&t, n)?;
                    if !configs.is_empty() {
                        p.topic_configs(&t, &configs, true, false)?;
                    }
                    Ok(made)
                });
                self.settle(deferred(reply, res));
            }
            Cmd::InitProducer(reply) => {
                let res = self.p.step(|p| p.init_producer());
                self.settle(deferred(reply, res));
            }
            Cmd::TopicConfigs(topic, ops, replace, validate_only, reply) => {
                let res = self.p.step(|p| p.topic_configs(&topic, &ops, replace, validate_only));
                self.settle(deferred(reply, res));
            }
            Cmd::DeleteRecords(topic, parts, reply) => {
                let res = parts.iter().map(|(p, o)| self.p.step(|pl| pl.delete_records(&topic, p, *o))).collect();
                self.settle(deferred(reply, Ok(res)));
            }
            Cmd::DeleteOffsets(g, t, parts, reply) => {
                let res = reserved(&g).map(|_| self.p.delete_offsets(&g, &t, &parts));
                self.settle(deferred(reply, res));
            }
            Cmd::Commit(g, t, offs, reply) => {
                let res = reserved(&g).map(|_| self.p.commit_offsets(&g, &t, &offs));
                self.settle(deferred(reply, res));
            }
            Cmd::Kv(ops, reply) => {
                let res = self.p.step(|p| p.kv(&ops));
                self.settle(deferred(reply, res));
            }
            Cmd::Timers(ops, reply) => {
                let res = self.p.step(|p| p.timers(&ops));
                self.settle(deferred(reply, res));
            }
            Cmd::Query(q, reply) => {
                // The state holds what is planned but not yet durable: the answer waits, as a
                // request that changed nothing does (D2), so a read never shows what a crash
                // could still undo.
                let res = query::run(&self.p.state, q);
                self.parked.push(deferred(reply, Ok(res)));
            }
            Cmd::Fetch(reqs, reply) => {
                let _ = reply.send(query::fetch(&self.p.state, reqs));
            }
            Cmd::Shutdown(_) => unreachable!("handled by the loop"),
            Cmd::Apply(..) | Cmd::Barrier(_) | Cmd::Promote(..) | Cmd::Demote(_) | Cmd::Rebuild(..) => {
                unreachable!("handled by member_cmd")
            }
        }
    }

    fn on_tick(&mut self) {
        if self.last_writeback.elapsed() >= Duration::from_secs(1) {
            self.last_writeback = Instant::now();
            let prov = self.p.state.storage.provisioner.clone();
            // Only the partitions listed since the last sweep (D31), not all of them.
            let ids = std::mem::take(&mut *self.p.state.storage.store.waiting.sweep.lock());
            let parts = &mut self.p.state.parts;
            let (mut files, mut tails) = (Vec::new(), Vec::new());
            for id in &ids {
                if let Some(f) = parts.get_mut(id).and_then(|p| p.files.as_mut()) {
                    let (file, t) = f.sweep(prov.as_deref());
                    files.extend(file);
                    tails.extend(t);
                }
            }
            if !files.is_empty() || !tails.is_empty() {
                let _ = self.writeback.send((files, tails, None));
            }
            self.p.state.confirm_index_writes();
            self.p.state.compaction_tick();
        }
        // A member that does not lead plans nothing (D40), from a request or from a tick: a
        // lease expiry planned here would take an index the leader gives another entry, and
        // the committed entry at that index would then be taken for this one.
        if self.shared.writable.load(Ordering::Acquire) {
            self.plan_tick();
        } else {
            // The leader expires these; promotion rebuilds the heap from the state. Dropped
            // here so a long-lived follower's heap holds only leases still running.
            let now = wall_micros();
            while self.lease_expiries.peek().is_some_and(|Reverse((t, _, _))| *t <= now) {
                self.lease_expiries.pop();
            }
        }
        if self.failed().is_some() {
            return;
        }
        self.settle(Box::new(|_| {}));
        if self.last_prune.elapsed() >= Duration::from_secs(10) {
            self.last_prune = Instant::now();
            self.shared.prune_notifiers();
        }
        if self.last_checkpoint.elapsed() >= self.cfg.checkpoint_interval {
            if let Err(e) = self.checkpoint(false) {
                self.checkpoint_failed(&self.shared.clone(), e);
            }
        }
    }

    /// What time alone makes happen: leases run out, retention, timers fire, expired KV
    /// entries go. Planned; the tick then settles them like any request.
    fn plan_tick(&mut self) {
        let now = wall_micros();
        let mut due = Vec::new();
        while self.lease_expiries.peek().is_some_and(|Reverse((t, _, _))| *t <= now) {
            let Reverse((_, q, part)) = self.lease_expiries.pop().expect("peeked");
            due.push((q, part));
        }
        if self.failed().is_some() {
            return;
        }
        self.p.begin(now);
        due.sort_unstable();
        due.dedup();
        // Only the partitions whose lease is due: looking at every partition of the queue
        // cost each tick O(partitions) (issue 18: 100,000 partitions).
        for (_, part) in &due {
            // The mutant's leases run out only when the partition is next popped, so its
            // unfenced acks find them (crates/log/src/mutant.rs).
            #[cfg(feature = "mutants")]
            if baton_log::mutant::is("ack-unfenced") {
                continue;
            }
            if let Some(part) = part {
                if let Err(e) = self.p.expire_partition_leases(*part) {
                    tracing::error!(error = %e, "expiring leases failed");
                }
            }
        }
        let mut queues: Vec<QueueId> = due.iter().map(|(q, _)| *q).collect();
        queues.dedup();
        for q in queues {
            if let Some(queue) = self.p.state.queues.get(&q) {
                self.shared.wake_all(&queue.name);
            }
        }
        if let Err(e) = self.p.retention() {
            tracing::error!(error = %e, "retention planning failed");
        }
        if let Err(e) = self.p.fire_timers() {
            tracing::error!(error = %e, "firing timers failed");
        }
        if let Err(e) = self.p.sweep_kv(&mut self.kv_sweep, KV_SWEEP_PER_TICK) {
            tracing::error!(error = %e, "sweeping expired KV entries failed");
        }
    }
}

/// Keys the expired-KV sweep looks at per tick (10 per second): 10,000 keys a tick cost the
/// planner well under a millisecond.
const KV_SWEEP_PER_TICK: usize = 10_000;

/// What the sweep hands the writeback thread each second: files to start writeback of,
/// and index records to write (D31).
/// The third part, when there, is answered once everything sent before it is done (a
/// rebuild waits for it: nothing of a thrown-away state may be written after it).
type Writeback = (Vec<Arc<std::fs::File>>, Vec<crate::store::TailWrite>, Option<std::sync::mpsc::Sender<()>>);

/// The thread that writes the sweep's index records and starts writeback of partition
/// files every second, off the planner. A record it fails to write stays in its tail on
/// the planner, and the next checkpoint writes it.
pub(super) fn spawn_writeback(store: Arc<crate::files::Store>) -> std::sync::mpsc::Sender<Writeback> {
    let (tx, rx) = std::sync::mpsc::channel::<Writeback>();
    let spawned = std::thread::Builder::new().name("baton-writeback".into()).spawn(move || {
        baton_log::priority::lower_this_thread();
        for (files, tails, done) in rx {
            for t in tails {
                if let Err(e) = t.write(&store) {
                    tracing::debug!(path = %t.path().display(), error = %e, "index records left to the checkpoint");
                }
            }
            for f in files {
                crate::store::start_writeback(&f);
            }
            if let Some(done) = done {
                let _ = done.send(());
            }
        }
    });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "no writeback thread: checkpoints will write partition data in one burst");
    }
    tx
}

/// Leases restored from disk: long polls must wake when they expire, as for
/// leases granted by this process.
fn restored_leases(state: &crate::state::State) -> BinaryHeap<Reverse<(Micros, QueueId, Option<PartId>)>> {
    state
        .parts
        .values()
        .flat_map(|p| {
            p.cursors.values().filter_map(move |c| c.lease.as_ref().map(|l| Reverse((l.expires, p.queue, Some(p.id)))))
        })
        .collect()
}

/// I6: the queue-mode group holds every queue's acks; deleting or moving it would deliver
/// acked messages again, so no admin call or Kafka commit may name it.
fn reserved(group: &str) -> Result<(), CoreError> {
    if group == QUEUE_MODE {
        return Err(CoreError::bad(
            "reserved_group",
            format!("{QUEUE_MODE} is the queue-mode group: it cannot be deleted, moved or committed"),
        ));
    }
    Ok(())
}

fn deferred<T: Send + 'static>(tx: oneshot::Sender<Result<T, CoreError>>, value: Result<T, CoreError>) -> Reply {
    Box::new(move |durable| {
        let _ = tx.send(durable.and(value));
    })
}

fn fail_cmd(cmd: Cmd, e: CoreError) {
    match cmd {
        Cmd::Push(_, r) => drop(r.send(Err(e))),
        Cmd::Pop(_, r) => drop(r.send(Err(e))),
        Cmd::PopAny(_, _, r) => drop(r.send(Err(e))),
        Cmd::Ack(_, _, r) => drop(r.send(Err(e))),
        Cmd::Extend(_, _, r) => drop(r.send(Err(e))),
        Cmd::Configure(_, _, _, r) => drop(r.send(Err(e))),
        Cmd::Seek { reply, .. } => drop(reply.send(Err(e))),
        Cmd::DeleteGroup(_, r) => drop(r.send(Err(e))),
        Cmd::DeleteGroupOnQueue(_, _, r) => drop(r.send(Err(e))),
        Cmd::DeleteMessage(_, _, _, r) => drop(r.send(Err(e))),
        Cmd::RetryMessage(_, _, _, r) => drop(r.send(Err(e))),
        Cmd::DeleteQueue(_, r) => drop(r.send(Err(e))),
        Cmd::Txn(_, r) => drop(r.send(Err(e))),
        Cmd::Produce(_, r) => drop(r.send(Err(e))),
        Cmd::CreateTopic(_, _, _, r) => drop(r.send(Err(e))),
        Cmd::InitProducer(r) => drop(r.send(Err(e))),
        Cmd::KafkaTxn(_, r) => drop(r.send(Err(e))),
        Cmd::DeleteRecords(_, _, r) => drop(r.send(Err(e))),
        Cmd::TopicConfigs(.., r) => drop(r.send(Err(e))),
        Cmd::DeleteOffsets(_, _, _, r) => drop(r.send(Err(e))),
        Cmd::Commit(_, _, _, r) => drop(r.send(Err(e))),
        Cmd::Kv(_, r) => drop(r.send(Err(e))),
        Cmd::Timers(_, r) => drop(r.send(Err(e))),
        Cmd::Query(_, r) => drop(r.send(Err(e))),
        Cmd::Fetch(..) | Cmd::Shutdown(_) => {}
        Cmd::Apply(..) | Cmd::Barrier(_) | Cmd::Promote(..) | Cmd::Demote(_) | Cmd::Rebuild(..) => {}
    }
}
