//! When a partition's active segment closes (D70): at its size (`segment.bytes` of the
//! topic, else `--partition-segment-mb`) or at its age (`segment.ms`, and on a compacted
//! topic `max.compaction.lag.ms`, whichever is sooner).
//!
//! Must never decide by anything but the entry's own stamp and the state's configs: every
//! member and every replay of the log closes the same segments at the same offsets (I1),
//! so the planner's check before an append and the apply's agree.

use super::*;

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
}
