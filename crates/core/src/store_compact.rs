//! A partition's side of compaction (D50): which of its segments a pass may read and
//! rewrite, and the swap of a rewritten one into its place.
//!
//! Must never offer the active segment, a segment whose bytes or index records are not
//! all in its files, or one reaching past `upto` (the durable last stable offset); a swap
//! must never apply to a segment that changed since the pass read it (retired, or
//! rewritten by another pass), and never deletes a file: the old generation goes to the
//! graveyard, deleted once a checkpoint names the new one.

use super::*;
use crate::compact::{Cleanable, JobSeg, Rewritten};

impl PartitionFiles {
    /// The closed segments a compaction pass may read, oldest first, and how dirty they
    /// are; `None` when there are none past what the last pass covered.
    pub fn compaction_segments(&self, upto: u64, settled_before: Micros) -> Option<Cleanable> {
        let mut c = Cleanable { segs: Vec::new(), through: 0, clean: 0, dirty: 0, dirty_since: Micros::MAX };
        for w in self.segments.windows(2) {
            let (s, next) = (&w[0], &w[1]);
            let in_files = s.index.idx_flushed == s.index.batches && s.index.txid_flushed == s.index.msgs;
            // A segment with a record written at or after `settled_before` is too young
            // (`min.compaction.lag.ms`, D68), and so is every one after it.
            if next.base > upto || s.pinned.is_some() || !in_files || s.index.last_ts >= settled_before {
                break;
            }
            if s.base >= self.compacted_through {
                c.dirty += s.len;
                c.dirty_since = c.dirty_since.min(s.index.first_ts);
            } else {
                c.clean += s.len;
            }
            c.segs.push(JobSeg { base: s.base, gen: s.gen, len: s.len, batches: s.index.batches, msgs: s.index.msgs });
            c.through = next.base;
        }
        (c.through > self.compacted_through).then_some(c)
    }

    /// This partition's id and directory, for a compaction job.
    pub fn job_target(&self) -> (u32, PathBuf) {
        (self.part, self.dir.to_path_buf())
    }

    /// Put a rewritten segment in place of the one or more (consecutive) segments the pass
    /// read; their old files, to delete once a checkpoint no longer names them. `None` when
    /// any of them is gone, changed, pinned or no longer closed.
    pub fn swap(&mut self, r: &Rewritten) -> Option<Vec<PathBuf>> {
        let last = self.segments.len().checked_sub(1)?;
        let (base0, gen0, _) = *r.olds.first()?;
        let i = self.segments[..last].iter().position(|s| s.base == base0 && s.gen == gen0)?;
        let olds = self.segments.get(i..i + r.olds.len()).filter(|_| i + r.olds.len() <= last)?;
        let same = olds.iter().zip(&r.olds).all(|(s, (base, gen, batches))| {
            s.base == *base && s.gen == *gen && s.index.batches == *batches && s.pinned.is_none()
        });
        if !same || r.base != base0 {
            return None;
        }
        let batches = olds.iter().map(|s| s.index.batches).sum();
        let msgs = olds.iter().map(|s| s.index.msgs).sum();
        let (first_ts, last_ts) = (olds[0].index.first_ts, olds[olds.len() - 1].index.last_ts);
        let mut old = Vec::with_capacity(3 * olds.len());
        for s in olds {
            old.extend(Kind::ALL.map(|k| file_path(&self.dir, s.base, s.gen, k)));
            self.store.forget(self.part, s.base, s.gen);
        }
        let merged = Segment {
            base: base0,
            gen: r.new_gen,
            len: r.len,
            index: SegIndex::restored(batches, msgs, first_ts, last_ts),
            dirty: true,
            pinned: None,
        };
        self.segments.splice(i..i + r.olds.len(), [merged]);
        self.dir_dirty = true;
        self.note_checkpoint();
        Some(old)
    }
}
