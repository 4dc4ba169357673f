//! The planner's side of a cluster member (D40): committed frames from Raft applied as
//! replay applies them, leadership gained and lost, and the rebuild after a lost term.
//!
//! Owns the rule that a member plans only while it leads, and that a state which planned
//! what Raft may not commit is never kept: a rebuild throws it away, loads the checkpoint,
//! and the caller replays the committed frames after it. Must never apply a frame twice
//! (frames at or below what the state holds are skipped), never apply one out of order,
//! and never answer ok for a request planned on a state it threw away.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{restored_leases, Frame, PlannerLoop};
use crate::appender::Joined;
use crate::command::CoreError;
use crate::engine::{open_state, Cmd, Reload};
use crate::entry::decode_entries;
use crate::plan::Planner;

/// Long enough for any appender backlog or checkpoint in flight; a rebuild that waits longer
/// latches instead of going on over a disk that does not answer.
const QUIET: Duration = Duration::from_secs(60);

impl PlannerLoop {
    /// Handles a member's own commands; hands every other command back.
    pub(super) fn member_cmd(&mut self, cmd: Cmd) -> Option<Cmd> {
        match cmd {
            Cmd::Apply(index, frame) => self.apply_committed(index, &frame),
            Cmd::Barrier(reply) => {
                let _ = reply.send(self.submitted);
            }
            Cmd::Promote(me, reply) => {
                self.promote(me);
                let _ = reply.send(self.submitted);
            }
            Cmd::Demote(leader) => {
                self.shared.writable.store(false, Ordering::Release);
                *self.shared.leader_hint.lock() = leader;
            }
            Cmd::Rebuild(from, reply) => {
                let r = self.rebuild(from);
                if let Err(e) = &r {
                    self.shared.latch(format!("rebuilding the state after a lost term: {e}"));
                }
                let _ = reply.send(r);
            }
            other => return Some(other),
        }
        None
    }

    pub(super) fn not_leader(&self) -> CoreError {
        let hint = self.shared.leader_hint.lock().clone();
        let who = if hint.is_empty() { "no leader is known yet".to_string() } else { format!("the leader is {hint}") };
        CoreError::new(
            crate::command::ErrorKind::Unavailable,
            "not_leader",
            format!("this node does not lead its cluster; {who}: send writes and pops there"),
        )
    }

    /// Applies one committed frame, unless the state already holds it. Its partition bytes
    /// go through the appender like a planned frame's, and it counts as durable (committed)
    /// once they are written, which is what a checkpoint of it waits for.
    fn apply_committed(&mut self, index: u64, frame: &[u8]) {
        if index <= self.submitted || self.failed().is_some() {
            return;
        }
        let entries = match decode_entries(frame) {
            Ok(e) => e,
            Err(e) => return self.shared.latch(format!("committed frame {index} does not decode: {e}")),
        };
        for e in &entries {
            // I1: the same apply as replay; a refusal here is a disk fault, never the frame's.
            if let Err(err) = self.p.state.apply(e) {
                return self.shared.latch(format!("applying committed frame {index}: {err}"));
            }
        }
        self.submitted = index;
        self.p.state.applied_index = index;
        let writes = std::mem::take(&mut self.p.state.pending_writes);
        let frame = Box::new(Frame {
            entries: Vec::new(),
            replies: Vec::new(),
            marks: Vec::new(),
            woken: Vec::new(),
            shared: self.shared.clone(),
            join: None,
            epoch: self.shared.epoch.load(Ordering::Acquire),
        });
        match self.appender.begin(writes).join(&self.shared.counters.frames_written_inline) {
            None => frame.finish(Ok(index)),
            Some(j) => j.wal_done(frame, Ok(index)),
        }
    }

    /// What a member that does not lead answers itself: a read of its state while that state
    /// holds only committed frames (a stale read, never a phantom one: not after it planned,
    /// until it is rebuilt); everything else is refused `not_leader` (D42).
    pub(super) fn follow_cmd(&mut self, cmd: Cmd) {
        match cmd {
            Cmd::Query(q, reply) if !self.planned => {
                let _ = reply.send(Ok(crate::query::run(&self.p.state, q)));
            }
            other => super::fail_cmd(other, self.not_leader()),
        }
    }

