//! The planner loop's checkpoints: when one is taken, the snapshot of the state as of the
//! last submitted frame, and the thread that writes it once that frame is durable and then
//! retires the log before it. Must never write a snapshot whose frame is not durable, nor
//! one of a state a rebuild has thrown away (D40), nor run two at once.

use super::PlannerLoop;
use crate::checkpoint::{self, CheckpointError};
use crate::engine::Shared;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl PlannerLoop {
    pub(super) fn checkpoint_failed(&self, shared: &Shared, e: CheckpointError) {
        checkpoint_failed(shared, e)
    }

    /// Snapshot the state as of the last submitted frame. The file work runs on
    /// its own thread unless `sync_now` (shutdown); either way the snapshot is
    /// only written once its frame is durable.
    pub(super) fn checkpoint(&mut self, sync_now: bool) -> Result<(), CheckpointError> {
        self.flush(false);
        self.last_checkpoint = Instant::now();
        if self.p.state.applied_index == self.checkpointed_index && !self.p.state.compaction_unsaved {
            return Ok(());
        }
        // One checkpoint at a time: they share the temp file, and an older one
        // renamed after a newer one deleted WAL segments would lose entries.
        if sync_now {
            let deadline = Instant::now() + Duration::from_secs(60);
            while self.checkpoint_busy.load(Ordering::Acquire) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        if self.checkpoint_busy.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let started = Instant::now();
        let snap = checkpoint::Snapshot::take(&mut self.p.state)?;
        let pause_us = started.elapsed().as_micros() as u64;
        self.shared.counters.checkpoint_pause_us.store(pause_us, Ordering::Relaxed);
        self.shared.counters.checkpoint_pause_max_us.fetch_max(pause_us, Ordering::Relaxed);
        tracing::info!(
            index = snap.index,
            planner_us = pause_us,
            visit_us = snap.visit_us,
            partitions_visited = snap.parts,
            "checkpoint snapshot taken"
        );
        self.checkpointed_index = snap.index;
        let shared = self.shared.clone();
        let dir = self.cfg.data_dir.clone();
        let wal = self.log.clone();
        let busy = self.checkpoint_busy.clone();
        let epoch = self.shared.epoch.load(Ordering::Acquire);
        let job = move || -> Result<(), CheckpointError> {
            if !sync_now {
                baton_log::priority::lower_this_thread();
            }
            let _done = ClearOnDrop(busy);
            let deadline = Instant::now() + Duration::from_secs(60);
            while shared.durable_index.load(Ordering::Acquire) < snap.index {
                if shared.epoch.load(Ordering::Acquire) != epoch {
                    // Its state was thrown away by a rebuild (D40): it describes nothing now.
                    return Err(CheckpointError::Retry(
                        "the state was rebuilt before this checkpoint was durable".into(),
                    ));
                }
                if shared.failed.lock().is_some() || Instant::now() > deadline {
                    return Err(CheckpointError::Fatal("the checkpoint's frame never became durable".into()));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            let index = snap.index;
            if snap.write(&dir)? {
                shared.counters.checkpoint_syncfs.fetch_add(1, Ordering::Relaxed);
            }
            crate::failpoint::hit("checkpoint.written");
            wal.truncate_before(index + 1);
            crate::failpoint::hit("checkpoint.log_retired");
            shared.counters.checkpoints.fetch_add(1, Ordering::Relaxed);
            let bytes = std::fs::metadata(dir.join("checkpoint.bin")).map_or(0, |m| m.len());
            shared.counters.checkpoint_bytes.fetch_add(bytes, Ordering::Relaxed);
            Ok(())
        };
        if sync_now {
            job()
        } else {
            let shared = self.shared.clone();
            std::thread::Builder::new()
                .name("baton-checkpoint".into())
                .spawn(move || {
                    if let Err(e) = job() {
                        if shared.epoch.load(Ordering::Acquire) == epoch {
                            checkpoint_failed(&shared, e);
                        }
                    }
                })
                .map(|_| ())
                .map_err(|e| CheckpointError::Retry(format!("start the checkpoint thread: {e}")))
        }
    }
}

/// A checkpoint that can be retried is counted and logged (the WAL still holds everything);
/// any other failure stops the node.
pub(super) fn checkpoint_failed(shared: &Shared, e: CheckpointError) {
    match e {
        CheckpointError::Retry(why) => {
            shared.counters.checkpoint_failures.fetch_add(1, Ordering::Relaxed);
            tracing::error!(error = %why, "checkpoint failed; the next one retries it");
        }
        CheckpointError::Fatal(why) => shared.latch(format!("checkpoint failed: {why}")),
    }
}

/// Clears the checkpoint-in-progress flag however the job ends.
struct ClearOnDrop(Arc<std::sync::atomic::AtomicBool>);

impl Drop for ClearOnDrop {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}
