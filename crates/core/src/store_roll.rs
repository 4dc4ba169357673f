//! When a partition's active segment closes (D70): at its size (`segment.bytes` of the
//! topic, else `--partition-segment-mb`) or at its age (`segment.ms`, and on a compacted
//! topic `max.compaction.lag.ms`, whichever is sooner).
//!
//! Must never decide by anything but the entry's own stamp and the state's configs: every
//! member and every replay of the log closes the same segments at the same offsets (I1),
//! so the planner's check before an append and the apply's agree.
//!
//! Also where a new partition's first segment comes from when a spare partition directory
//! is ready (D81): renamed into place, never made on the planner.

use super::*;
use std::sync::atomic::Ordering;

impl PartitionFiles {
    /// Whether an append stamped `ts` goes to a new segment.
    pub(crate) fn rolls(&self, ts: Micros) -> bool {
        self.segments.last().is_none_or(|s| {
            s.len >= self.segment_bytes || (s.len > 0 && ts.saturating_sub(s.index.first_ts) >= self.roll_age)
        })
    }

    /// Set from the topic's configs when the partition is made or restored and whenever its
    /// configs change; the active segment closes by the new rule from its next append.
    pub fn set_roll(&mut self, bytes: u64, age: Micros) {
        self.segment_bytes = bytes.max(1);
        self.roll_age = age.max(1);
    }

    /// The size a segment closes at: compaction merges closed segments up to it (D69).
    pub fn segment_bytes(&self) -> u64 {
        self.segment_bytes
    }

    /// Whether the partition has no segment yet: its first append makes its directory.
    pub(crate) fn is_new(&self) -> bool {
        self.segments.is_empty()
    }

    /// Renames a spare partition directory (segment 0's three empty files) to this
    /// partition's: one rename on the planner instead of a directory and three inodes made
    /// here. False when none is ready or the rename failed (a directory already there): the
    /// caller makes the files as before.
    pub(crate) fn take_spare_dir(&mut self, provisioner: Option<&Provisioner>) -> bool {
        let Some(p) = provisioner else { return false };
        let Some(spare) = p.take_dir() else {
            self.store.stats.spare_dirs_missed.fetch_add(1, Ordering::Relaxed);
            return false;
        };
        match fs::rename(&spare, &self.dir) {
            Ok(()) => {
                self.store.stats.spare_dirs_taken.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(e) => {
                tracing::debug!(dir = %self.dir.display(), error = %e, "a spare partition directory could not be renamed into place");
                p.discard_dir(spare);
                self.store.stats.spare_dirs_missed.fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }
}