    /// From here on this member plans: everything applied becomes visible (a follower's
    /// partitions were never read, so their watermarks were left behind), long polls look
    /// at the leases it inherited, and the first frame it plans may be the key's.
    fn promote(&mut self, me: String) {
        if !self.wait_quiet() {
            return self.shared.latch("promotion: the partition appender did not finish its backlog".into());
        }
        for p in self.p.state.parts.values() {
            p.publish_all();
        }
        self.lease_expiries = restored_leases(&self.p.state);
        *self.shared.leader_hint.lock() = me;
        self.planned = true;
        self.shared.writable.store(true, Ordering::Release);
        self.ensure_hash_key();
        // I5 across terms, the other way from D41: a predecessor whose clock ran ahead left
        // entries in the future of this member's clock; time goes on from them (D46).
        match crate::clock::not_behind(&self.cfg.data_dir, self.p.state.last_ts) {
            Ok(true) => tracing::warn!(
                last_entry = self.p.state.last_ts,
                "this member's clock was behind the log's last entry: moved forward to it (D46)"
            ),
            Ok(false) => {}
            Err(e) => return self.shared.latch(format!("promotion: {e}")),
        }
        self.p.begin(crate::engine::wall_micros());
        match self.p.step(|p| p.inherit_leases()) {
            Ok(n) if n > 0 => tracing::info!(leases = n, "inherited leases extended by a full lease time (I5)"),
            Ok(_) => {}
            Err(e) => self.shared.latch(format!("extending inherited leases: {e}")),
        }
        self.settle(Box::new(|_| {}));
        for p in self.p.state.parts.values() {
            for c in p.cursors.values() {
                if let Some(l) = &c.lease {
                    self.lease_expiries.push(std::cmp::Reverse((l.expires, p.queue, Some(p.id))));
                }
            }
        }
    }

    /// Whether the appender and any checkpoint in flight finished within [`QUIET`].
    fn wait_quiet(&self) -> bool {
        let deadline = Instant::now() + QUIET;
        while !self.appender.idle() || self.checkpoint_busy.load(Ordering::Acquire) {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }

    fn rebuild(&mut self, from: Reload) -> Result<u64, String> {
        self.shared.writable.store(false, Ordering::Release);
        // Whatever was planned goes to the log now (it commits or fails there); nothing of it
        // is answered from this state again.
        self.flush(false);
        self.shared.epoch.fetch_add(1, Ordering::AcqRel);
        let unknown = || CoreError::outcome_unknown("leadership was lost: the outcome of this request is unknown");
        let waiting: Vec<_> = self.shared.durable.lock().1.drain(..).map(|(_, r)| r).collect();
        for r in waiting.into_iter().chain(self.parked.drain(..)) {
            r(Err(unknown()));
        }
        if !self.wait_quiet() {
            return Err("the partition appender or a checkpoint did not finish within 60 s".into());
        }
        if let Some(prov) = self.p.state.storage.provisioner.take() {
            prov.barrier().map_err(|e| format!("placing partition files before the rebuild: {e}"))?;
        }
        // The writeback thread finishes what the old state handed it before any file moves.
        let (done, wrote) = std::sync::mpsc::channel();
        if self.writeback.send((Vec::new(), Vec::new(), Some(done))).is_ok() && wrote.recv_timeout(QUIET).is_err() {
            return Err("the writeback thread did not finish within 60 s".into());
        }
        if let Reload::Install = from {
            // The files of the state thrown away stay open until it is dropped below; they
            // are renamed away, never written again (D43).
            crate::install::commit_staged(&self.cfg.data_dir)?;
        }
        let (state, next) = open_state(&self.cfg, None)?;
        *self.shared.files.lock() = state.storage.store.clone();
        // The old thread's store has the old files open (after an install, other inodes).
        self.writeback = super::spawn_writeback(state.storage.store.clone());
        self.p = Planner::with_limits(state, self.cfg.limits.clone());
        self.submitted = next - 1;
        self.checkpointed_index = self.p.state.applied_index;
        self.lease_expiries = restored_leases(&self.p.state);
        self.frame_bytes = 0;
        {
            let mut d = self.shared.durable.lock();
            d.0 = self.submitted;
            self.shared.durable_index.store(self.submitted, Ordering::Release);
        }
        *self.shared.failed.lock() = None;
        self.planned = false;
        tracing::warn!(index = self.submitted, "state rebuilt from the checkpoint after a lost term");
        Ok(self.submitted)
    }
}
