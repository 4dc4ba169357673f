//! Raft's apply, into the engine: committed frames go to the planner in log order, where
//! they are applied as replay applies them (I1), or skipped when the state already holds
//! them (the leader planned them itself, or the checkpoint covers them). And the engine's
//! state as a Raft snapshot (D43): its last checkpoint, whose files are linked, not copied.
//!
//! Must never drop a committed frame: a frame the engine cannot take is an error to
//! openraft, which stops this member. Never install a snapshot over a state that already
//! holds it, nor snapshot a checkpoint past what Raft applied.

use std::io::{Read, Write};
use std::path::PathBuf;

use baton_core::Engine;
use baton_replicate::machine::{Applier, Snapshotted};
use baton_replicate::Frame;

use crate::snapshot;

pub struct EngineApplier {
    pub engine: Engine,
    /// The engine's data directory (its checkpoint and partition files).
    pub data_dir: PathBuf,
    /// Where each kept snapshot's links live, one directory per index it covers.
    pub links: PathBuf,
}

/// A checkpoint is read again this many times when a newer one retired a file it named
/// between the read and the link.
const LINK_ATTEMPTS: usize = 5;

impl EngineApplier {
    fn links_for(&self, index: u64) -> PathBuf {
        self.links.join(format!("{index:020}"))
    }

    /// Only the links of the snapshots named stay.
    fn keep_links(&self, keep: &[u64]) {
        let keep: Vec<PathBuf> = keep.iter().map(|i| self.links_for(*i)).collect();
        for e in std::fs::read_dir(&self.links).into_iter().flatten().flatten() {
            if !keep.contains(&e.path()) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }

    /// The index the engine's state holds (everything applied to it).
    fn holds(&self) -> Result<u64, String> {
        self.engine.barrier().map_err(|e| e.message)
    }
}

impl Applier for EngineApplier {
    fn apply(&mut self, index: u64, frame: &Frame) -> Result<(), String> {
        self.engine.apply_committed(index, frame.0.clone()).map_err(|e| e.message)
    }

    /// The engine's last checkpoint: it covers only committed entries (a member's checkpoint
    /// waits for its frames to commit), usually fewer than Raft applied. A snapshot that
    /// cannot be made now is not made: the log is compacted at a later checkpoint instead
    /// (a failed build would stop this member's Raft).
    fn snapshot(
        &mut self,
        applied: Option<u64>,
        since: Option<u64>,
        out: &mut dyn Write,
    ) -> Result<Snapshotted, String> {
        self.try_snapshot(applied, since, out).or_else(|e| {
            tracing::warn!(error = %e, "no snapshot of this checkpoint: the Raft log is compacted at a later one");
            Ok(Snapshotted::Unchanged)
        })
    }

    fn restore(&mut self, input: &mut dyn Read) -> Result<(), String> {
        self.try_restore(input)
    }

    fn export(stored: &mut dyn Read, out: &mut dyn Write) -> Result<(), String> {
        snapshot::export(stored, out)
    }
}

impl EngineApplier {
    fn try_snapshot(
        &mut self,
        applied: Option<u64>,
        since: Option<u64>,
        out: &mut dyn Write,
    ) -> Result<Snapshotted, String> {
        let Some(applied) = applied else { return Ok(Snapshotted::Unchanged) };
        for _ in 0..LINK_ATTEMPTS {
            let Some(state) = baton_core::install::state_files(&self.data_dir)? else {
                return Ok(Snapshotted::Unchanged);
            };
            if state.index > applied || since.is_some_and(|s| state.index <= s) {
                return Ok(Snapshotted::Unchanged);
            }
            let links = self.links_for(state.index);
            let mut body = Vec::new();
            if snapshot::write_kept(&self.data_dir, &links, &state, &mut body)? {
                out.write_all(&body).map_err(|e| e.to_string())?;
                self.keep_links(&[Some(state.index), since].into_iter().flatten().collect::<Vec<_>>());
                return Ok(Snapshotted::Upto(Some(state.index)));
            }
        }
        Err(format!("the checkpoint changed under {LINK_ATTEMPTS} attempts to link its files"))
    }

    fn try_restore(&mut self, input: &mut dyn Read) -> Result<(), String> {
        let mut head = Vec::new();
        // The head (magic, a path, the index) is small: read it apart, then go on after it.
        let mut tee = TeeRead { inner: input, seen: &mut head };
        let (index, sent) = snapshot::index_of(&mut tee)?;
        let holds = self.holds()?;
        if holds >= index {
            // The state already holds it (its own checkpoint, or an install finished before
            // a crash): nothing to install.
            if !sent {
                self.keep_links(&[index]);
            }
            return Ok(());
        }
        if !sent {
            return Err(format!("this member's own snapshot covers {index}, past its state's {holds}"));
        }
        let mut whole = std::io::Cursor::new(head).chain(input);
        let staged = snapshot::stage_sent(&mut whole, &self.data_dir)?;
        let installed = self.engine.install()?;
        if installed != staged {
            return Err(format!("the installed state holds {installed}, not the snapshot's {staged}"));
        }
        self.keep_links(&[]);
        tracing::info!(index = installed, "state installed from a snapshot");
        Ok(())
    }
}

/// A reader that keeps a copy of what it read.
struct TeeRead<'a> {
    inner: &'a mut dyn Read,
    seen: &'a mut Vec<u8>,
}

impl Read for TeeRead<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.seen.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}
